#pragma once
// A program started in the background, its output going to files, so that a
// test can watch it, signal it (or one of its children) and wait for it.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace memsweep::testing {

class BackgroundProcess {
 public:
  // `environment` entries are added to (or replace) the test's own. A
  // non-zero `parent_death_signal` is sent to the program if the test process
  // dies first (a daemon must not outlive a test killed by its timeout).
  BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& output_dir,
                    const std::map<std::string, std::string>& environment = {},
                    const std::filesystem::path& working_dir = {}, int parent_death_signal = 0);
  ~BackgroundProcess();  // kills it (SIGKILL) if it still runs
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string out() const;
  std::string err() const;
  // Polls `condition` until it holds or `timeout` passes; returns whether it held.
  bool wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) const;
  void signal(int number) const;
  // The exit status, or 128 + the signal that ended it (also after
  // wait_until_ended() reaped it).
  int wait();
  // Reaps it if it ends within `timeout`; returns whether it did.
  bool wait_until_ended(std::chrono::milliseconds timeout);
  bool ended_by_signal() const { return ended_by_signal_; }

 private:
  void reaped(int status);

  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_status_ = -1;
  bool ended_by_signal_ = false;
  std::filesystem::path out_file_;
  std::filesystem::path err_file_;
};

// Processes whose parent is `parent` and whose environment has NAME=VALUE
// (e.g. Open MPI's OMPI_COMM_WORLD_RANK=1), found through /proc.
std::vector<pid_t> child_processes_with_environment(pid_t parent, const std::string& name, const std::string& value);

// Every process whose environment has NAME=VALUE, whatever its parent.
std::vector<pid_t> processes_with_environment(const std::string& name, const std::string& value);

// The parent of `pid`, from /proc/PID/stat; 0 when it is gone.
pid_t parent_of(pid_t pid);

// Trial processes (`memsweep trial ID`) below `ancestor`, at any depth, with
// their trial ids.
std::map<pid_t, std::string> trial_processes_below(pid_t ancestor);

}  // namespace memsweep::testing
