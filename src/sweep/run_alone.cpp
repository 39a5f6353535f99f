// A sweep on one rank: it runs the pending trials in turn and writes what
// they stream and their rows itself, on this thread (the sink needs no
// locking: the trial's rows reach it through run_streamed_trial's queue).

#include "sweep/job_sources.hpp"
#include "sweep/roles.hpp"
#include "sweep/streamed_trial.hpp"

#include <stdexcept>
#include <string>

namespace memsweep::sweep::detail {

SweepResult run_alone(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending, TrialRunner& runner,
                      ResultSink& sink, const SweepOptions& options) {
  SweepResult result;
  const std::string host = comm.host_name();
  bool stop_seen = false;
  const auto see_stop = [&] {
    if (stop_seen || !stop_requested(options)) return;
    stop_seen = true;
    // The mark only helps a later resume; a write that fails here fails
    // again, and is reported, with the trial's row.
    try {
      sink.stopping();
    } catch (const std::exception&) {
    }
  };
  const StreamHooks hooks{
      .deliver =
          [&](StreamedRows& rows) {
            if (!rows.samples.empty()) sink.samples(rows.samples);
            for (const EpochRow& epoch : rows.epochs) sink.epoch(epoch);
            for (const MetricRow& metric : rows.metrics) sink.metric(metric);
          },
      .should_stop =
          [&] {
            see_stop();
            return stop_seen;
          },
      .alive = {},   // alone: nobody waits to hear from this rank
      .chunks = {},  // and the rank writes its rows itself: nothing to compress for another
  };

  const std::unique_ptr<JobSource> source = make_job_source(trials, pending, options, 1);
  const auto write_ended_searches = [&] {
    for (const SearchRow& row : source->take_ended()) {
      sink.search(row);
      if (options.progress != nullptr) report_ended_search(*options.progress, row, options);
    }
  };
  write_ended_searches();  // a resume's searches that its file's rows already end

  TrialThread trial_thread;
  for (;;) {
    see_stop();
    if (stop_seen) break;
    const std::optional<Job> job = source->next();
    report_skipped(*source, options.progress);
    if (!job) break;
    const std::int32_t attempt = job->attempt.attempt;
    if (options.progress != nullptr) options.progress->trial_started(job->trial, attempt, comm.rank());
    const TrialRecord record = run_streamed_trial(
        trial_thread, runner, job->trial, trial_context(comm, host, attempt, options), options.flush_interval, hooks);
    sink.trial(record.row, record.message);
    count_row(result, record.row);
    if (options.progress != nullptr) options.progress->trial_finished(record.row);
    source->finished(record.row);
    write_ended_searches();
  }
  result.not_started = source->left();
  result.stopped = stop_seen;
  return result;
}

}  // namespace memsweep::sweep::detail
