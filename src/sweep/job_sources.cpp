#include "sweep/job_sources.hpp"

#include "search/board.hpp"
#include "sweep/trial_cursor.hpp"

#include <string>

namespace memsweep::sweep::detail {

std::unique_ptr<JobSource> make_job_source(const SweepTrials& trials, const PendingTrials& pending,
                                           const SweepOptions& options, int workers) {
  if (options.search != nullptr)
    return std::make_unique<search::SearchBoard>(trials, *options.search, options.search_history, options.run, workers);
  return std::make_unique<TrialCursor>(trials, pending);
}

void report_skipped(JobSource& source, ProgressReporter* progress) {
  const JobSource::Skipped skipped = source.take_skipped();
  if (progress == nullptr || skipped.count == 0) return;
  for (const std::string& note : skipped.notes) progress->note(note);
  progress->trials_skipped(skipped.count);
}

void report_ended_search(ProgressReporter& progress, const SearchRow& row, const SweepOptions& options) {
  progress.note(search::search_note(row));
  if (options.search != nullptr && row.trials < options.search->max_trials)
    progress.trials_skipped(static_cast<std::size_t>(options.search->max_trials - row.trials));
}

}  // namespace memsweep::sweep::detail
