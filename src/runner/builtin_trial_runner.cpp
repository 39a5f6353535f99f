#include "runner/builtin_trial_runner.hpp"

#include "common/unique_fd.hpp"
#include "memsweep/dataset_spec.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/trial_process_cost.hpp"
#include "runner/budget.hpp"
#include "runner/trial_messages.hpp"
#include "runner/trial_protocol.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <new>
#include <optional>
#include <utility>

namespace memsweep::runner::detail {
namespace {

// The next frame from the process, or nullopt when it ends or `deadline`
// passes first (at_end() tells which).
std::optional<Frame> wait_for_frame(FrameReader& reports, Clock::time_point deadline) {
  for (;;) {
    if (std::optional<Frame> frame = reports.next()) return frame;
    if (reports.at_end()) return std::nullopt;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return std::nullopt;
    pollfd fd{reports.fd(), POLLIN, 0};
    ::poll(&fd, 1, static_cast<int>(std::min<long long>(left, 1000)));
  }
}

// The row's memory columns from the trial process's region.
void record_trial_measures(TrialRow& row, const RegionSummary& region, const WatchReport& seen,
                           const RegionBaseline& baseline) {
  row.rss_peak = std::max(region.peak_rss_bytes, seen.last_peak);
  // One process, memsweep's own: its peak is the tree's and the largest's.
  row.processes = 1;
  row.process_peak_max = row.rss_peak;
  row.rss_peak_hwm_sum = row.rss_peak;
  if (row.rss_peak >= 0 && baseline.rss_bytes >= 0) row.rss_footprint = row.rss_peak - baseline.rss_bytes;
  record_sampled_means(row, region);
  if (seen.outcome.result) {
    row.epochs_done = seen.outcome.result->epochs_done;
    row.final_train_loss = seen.outcome.result->final_train_loss;
    row.test_accuracy = seen.outcome.result->test_accuracy;
  }
}

// One attempt of a built-in trial, step by step; each step that can end
// the attempt says whether it goes on.
class BuiltinTrial {
 public:
  BuiltinTrial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial)
      : runner_(runner),
        attempt_(attempt),
        trial_(trial),
        control_(make_pipe("a trial process's job")),
        reports_(make_pipe("a trial process's reports")) {}

  void run(const TrialContext& context, TrialSink& sink) {
    if (!open_dataset()) return;
    if (!spawn_trial_process()) return;
    if (!hand_over_job()) return;
    take_baseline();
    if (!fits_budget_before_start()) return;
    // Now that the ready process is known to fit.
    limit_cgroup_to_budget(attempt_);
    train(context, sink);
  }

 private:
  bool open_dataset();
  void predict();
  bool spawn_trial_process();
  bool hand_over_job();
  void take_baseline();
  bool fits_budget_before_start();
  void train(const TrialContext& context, TrialSink& sink);
  void tell(FrameType type) { write_frame(control_.write_end.get(), empty_frame(type)); }

