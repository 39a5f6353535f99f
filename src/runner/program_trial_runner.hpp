#pragma once
// A trial that is a user's program (docs/runner.md, "Programs"): its
// command line and environment prepared, its process forked to wait at a
// start gate, the sampler's counters opened on it, the gate opened, then
// the watch of its whole process tree until it exits, and whatever of the
// tree is left killed.

#include "memsweep/config.hpp"
#include "memsweep/sweep.hpp"
#include "runner/trial_attempt.hpp"

namespace memsweep::runner::detail {

// Runs `attempt` to its end: its row's status is set on return. Only the
// sink's exceptions pass through, after the program's tree was killed.
void run_program_trial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                       TrialSink& sink);

}  // namespace memsweep::runner::detail
