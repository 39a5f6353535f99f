#pragma once
// A rank whose launcher is gone ends too. mpirun, its orted or srun's
// slurmstepd started the rank; when it dies (Slurm ended the job, the node's
// launcher was killed), nobody will collect the rank, and a rank 0 that
// lived on would hold the results file's writer lock against the job's next
// start: seen under Slurm's proctrack/linuxproc, which lost track of the
// ranks mpirun left behind (issue 42). The watch notices the rank being
// reparented and ends the process at once, as the launcher's own kill would
// have: the file is left as a killed writer leaves it, which a resume reads.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace memsweep {

class LauncherWatch {
 public:
  // Watches the current parent every `interval`; `rank` names the process
  // in the one line it prints before it ends.
  explicit LauncherWatch(int rank, std::chrono::milliseconds interval = std::chrono::milliseconds(500));
  ~LauncherWatch();
  LauncherWatch(const LauncherWatch&) = delete;
  LauncherWatch& operator=(const LauncherWatch&) = delete;

 private:
  void watch(int rank, std::chrono::milliseconds interval);

  const pid_t launcher_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace memsweep