  RunnerState& runner_;
  Attempt& attempt_;
  const TrialSpec& trial_;
  const SharedDataset* data_ = nullptr;
  std::optional<std::uint64_t> predicted_;
  Pipe control_;  // the job, the go-ahead and `exit`, to the process
  Pipe reports_;  // ready, phases and the result, from it
  std::optional<FrameReader> report_reader_;
  std::unique_ptr<MemoryProbe> probe_;  // the process's /proc files, on the runner's thread
};

// The shared dataset (decoded once per node, mapped by the process) and
// the prediction for it.
bool BuiltinTrial::open_dataset() {
  const Clock::time_point open_start = Clock::now();
  const std::size_t opens_before = runner_.datasets.opens();
  try {
    data_ = &runner_.datasets.get(trial_.dataset);
  } catch (const std::bad_alloc&) {
    finish(attempt_, TrialStatus::failed,
           out_of_memory_message(fmt::format("decoding {}", dataset_name(trial_.dataset.kind))));
    return false;
  } catch (const std::exception& error) {
    finish(attempt_, TrialStatus::failed, one_line(error.what()));
    return false;
  }
  if (runner_.datasets.opens() != opens_before)
    runner_.timings.dataset_seconds = seconds_between(open_start, Clock::now());
  predict();
  return true;
}

// The estimate is a prediction, not a precondition: when it cannot be made
// the trial still runs (the trainer reports what is wrong with it), only
// without a prediction and without the check before the start, and its
// message says why. The row records the prediction's parts and the model's
// parameter count (schema 10): the analysis reads them instead of working
// them out again.
void BuiltinTrial::predict() {
  const ExampleCounts counts{data_->train_examples(), data_->test_examples()};
  TrialRow& row = attempt_.row;
  // What each epoch trains on, as the dataset was loaded (limits applied).
  row.train_examples = static_cast<std::int64_t>(counts.train);
  try {
    const MemoryEstimate& buffers = runner_.estimates.estimate(trial_, counts);
    for (const EstimatePart& part : buffers.parts) record_estimate_part(row, part.name, part.bytes);
    std::uint64_t bytes = buffers.total();
    if (runner_.options.trial_process_cost) {
      const EstimatePart process = trial_process_part(*runner_.options.trial_process_cost, trial_, counts);
      record_estimate_part(row, process.name, process.bytes);
      bytes += process.bytes;
    }
    const EstimatePart dataset = resident_dataset_part(trial_.dataset, counts);
    record_estimate_part(row, dataset.name, dataset.bytes);
    row.parameters = static_cast<std::int64_t>(parameter_count(model_spec(trial_)));
    predicted_ = bytes;
    row.predicted_bytes = static_cast<std::int64_t>(bytes);
  } catch (const std::exception& error) {
    attempt_.note(fmt::format("no prediction ({})", one_line(error.what())));
  }
}

// `memsweep trial ID`, with its control and report pipes and the dataset.
bool BuiltinTrial::spawn_trial_process() {
  SpawnRequest request;
  request.executable = runner_.options.trial_executable;
  request.argv = {"memsweep", "trial", trial_.id};
  request.control_fd = control_.read_end.get();
  request.report_fd = reports_.write_end.get();
  request.dataset_fd = data_->fd();
  if (!spawn(runner_, attempt_, request, reports_.read_end.get())) return false;
  control_.read_end.reset();
  reports_.write_end.reset();  // the process holds the only write end: its end closes the pipe
  report_reader_.emplace(reports_.read_end.get());
  return true;
}

// The job to the process, and its first report: ready, or why not.
bool BuiltinTrial::hand_over_job() {
  FrameReader& reports = *report_reader_;
  TrialJob job;
  job.trial = trial_;
  job.threads = trial_threads(runner_.options);
  job.predicted_bytes = predicted_ ? static_cast<std::int64_t>(*predicted_) : -1;
  if (!write_frame(control_.write_end.get(), encode(job))) {
    record_end(runner_, attempt_, {}, "the trial process ended before its job");
    return false;
  }
  const std::optional<Frame> first = wait_for_frame(reports, attempt_.spawned + runner_.options.start_timeout);
  if (!first && !reports.at_end()) {
    attempt_.process->send_signal(SIGKILL);
    record_end(runner_, attempt_, {},
               fmt::format("the trial process was not ready within {} s",
                           std::chrono::duration<double>(runner_.options.start_timeout).count()));
    return false;
  }
  if (!first) {
    record_end(runner_, attempt_, {}, "the trial process ended before it was ready");
    return false;
  }
  if (first->type == FrameType::failure) {
    ProcessOutcome outcome;
    outcome.failure = decode_failure(*first);
    tell(FrameType::exit);
    record_end(runner_, attempt_, std::move(outcome));
    return false;
  }
  decode_ready(*first);  // checks that it is a whole ready report
  record_started(runner_, attempt_);
  return true;
}

// The baseline: the ready process, data mapped, nothing of the trial built.
// Without it the row has no footprint and the budget is not checked before
// the start.
void BuiltinTrial::take_baseline() {
  probe_ = make_proc_memory_probe(attempt_.process->pid());
  ProcessMemory memory;
  if (probe_->read_process(memory))
    attempt_.baseline.rss_bytes = memory.rss_bytes;
  else
    attempt_.note(fmt::format("no baseline (/proc/{} could not be read when it was ready)", attempt_.process->pid()));
  attempt_.row.rss_baseline = attempt_.baseline.rss_bytes;
}

// A trial whose prediction over its baseline passes its budget is not
// started: the process is told to exit, and the row says why.
// A search's probe always runs: its answer is what trained, never what
// the estimate says would not have (docs/search.md).
bool BuiltinTrial::fits_budget_before_start() {
  if (!attempt_.budget || !predicted_ || attempt_.baseline.rss_bytes < 0) return true;
  if (attempt_.row.search >= 0) return true;
  const std::optional<std::string> message =
      over_budget_before_start(*predicted_, static_cast<std::uint64_t>(attempt_.baseline.rss_bytes), *attempt_.budget);
  if (!message) return true;
  tell(FrameType::exit);
  attempt_.process->reap(kExitGrace);
  set_fixed(attempt_.row.end_cause, end_cause::kExited);
  runner_.timings.setup_seconds = seconds_between(attempt_.entry, Clock::now()) - runner_.timings.dataset_seconds;
  finish(attempt_, TrialStatus::over_budget, *message);
  return false;
}

// The measured region: the sampler on the process (its counters open now,
// while it has one thread and waits), the go-ahead, the watch, and the
// peak read while the process still exists (it waits for `exit` after its
// result); a process that ended leaves its last reading.
void BuiltinTrial::train(const TrialContext& context, TrialSink& sink) {
  ChildProcess& process = *attempt_.process;
  begin_region(runner_, attempt_, sample_phase::kSetup, make_proc_memory_probe(process.pid()));
  TrialWatch watch(watch_settings(runner_, attempt_, trial_, context), process, *report_reader_, *runner_.sampler,
                   *probe_, sink);
  tell(FrameType::go);
  WatchReport seen = watch_until_end(runner_, attempt_, watch);
  const Clock::time_point training_end = Clock::now();
  const RegionSummary region = runner_.sampler->end_region();
  tell(FrameType::exit);
  control_.write_end.reset();
  watch.forward_chunks();

  record_trial_measures(attempt_.row, region, seen, attempt_.baseline);
  record_end(runner_, attempt_, std::move(seen.outcome));
  runner_.timings.teardown_seconds = seconds_between(training_end, Clock::now());
}

}  // namespace

void run_builtin_trial(RunnerState& runner, Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                       TrialSink& sink) {
  BuiltinTrial(runner, attempt, trial).run(context, sink);
}

}  // namespace memsweep::runner::detail
