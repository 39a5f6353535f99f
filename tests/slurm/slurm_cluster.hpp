#pragma once
// A real Slurm cluster of this one host, for the job-script tests: munged,
// slurmctld and slurmd from Debian, started on loopback with a configuration
// written into a private folder (ports, state, spool, logs, munge key and
// socket), and stopped again, exactly the processes it started, whatever the
// test did.

#include "support/background_process.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace memsweep::testing {

class SlurmCluster {
 public:
  // Starts the daemons and waits until sinfo shows the node idle; throws
  // std::runtime_error (with the daemons' logs) when it does not get there.
  SlurmCluster();
  ~SlurmCluster();  // stop()
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Cancels every job, stops the daemons, then ends any process still
  // carrying this cluster's marker in its environment (jobs, slurmstepd).
  // Idempotent.
  void stop();

  // What a command needs to talk to this cluster (SLURM_CONF) and the marker
  // every job inherits, so that stop() finds what the jobs started.
  std::map<std::string, std::string> environment() const;

  // Runs a program (looked up on PATH) against this cluster.
  CommandResult run(const std::vector<std::string>& argv, const std::filesystem::path& working_dir = {},
                    const std::map<std::string, std::string>& extra_environment = {}) const;

  // `scontrol show job ID` as fields (JobState, ExitCode, Restarts, ...); for
  // an array job, its tasks by array task id. Empty when Slurm does not know it.
  std::map<std::string, std::string> job(const std::string& id) const;
  std::vector<std::map<std::string, std::string>> jobs(const std::string& id) const;

  // Waits until every job of `id` (all tasks of an array) has ended; returns
  // false on timeout.
  bool wait_for_jobs(const std::string& id, std::chrono::seconds timeout) const;

  int cpus() const { return cpus_; }
  const std::filesystem::path& folder() const { return dir_.path(); }
  // The last lines of the daemons' logs, for failure messages.
  std::string logs() const;

 private:
  void write_configuration();
  void start_daemons();
  bool node_idle() const;

  TempDir dir_;
  int cpus_ = 1;
  std::filesystem::path conf_;
  std::unique_ptr<BackgroundProcess> munged_;
  std::unique_ptr<BackgroundProcess> slurmctld_;
  std::unique_ptr<BackgroundProcess> slurmd_;
  bool stopped_ = false;
};

// The full path of a program on PATH; throws when it is not there.
std::string program_path(const std::string& name);

// Whether a Slurm job state is final (COMPLETED, FAILED, TIMEOUT, ...).
bool job_state_final(const std::string& state);

// "Key=Value Key=Value ..." (scontrol --oneliner) into fields; values hold
// no spaces except the few (Command=, WorkDir=, Reason=) the tests do not read.
std::map<std::string, std::string> scontrol_fields(const std::string& line);

// How a cluster runs a Slurm command: its run(), on its login node.
using SlurmCommand = std::function<CommandResult(const std::vector<std::string>&)>;

// `scontrol show job ID` through `run`, one map of fields per job (an array
// job's tasks); empty when Slurm does not know it.
std::vector<std::map<std::string, std::string>> scontrol_jobs(const SlurmCommand& run, const std::string& id);

// Polls scontrol_jobs until every job of `id` has ended; false on timeout.
bool wait_until_jobs_end(const SlurmCommand& run, const std::string& id, std::chrono::seconds timeout);

}  // namespace memsweep::testing
