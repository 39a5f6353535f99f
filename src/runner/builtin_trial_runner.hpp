#pragma once
// A trial memsweep trains itself: its shared dataset and prediction, its
// process (`memsweep trial`, given the job over a pipe), the baseline once
// the process is ready, the budget check against it, then the go-ahead and
// the watch (docs/runner.md, "A trial's steps").

#include "memsweep/config.hpp"
#include "memsweep/sweep.hpp"
#include "runner/trial_attempt.hpp"

namespace memsweep::runner::detail {

// Runs `attempt` to its end: its row's status is set on return. Only the
// sink's exceptions pass through, after the trial process was ended.
void run_builtin_trial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                       TrialSink& sink);

}  // namespace memsweep::runner::detail
