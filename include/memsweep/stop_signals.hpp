#pragma once
// SIGTERM, SIGUSR1 (Slurm's warning before a time limit: `--signal`) and
// SIGINT ask a sweep to stop: no new trials, running ones end at their next
// step as `interrupted`, the results file is closed, and `memsweep run` exits
// with exit_status::kStopped so that a job script requeues it. A second
// SIGINT ends the process at once (the default action).

#include <atomic>

namespace memsweep {

// Installs the handlers (once; later calls return the same flag). The flag
// is set, never cleared, by the first of these signals.
const std::atomic<bool>& install_stop_signals();

// The signal that set the flag, or 0.
int stop_signal_number();

}  // namespace memsweep
