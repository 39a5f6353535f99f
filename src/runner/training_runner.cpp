// A trial, in order (docs/runner.md): its dataset (kept from the previous
// trial when the same), its prediction, the budget check, then the measured
// region: the sampler's baseline, training with the monitor beside it, the
// region's figures, the last samples forwarded.

#include "memsweep/training_runner.hpp"

#include "memsweep/byte_size.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/trainer.hpp"
#include "runner/budget.hpp"
#include "runner/dataset_cache.hpp"
#include "runner/trial_messages.hpp"
#include "runner/trial_monitor.hpp"

#include <fmt/format.h>

#include <new>
#include <optional>
#include <stdexcept>
#include <utility>

namespace memsweep {
namespace {

using Clock = std::chrono::steady_clock;
using runner_detail::one_line;
using runner_detail::out_of_memory_message;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

SamplerOptions sampler_options(const TrainingRunnerOptions& options) {
  using std::chrono::milliseconds;
  if (options.sampler_interval < milliseconds(kMinSamplerIntervalMs) ||
      options.sampler_interval > milliseconds(kMaxSamplerIntervalMs))
    throw std::invalid_argument(fmt::format("the sampler interval must be {} ms to {} ms, not {} ms",
                                            kMinSamplerIntervalMs, kMaxSamplerIntervalMs,
                                            options.sampler_interval.count()));
  if (options.max_chunk_age.count() <= 0) throw std::invalid_argument("the chunk age must be positive");
  if (options.budget_check_interval.count() <= 0)
    throw std::invalid_argument("the budget check interval must be positive");
  SamplerOptions sampler;
  sampler.interval = options.sampler_interval;
  sampler.max_chunk_age = options.max_chunk_age;
  return sampler;
}

// Stops the sampler on every way out of a trial, so that the next trial
// finds it stopped (end_region() stops it on the normal way).
class SamplerStopper {
 public:
  explicit SamplerStopper(Sampler& sampler) : sampler_(sampler) {}
  ~SamplerStopper() { sampler_.stop(); }
  SamplerStopper(const SamplerStopper&) = delete;
  SamplerStopper& operator=(const SamplerStopper&) = delete;

 private:
  Sampler& sampler_;
};

// Why training ended without a result.
struct TrainingFailure {
  std::string message;
};

}  // namespace

struct TrainingRunner::Impl {
  explicit Impl(const TrainingRunnerOptions& runner_options);

  TrialRow run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink);
  TrialRow& finish(TrialRow& row, TrialStatus status, std::string_view message, Clock::time_point entry) const;
  std::optional<std::uint64_t> predicted_bytes(const TrialSpec& trial, const Dataset& data);

  TrainingRunnerOptions options;
  std::vector<EventStatus> events;
  // One sampler for every trial: its chunk pool (megabytes, touched when
  // built) and the counters are set up once, before any trial's baseline,
  // instead of inside each trial's figures and time.
  std::unique_ptr<Sampler> sampler;
  std::vector<int> counter_sources;  // the file's counter columns, from the sampler's slots
  // Probes of their own: the monitor's thread and the training thread
  // (epoch rows) read at the same time, and a probe's reads share a buffer.
  std::unique_ptr<MemoryProbe> monitor_probe = make_proc_memory_probe();
  std::unique_ptr<MemoryProbe> epoch_probe = make_proc_memory_probe();
  runner_detail::DatasetCache datasets;
  EstimateCache estimates;
  RunnerTimings timings;
};

TrainingRunner::Impl::Impl(const TrainingRunnerOptions& runner_options)
    : options(runner_options),
      datasets(runner_options.data_dirs, runner_options.max_train_examples, runner_options.max_test_examples) {
  const SamplerOptions sampling = sampler_options(options);
  std::unique_ptr<CounterSource> counters;
  if (!options.counter_columns.empty()) {
    CounterSetup setup = open_counters(options.counter_columns);
    events = std::move(setup.events);
    counters = std::move(setup.source);
  }
  sampler = std::make_unique<Sampler>(sampling, make_proc_memory_probe(), std::move(counters));
  counter_sources = memsweep::counter_sources(sampler->counter_names(), options.counter_columns);
}

