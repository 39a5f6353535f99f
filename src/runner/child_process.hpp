#pragma once
// Starting a trial process: fork, then exec (never a bare fork: the rank's
// MPI library, OpenMP threads and allocator stay in the rank), with the
// pipes and the dataset at fixed descriptors, dying with its rank, deaf to
// the signals the rank handles.
// Between fork and exec the child only makes async-signal-safe calls: the
// rank has other threads, whose locks the child would inherit held.

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memsweep::runner::detail {

struct SpawnRequest {
  std::string executable;         // e.g. /proc/self/exe
  std::vector<std::string> argv;  // argv[0] included
  // Descriptors of the rank's that become the child's kControlFd,
  // kReportFd and kDatasetFd (trial_protocol.hpp); -1: none. Every other
  // descriptor is closed in the child; stdin reads /dev/null, stdout and
  // stderr are the rank's.
  int control_fd = -1;
  int report_fd = -1;
  int dataset_fd = -1;

  // A user's program (docs/runner.md, "Programs") needs more: its own
  // environment ("NAME=value", whole; empty: the rank's), working folder,
  // output files, and a process group of its own, so that the whole tree
  // can be ended at once and a terminal's Ctrl-C (meant for the rank) does
  // not reach it. Its default signal dispositions are kept (SIGTERM is how
  // the rank asks it to stop), except SIGUSR1 and SIGHUP, meant for the rank.
  bool program = false;
  std::vector<std::string> environment;
  std::string workdir;
  int stdout_fd = -1;  // -1: the rank's
  int stderr_fd = -1;
  // When set, the child waits before its exec until a byte (or the end)
  // arrives here: the rank opens the counters on it first, so that they
  // count the program from its first instruction. spawn() then returns
  // before the exec; confirm_exec() reports how the exec went.
  int start_gate_fd = -1;
};

// How a process ended, from its wait status.
struct ProcessEnd {
  bool exited = false;  // exit() or a return from main
  int exit_status = 0;  // when exited
  int signal = 0;       // when killed by a signal
  // wait4's ru_maxrss: the largest peak RSS of the process and of the
  // descendants it waited for; -1: not known.
  std::int64_t max_rss_bytes = -1;
};
ProcessEnd process_end_from_wait_status(int wait_status);

class ChildProcess {
 public:
  // Throws std::system_error when the fork fails, or when the child could
  // not exec (its errno comes back through a pipe; with a start gate, from
  // confirm_exec()).
  static ChildProcess spawn(const SpawnRequest& request);
  // Waits until the child has exec'd (after its start gate opened). Throws
  // std::system_error, naming the step and the executable, when it could not.
  void confirm_exec();

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&&) = delete;
  ChildProcess(const ChildProcess&) = delete;
  // A child not reaped yet is killed (SIGKILL) and reaped: no trial process
  // outlives the runner that started it.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool reaped() const { return end_.has_value(); }
  // kill(2), unless the child was reaped already (its pid may be reused).
  bool send_signal(int signal_number) noexcept;
  // Whether it has ended, without waiting.
  std::optional<ProcessEnd> try_reap();
  // Waits for it to end.
  ProcessEnd reap();
  // Waits for it to end by itself for `grace`, then kills it (SIGKILL): a
  // process told to exit that does not is not waited for forever.
  ProcessEnd reap(std::chrono::milliseconds grace);

 private:
  ChildProcess(pid_t pid, UniqueFd exec_errors, std::string executable)
      : pid_(pid), exec_errors_(std::move(exec_errors)), executable_(std::move(executable)) {}
  pid_t pid_ = -1;
  UniqueFd exec_errors_;  // the close-on-exec pipe that reports a failed exec
  std::string executable_;
  std::optional<ProcessEnd> end_;
};

}  // namespace memsweep::runner::detail
