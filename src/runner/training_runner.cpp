// The rank's TrialRunner: each trial is an Attempt (trial_attempt.hpp) run
// by the runner of its kind, memsweep's own trial process
// (builtin_trial_runner.hpp) or a user's program (program_trial_runner.hpp).

#include "memsweep/training_runner.hpp"

#include "runner/builtin_trial_runner.hpp"
#include "runner/program_trial_runner.hpp"
#include "runner/trial_attempt.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace memsweep {
namespace {

using namespace runner::detail;

SamplerOptions sampler_options(const TrainingRunnerOptions& options) {
  using std::chrono::milliseconds;
  if (options.sampler_interval < milliseconds(kMinSamplerIntervalMs) ||
      options.sampler_interval > milliseconds(kMaxSamplerIntervalMs))
    throw std::invalid_argument(fmt::format("the sampler interval must be {} ms to {} ms, not {} ms",
                                            kMinSamplerIntervalMs, kMaxSamplerIntervalMs,
                                            options.sampler_interval.count()));
  if (options.max_chunk_age.count() <= 0) throw std::invalid_argument("the chunk age must be positive");
  if (options.check_interval.count() <= 0) throw std::invalid_argument("the check interval must be positive");
  if (options.stop_grace.count() <= 0) throw std::invalid_argument("the stop grace must be positive");
  if (options.start_timeout.count() <= 0) throw std::invalid_argument("the start timeout must be positive");
  SamplerOptions sampler;
  sampler.interval = options.sampler_interval;
  sampler.max_chunk_age = options.max_chunk_age;
  return sampler;
}

}  // namespace

namespace runner::detail {

RunnerState::RunnerState(const TrainingRunnerOptions& runner_options)
    : options(runner_options),
      cgroups(runner_options.use_cgroups ? TrialCgroups::detect() : TrialCgroups()),
      datasets(runner_options.data_dirs,
               runner_options.shared_dir.empty() ? shared_dataset_dir_from_environment() : runner_options.shared_dir,
               runner_options.max_train_examples, runner_options.max_test_examples),
      guard(TrialGuard::start(runner_options.trial_executable)) {
  if (guard && cgroups.isolation() != Isolation::proc) guard->watch_groups_under(cgroups.parent());
  const SamplerOptions sampling = sampler_options(options);
  std::unique_ptr<CounterSource> counters;
  if (!options.counter_columns.empty()) {
    CounterSetup setup = open_counter_columns(options.counter_columns);
    events = std::move(setup.events);
    counters = std::move(setup.source);
  }
  sampler = std::make_unique<Sampler>(sampling, make_proc_memory_probe(), std::move(counters));
  std::vector<std::string> columns;
  for (const CounterRequest& column : options.counter_columns) columns.push_back(column.name);
  counter_slots = memsweep::counter_slots(sampler->counter_names(), columns);
  gpu_problem = sampler->open_gpu();
}

}  // namespace runner::detail

struct TrainingRunner::Impl {
  explicit Impl(const TrainingRunnerOptions& options) : state(options) {}

  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
    // Released once the attempt's process is reaped and its cgroup
    // removed (the Attempt's end), however the attempt ends.
    struct Release {
      std::optional<TrialGuard>& guard;
      ~Release() {
        if (guard) guard->release();
      }
    } release{state.guard};
    state.timings = {};
    Attempt attempt(trial, context);
    if (trial.program)
      run_program_trial(state, attempt, trial, context, sink);
    else
      run_builtin_trial(state, attempt, trial, context, sink);
    return std::move(attempt).record();
  }

  RunnerState state;
};

TrainingRunner::TrainingRunner(const TrainingRunnerOptions& options) : impl_(std::make_unique<Impl>(options)) {}

TrainingRunner::~TrainingRunner() = default;

TrialRecord TrainingRunner::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  return impl_->run(trial, context, sink);
}

const std::vector<EventStatus>& TrainingRunner::counter_events() const { return impl_->state.events; }

std::string TrainingRunner::isolation() const { return std::string(isolation_name(impl_->state.cgroups.isolation())); }

std::string TrainingRunner::isolation_problem() const { return impl_->state.cgroups.problem(); }

std::string TrainingRunner::gpu_problem() const { return impl_->state.gpu_problem; }

std::size_t TrainingRunner::dataset_opens() const { return impl_->state.datasets.opens(); }

std::size_t TrainingRunner::dataset_decodes() const { return impl_->state.datasets.decodes(); }

const RunnerTimings& TrainingRunner::last_timings() const { return impl_->state.timings; }

std::unique_ptr<TrainingRunner> make_training_runner(const TrainingRunnerOptions& options) {
  return std::make_unique<TrainingRunner>(options);
}

}  // namespace memsweep