TrialRow& TrainingRunner::Impl::finish(TrialRow& row, TrialStatus status, std::string_view message,
                                       Clock::time_point entry) const {
  set_fixed(row.status, status_name(status));
  set_fixed(row.message, message);
  row.end_time = unix_seconds_now();
  row.wall_seconds = seconds_between(entry, Clock::now());
  return row;
}

// The estimate is a prediction, not a precondition: when it cannot be made
// the trial still runs (the trainer reports what is wrong with it), only
// without a prediction and without the check before the start.
std::optional<std::uint64_t> TrainingRunner::Impl::predicted_bytes(const TrialSpec& trial, const Dataset& data) {
  try {
    return estimates.estimate(trial, example_counts(data)).total();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

TrialRow TrainingRunner::Impl::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  const Clock::time_point entry = Clock::now();
  timings = {};
  TrialRow row = trial_row_for(trial, context.attempt);
  row.run = context.run;
  row.rank = context.rank;
  set_fixed(row.host, context.host);
  row.start_time = unix_seconds_now();
  // OpenMP's thread count belongs to the calling thread, which need not be
  // the one that constructed the runner.
  set_thread_count(options.threads > 0 ? options.threads : default_thread_count());

  // The dataset, before the baseline: it is the rank's memory.
  const Dataset* data = nullptr;
  {
    const Clock::time_point load_start = Clock::now();
    const std::size_t loads_before = datasets.loads();
    try {
      data = &datasets.get(trial.dataset);
    } catch (const std::bad_alloc&) {
      return finish(row, TrialStatus::failed,
                    out_of_memory_message(fmt::format("loading {}", dataset_name(trial.dataset.kind))), entry);
    } catch (const std::exception& error) {
      return finish(row, TrialStatus::failed, one_line(error.what()), entry);
    } catch (...) {
      return finish(row, TrialStatus::failed, "loading the dataset threw an unknown exception", entry);
    }
    if (datasets.loads() != loads_before) timings.dataset_seconds = seconds_between(load_start, Clock::now());
  }

  // The prediction, and the budget before the start.
  const std::optional<std::uint64_t> predicted = predicted_bytes(trial, *data);
  if (predicted) row.predicted_bytes = static_cast<std::int64_t>(*predicted);
  const std::optional<std::uint64_t> budget =
      runner_detail::effective_budget(context.mem_budget_bytes, trial.mem_budget_bytes);
  if (budget && predicted) {
    // The baseline as begin_region() will see it: after the previous
    // trial's free memory went back to the OS.
    monitor_probe->release_free_memory();
    ProcessMemory memory;
    if (monitor_probe->read_process(memory) && memory.rss_bytes >= 0) {
      const auto baseline = static_cast<std::uint64_t>(memory.rss_bytes);
      if (auto message = runner_detail::over_budget_before_start(*predicted, baseline, *budget)) {
        row.rss_baseline = memory.rss_bytes;
        timings.setup_seconds = seconds_between(entry, Clock::now()) - timings.dataset_seconds;
        return finish(row, TrialStatus::over_budget, *message, entry);
      }
    }
  }

  // The measured region.
  std::atomic<bool> stop_trial{false};
  std::atomic<int> epoch{0};
  runner_detail::SerialSink serial_sink(sink, stop_trial);
  // A trial that ended by an exception may have left chunks behind.
  sampler->drain([](const SampleChunk&) {});
  sampler->set_phase(0);

  runner_detail::MonitorSettings monitor_settings;
  monitor_settings.trial_id = row.trial_id;
  monitor_settings.attempt = context.attempt;
  monitor_settings.rank = context.rank;
  monitor_settings.counter_sources = counter_sources;
  monitor_settings.check_interval = options.budget_check_interval;
  monitor_settings.budget_bytes = budget;
  monitor_settings.external_stop = context.stop;
  // Declared before the stopper: on the way out the sampler stops first,
  // then the monitor's thread is joined.
  runner_detail::TrialMonitor monitor(std::move(monitor_settings), *sampler, serial_sink, *monitor_probe, stop_trial,
                                      epoch);
  const SamplerStopper stopper(*sampler);

  TrainingOptions training;
  training.stop = &stop_trial;
  training.on_phase = [&](TrainingPhase, int phase_epoch) {
    epoch.store(phase_epoch, std::memory_order_relaxed);
    sampler->set_phase(phase_epoch);
  };
  training.on_epoch_end = [&](const EpochResult& result) {
    EpochRow epoch_row;
    epoch_row.trial_id = row.trial_id;
    epoch_row.attempt = context.attempt;
    epoch_row.epoch = result.epoch;
    epoch_row.train_loss = result.train_loss;
    epoch_row.test_accuracy = result.test_accuracy;
    epoch_row.seconds = result.seconds;
    ProcessMemory process;
    if (epoch_probe->read_process(process)) epoch_row.rss = process.rss_bytes;
    SystemMemory system;
    if (epoch_probe->read_system(system)) epoch_row.sys_used = system.used_bytes();
    serial_sink.epoch(epoch_row);
  };

  std::optional<TrainingResult> result;
  std::optional<TrainingFailure> failure;
  Clock::time_point training_start = Clock::now();
  Clock::time_point training_end = training_start;
  try {
    sampler->begin_region();
    monitor.trial_started();
    training_start = Clock::now();
    timings.setup_seconds = seconds_between(entry, training_start) - timings.dataset_seconds;
    result = train_trial(trial, *data, training);
  } catch (const std::bad_alloc&) {
    failure = TrainingFailure{out_of_memory_message(
        predicted ? fmt::format("training (predicted {})", format_byte_size(*predicted)) : std::string("training"))};
  } catch (const std::exception& error) {
    failure = TrainingFailure{one_line(error.what())};
  } catch (...) {
    failure = TrainingFailure{"training threw an unknown exception"};
  }
  training_end = Clock::now();
  timings.training_seconds = seconds_between(training_start, training_end);

  // The region's figures, then the last chunks.
  if (sampler->running()) {
    const RegionSummary region = sampler->end_region();
    row.rss_baseline = region.baseline_rss_bytes;
    row.rss_peak = region.peak_rss_bytes;
    row.rss_mean = region.mean_rss_bytes;
    row.rss_footprint = region.footprint_bytes;
    row.sys_used_mean = region.sys_used_mean_bytes;
    row.samples = region.samples;
    row.dropped_samples = region.dropped_samples;
  }
  monitor.finish();
  serial_sink.rethrow_if_failed();

  TrialStatus status = TrialStatus::ok;
  std::string message;
  if (result) {
    row.epochs_done = static_cast<std::int32_t>(result->epochs.size());
    if (!result->epochs.empty()) {
      row.final_train_loss = result->epochs.back().train_loss;
      row.test_accuracy = result->epochs.back().test_accuracy;
    }
  }
  if (failure) {
    status = TrialStatus::failed;
    message = failure->message;
  } else if (monitor.budget_message()) {
    // Whatever training made of the stop: the process passed its budget.
    status = TrialStatus::over_budget;
    message = *monitor.budget_message();
  } else if (result->outcome == TrainingOutcome::diverged) {
    status = TrialStatus::diverged;
    message = result->message;
  } else if (result->outcome == TrainingOutcome::stopped) {
    status = TrialStatus::interrupted;
    message = "interrupted: " + result->message;
  }
  finish(row, status, message, entry);
  timings.teardown_seconds = seconds_between(training_end, Clock::now());
  return row;
}

TrainingRunner::TrainingRunner(const TrainingRunnerOptions& options) : impl_(std::make_unique<Impl>(options)) {}

TrainingRunner::~TrainingRunner() = default;

TrialRow TrainingRunner::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  return impl_->run(trial, context, sink);
}

const std::vector<EventStatus>& TrainingRunner::counter_events() const { return impl_->events; }

std::size_t TrainingRunner::dataset_loads() const { return impl_->datasets.loads(); }

const RunnerTimings& TrainingRunner::last_timings() const { return impl_->timings; }

std::unique_ptr<TrainingRunner> make_training_runner(const TrainingRunnerOptions& options) {
  return std::make_unique<TrainingRunner>(options);
}

}  // namespace memsweep
