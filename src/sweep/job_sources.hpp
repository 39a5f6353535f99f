#pragma once
// The sweep's source of attempts (memsweep/job_source.hpp), chosen once,
// and what its skipped trials and ended searches put on the progress lines.

#include "memsweep/job_source.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep.hpp"

#include <memory>

namespace memsweep::sweep::detail {

// A SearchBoard for a [search] (options.search), else a TrialCursor.
// `workers`: the ranks that train.
std::unique_ptr<JobSource> make_job_source(const SweepTrials& trials, const PendingTrials& pending,
                                           const SweepOptions& options, int workers);

// The source's skipped trials onto the progress lines (when there are any).
void report_skipped(JobSource& source, ProgressReporter* progress);

// The note on the progress lines, and the trials the search did not use
// taken off the count (which starts at searches × max_trials).
void report_ended_search(ProgressReporter& progress, const SearchRow& row, const SweepOptions& options);

}  // namespace memsweep::sweep::detail
