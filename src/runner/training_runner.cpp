// The rank's TrialRunner: each trial is an Attempt (trial_attempt.hpp) run
// by the runner of its kind, memsweep's own trial process
// (builtin_trial_runner.hpp) or a user's program (program_trial_runner.hpp).

#include "memsweep/training_runner.hpp"

#include "runner/builtin_trial_runner.hpp"
#include "runner/program_trial_runner.hpp"
#include "runner/trial_attempt.hpp"
#include "runner/trial_gpus.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    TrialGpus gpus = trial_gpus(trial, state.options.gpus);
    if (!gpus.problem.empty()) {
      finish(attempt, TrialStatus::failed, gpus.problem);
      return std::move(attempt).record();
    }
    state.sampler->set_gpu_devices(nvml_indices(gpus.devices));
    record_trial_gpus(attempt.row, gpus.devices, state.options.gpus);
    attempt.gpus = std::move(gpus.devices);
    if (trial.gpu_limit_bytes && !hold_gpu_limit(attempt, *trial.gpu_limit_bytes)) return std::move(attempt).record();
    if (trial.program)
      run_program_trial(state, attempt, trial, context, sink);
    else
      run_builtin_trial(state, attempt, trial, context, sink);
    return std::move(attempt).record();
  }

  // The trial's GPU limit on each of its devices: the device's own size,
  // or the rest of the device held by a reserve; else only the watch's
  // stop. False: the trial cannot run (finished failed).
  bool hold_gpu_limit(Attempt& attempt, std::uint64_t asked) {
    if (attempt.gpus.empty()) {
      finish(attempt, TrialStatus::failed, "the trial has a gpu_limit but no GPU: its node's job has none");
      return false;
    }
    std::int64_t limit = 0, reserved = 0;
    bool whole_devices = true;
    std::vector<std::string> problems;
    for (const RankGpu& device : attempt.gpus) {
      const std::optional<std::uint64_t> own = device_limit(asked, device.total_bytes);
      if (!own) {
        finish(attempt, TrialStatus::failed,
               fmt::format("gpu_limit = \"device\", but NVML does not tell the size of {}", device.visible_id));
        return false;
      }
      limit += static_cast<std::int64_t>(*own);
      if (device.total_bytes >= 0 && *own >= static_cast<std::uint64_t>(device.total_bytes)) continue;
      whole_devices = false;
      GpuReserve reserve = GpuReserve::start(state.options.trial_executable, device.visible_id, *own);
      if (reserve.held()) {
        reserved += static_cast<std::int64_t>(reserve.held()->reserved);
      } else {
        problems.push_back(fmt::format("{}: {}", device.visible_id, reserve.problem()));
      }
      attempt.reserves.push_back(std::move(reserve));
    }
    attempt.row.gpu_limit = limit;
    std::string_view mechanism = whole_devices ? gpu_limit_mechanism::kDevice : gpu_limit_mechanism::kReserve;
    if (!problems.empty()) {
      mechanism = gpu_limit_mechanism::kWatch;
      attempt.note(
          fmt::format("its GPU limit is only watched, not held (the reserve failed: {})", fmt::join(problems, "; ")));
    }
    set_fixed(attempt.row.gpu_limit_mechanism, mechanism);
    if (mechanism == gpu_limit_mechanism::kReserve) attempt.row.gpu_reserved = reserved;
    return true;
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
