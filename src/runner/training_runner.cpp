// A trial, in order (docs/runner.md): its shared dataset, its prediction,
// its cgroup, its process (spawned, given the job, ready), the budget check
// against the ready process's memory, the sampler on the process, the
// go-ahead, the watch until the result or the end, the peak read before the
// process is let go, the row.

#include "memsweep/training_runner.hpp"

#include "common/duration_text.hpp"
#include "common/unique_fd.hpp"
#include "dataset/locate.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/model_spec.hpp"
#include "memsweep/program.hpp"
#include "memsweep/trainer.hpp"
#include "runner/budget.hpp"
#include "runner/child_process.hpp"
#include "runner/dataset_cache.hpp"
#include "runner/oom_evidence.hpp"
#include "runner/program_events.hpp"
#include "runner/program_launch.hpp"
#include "runner/trial_cgroup.hpp"
#include "runner/trial_ending.hpp"
#include "runner/trial_guard.hpp"
#include "runner/trial_messages.hpp"
#include "runner/trial_protocol.hpp"
#include "runner/trial_watch.hpp"
#include "sampler/process_tree.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace memsweep {
namespace {

using Clock = std::chrono::steady_clock;
using namespace runner_detail;

// How long a trial process told to exit has before it is killed: it exits
// at once (std::_Exit), so only a process stuck in the kernel takes longer.
constexpr std::chrono::milliseconds kExitGrace{5000};

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
  if (options.check_interval.count() <= 0) throw std::invalid_argument("the check interval must be positive");
  if (options.stop_grace.count() <= 0) throw std::invalid_argument("the stop grace must be positive");
  if (options.start_timeout.count() <= 0) throw std::invalid_argument("the start timeout must be positive");
  SamplerOptions sampler;
  sampler.interval = options.sampler_interval;
  sampler.max_chunk_age = options.max_chunk_age;
  return sampler;
}

// Moves `pid` into `group` (its cgroup.procs takes a pid).
bool join_cgroup(const TrialCgroup& group, pid_t pid) {
  const UniqueFd file(::open(group.procs_file().c_str(), O_WRONLY | O_CLOEXEC));
  if (!file) return false;
  const std::string text = std::to_string(pid);
  return ::write(file.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

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

}  // namespace

namespace {

// One trial's attempt as it goes: its row, its process and what belongs
// to it. A step that ends the attempt early writes the row's status.
struct Attempt {
  Clock::time_point entry;
  TrialRow row;
  std::string message;  // whole; row.message holds its first bytes
  const SharedDataset* data = nullptr;
  std::optional<std::uint64_t> predicted;
  std::optional<std::uint64_t> budget;
  std::unique_ptr<TrialCgroup> cgroup;
  bool cgroup_limit_is_budget = false;
  OomCounters oom_before;
  Pipe control = make_pipe("a trial process's job");
  Pipe reports = make_pipe("a trial process's reports");
  Clock::time_point spawned;  // just before the fork
  std::optional<ChildProcess> process;
  std::optional<FrameReader> report_reader;
  std::unique_ptr<MemoryProbe> probe;  // the process's /proc files, on the runner's thread
  RegionBaseline baseline;
  // The most a program's child can have had before its exec: the rank's
  // image, which wait4's ru_maxrss may carry (program_max_rss()).
  std::int64_t pre_exec_peak = -1;
  bool ended = false;  // the row has its status
};

void set_message(Attempt& attempt, std::string_view message) {
  attempt.message = std::string(message);
  set_fixed(attempt.row.message, message);
}

// The columns a trial's row takes from its samples alone, whoever ran it.
void record_sampled_means(TrialRow& row, const RegionSummary& region) {
  row.rss_mean = region.mean_rss_bytes;
  row.sys_used_mean = region.sys_used_mean_bytes;
  row.samples = region.samples;
  row.dropped_samples = region.dropped_samples;
  row.gpu_peak = region.gpu_peak_bytes;
  set_fixed(row.gpu_devices, region.gpu_devices);
  set_fixed(row.gpu_peak_source, region.gpu_peak_source);
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

struct ProgramOutput;
struct PreparedProgram;

}  // namespace

struct TrainingRunner::Impl {
  explicit Impl(const TrainingRunnerOptions& runner_options);

  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink);
  TrialRecord run_attempt(const TrialSpec& trial, const TrialContext& context, TrialSink& sink);

  void open_dataset(Attempt& attempt, const TrialSpec& trial);
  void place_in_cgroup(Attempt& attempt);
  void adopt_process(Attempt& attempt, bool own_group);
  void spawn(Attempt& attempt, const SpawnRequest& request);
  void limit_cgroup_to_budget(Attempt& attempt);
  void start_process(Attempt& attempt, const TrialSpec& trial);
  void spawn_trial_process(Attempt& attempt, const TrialSpec& trial);
  void hand_over_job(Attempt& attempt, const TrialSpec& trial);
  void take_baseline(Attempt& attempt);
  void check_budget_before_start(Attempt& attempt);
  void begin_region(Attempt& attempt, std::int32_t phase, std::unique_ptr<MemoryProbe> probe, bool held = false);
  WatchSettings watch_settings(const Attempt& attempt, const TrialSpec& trial, const TrialContext& context) const;
  void train(Attempt& attempt, const TrialSpec& trial, const TrialContext& context, TrialSink& sink);
  // A user's program instead of memsweep's trial process (docs/runner.md, "Programs").
  void run_program(Attempt& attempt, const TrialSpec& trial, const TrialContext& context, TrialSink& sink);
  std::optional<PreparedProgram> prepare_program(Attempt& attempt, const TrialSpec& trial, const TrialContext& context);
  void spawn_program(Attempt& attempt, PreparedProgram& program, Pipe& event_pipe, Pipe& gate);
  void open_gate(Attempt& attempt, Pipe& gate);
  void watch_program(Attempt& attempt, const TrialSpec& trial, const TrialContext& context, TrialSink& sink,
                     Pipe& event_pipe, ProcessTreeProbe& tree, const ProgramOutput& output);
  std::string program_data_dir(const TrialSpec& trial) const;
  // The row's status and end columns from how the process ended.
  void record_end(Attempt& attempt, ProcessOutcome outcome, std::string_view before_message = {});
  void finish(Attempt& attempt, TrialStatus status, std::string_view message) const;
  std::optional<std::uint64_t> predicted_bytes(const TrialSpec& trial, const SharedDataset& data, TrialRow& row);
  std::optional<std::chrono::milliseconds> time_limit(const TrialSpec& trial) const;

  TrainingRunnerOptions options;
  std::vector<EventStatus> events;
  // One sampler for every trial, pointed at each trial's process in turn:
  // its chunk pool and counters are set up once.
  std::unique_ptr<Sampler> sampler;
  std::vector<int> counter_slots;  // the file's counter columns, from the sampler's slots
  TrialCgroups cgroups;
  DatasetCache datasets;
  EstimateCache estimates;
  RunnerTimings timings;
  std::size_t trials_started = 0;
  // Ends a trial's processes and cgroup if this rank dies (trial_guard.hpp).
  std::optional<TrialGuard> guard;
  // NVML, when the node has a driver (src/sampler/gpu/); else why not.
  std::string gpu_problem;
};

TrainingRunner::Impl::Impl(const TrainingRunnerOptions& runner_options)
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

void TrainingRunner::Impl::finish(Attempt& attempt, TrialStatus status, std::string_view message) const {
  TrialRow& row = attempt.row;
  set_fixed(row.status, status_name(status));
  set_message(attempt, message);
  row.end_time = unix_seconds_now();
  row.wall_seconds = seconds_between(attempt.entry, Clock::now());
  attempt.ended = true;
}

// The estimate is a prediction, not a precondition: when it cannot be made
// the trial still runs (the trainer reports what is wrong with it), only
// without a prediction and without the check before the start.
// The row records the prediction's parts and the model's parameter count
// (schema 10), so that the analysis reads them instead of working them out.
std::optional<std::uint64_t> TrainingRunner::Impl::predicted_bytes(const TrialSpec& trial, const SharedDataset& data,
                                                                   TrialRow& row) {
  try {
    const ExampleCounts counts{data.train_examples(), data.test_examples()};
    MemoryEstimate estimate = estimates.estimate(trial, counts);
    if (options.trial_process_cost)
      estimate.parts.push_back(trial_process_part(*options.trial_process_cost, trial, counts));
    for (const EstimatePart& part : estimate.parts) record_estimate_part(row, part.name, part.bytes);
    const EstimatePart dataset = resident_dataset_part(trial.dataset, counts);
    record_estimate_part(row, dataset.name, dataset.bytes);
    row.parameters = static_cast<std::int64_t>(parameter_count(model_spec(trial)));
    return estimate.total();
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::chrono::milliseconds> TrainingRunner::Impl::time_limit(const TrialSpec& trial) const {
  std::optional<std::chrono::milliseconds> limit = options.trial_timeout;
  if (trial.timeout_seconds) {
    const std::chrono::milliseconds own = limit_milliseconds(*trial.timeout_seconds);
    limit = limit ? std::min(*limit, own) : own;
  }
  return limit;
}

TrialRecord TrainingRunner::Impl::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  // Released once the attempt's process is reaped and its cgroup removed,
  // however run_attempt ends.
  struct Release {
    std::optional<TrialGuard>& guard;
    ~Release() {
      if (guard) guard->release();
    }
  } release{guard};
  return run_attempt(trial, context, sink);
}

TrialRecord TrainingRunner::Impl::run_attempt(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  Attempt attempt;
  attempt.entry = Clock::now();
  timings = {};
  TrialRow& row = attempt.row;
  row = trial_row_for(trial, context.attempt);
  row.run = context.run;
  row.rank = context.rank;
  set_fixed(row.host, context.host);
  row.start_time = unix_seconds_now();
  attempt.budget = effective_budget(context.mem_budget_bytes, trial.mem_budget_bytes);

  if (trial.program) {
    run_program(attempt, trial, context, sink);
    return TrialRecord{row, std::move(attempt.message)};
  }
  open_dataset(attempt, trial);
  if (!attempt.ended) start_process(attempt, trial);
  if (!attempt.ended) train(attempt, trial, context, sink);
  return TrialRecord{row, std::move(attempt.message)};
}

// The shared dataset (decoded once per node, mapped by the process) and
// the prediction for it.
void TrainingRunner::Impl::open_dataset(Attempt& attempt, const TrialSpec& trial) {
  const Clock::time_point open_start = Clock::now();
  const std::size_t opens_before = datasets.opens();
  try {
    attempt.data = &datasets.get(trial.dataset);
  } catch (const std::bad_alloc&) {
    return finish(attempt, TrialStatus::failed,
                  out_of_memory_message(fmt::format("decoding {}", dataset_name(trial.dataset.kind))));
  } catch (const std::exception& error) {
    return finish(attempt, TrialStatus::failed, one_line(error.what()));
  }
  if (datasets.opens() != opens_before) timings.dataset_seconds = seconds_between(open_start, Clock::now());
  attempt.predicted = predicted_bytes(trial, *attempt.data, attempt.row);
  if (attempt.predicted) attempt.row.predicted_bytes = static_cast<std::int64_t>(*attempt.predicted);
}

// Into its cgroup, where the node lets the rank make one, while it execs: a
// move between groups waits for an RCU grace period (about 10 ms), as long
// as the exec's loading takes, so the two overlap. What the process took
// before the move (its start-up) is charged to the rank's group; its own
// RSS and peak are whole either way. Without a group the trial is measured
// through /proc alone; the next trial tries again.
void TrainingRunner::Impl::place_in_cgroup(Attempt& attempt) {
  if (cgroups.isolation() == Isolation::proc) return;
  try {
    attempt.cgroup = cgroups.create(fmt::format("memsweep-{}-trial-{}", ::getpid(), trials_started), std::nullopt);
    if (!join_cgroup(*attempt.cgroup, attempt.process->pid())) attempt.cgroup.reset();
  } catch (const std::exception&) {
    attempt.cgroup.reset();
  }
}

// The process as the trial's: its pid in the row, its cgroup, the isolation,
// and the guard told what to end should the rank die.
void TrainingRunner::Impl::adopt_process(Attempt& attempt, bool own_group) {
  attempt.row.pid = attempt.process->pid();
  place_in_cgroup(attempt);
  if (guard)
    guard->watch({.root = attempt.process->pid(),
                  .own_group = own_group,
                  .cgroup = attempt.cgroup ? attempt.cgroup->path() : std::filesystem::path()});
  set_fixed(attempt.row.isolation, isolation_name(attempt.cgroup ? cgroups.isolation() : Isolation::proc));
}

// The budget as the cgroup's limit: the kernel holds the trial to it even
// between two of the rank's checks. If the limit cannot be set, the rank's
// checks alone enforce it.
void TrainingRunner::Impl::limit_cgroup_to_budget(Attempt& attempt) {
  if (!attempt.budget || !attempt.cgroup) return;
  try {
    attempt.cgroup->set_limit(*attempt.budget);
    attempt.cgroup_limit_is_budget = true;
  } catch (const std::exception&) {
  }
}

// The fork and exec, timed from here; a process that cannot start fails the
// trial. The process then joins the trial's cgroup.
void TrainingRunner::Impl::spawn(Attempt& attempt, const SpawnRequest& request) {
  attempt.spawned = Clock::now();
  try {
    attempt.process.emplace(ChildProcess::spawn(request));
  } catch (const std::exception& error) {
    return finish(attempt, TrialStatus::failed, one_line(error.what()));
  }
  adopt_process(attempt, request.program);
}

// Spawn, job, ready, baseline, and the budget before the start.
void TrainingRunner::Impl::start_process(Attempt& attempt, const TrialSpec& trial) {
  ++trials_started;
  attempt.oom_before = read_oom_counters(cgroups);
  spawn_trial_process(attempt, trial);
  if (!attempt.ended) hand_over_job(attempt, trial);
  if (!attempt.ended) take_baseline(attempt);
  if (!attempt.ended) check_budget_before_start(attempt);
  // Now that the ready process is known to fit.
  if (!attempt.ended) limit_cgroup_to_budget(attempt);
}

// `memsweep trial ID`, with its control and report pipes and the dataset.
void TrainingRunner::Impl::spawn_trial_process(Attempt& attempt, const TrialSpec& trial) {
  SpawnRequest request;
  request.executable = options.trial_executable;
  request.argv = {"memsweep", "trial", trial.id};
  request.control_fd = attempt.control.read_end.get();
  request.report_fd = attempt.reports.write_end.get();
  request.dataset_fd = attempt.data->fd();
  spawn(attempt, request);
  if (attempt.ended) return;
  attempt.control.read_end.reset();
  attempt.reports.write_end.reset();  // the process holds the only write end: its end closes the pipe
  ::fcntl(attempt.reports.read_end.get(), F_SETFL, O_NONBLOCK);
  attempt.report_reader.emplace(attempt.reports.read_end.get());
}

// The job to the process, and its first report: ready, or why not.
void TrainingRunner::Impl::hand_over_job(Attempt& attempt, const TrialSpec& trial) {
  FrameReader& reports = *attempt.report_reader;
  TrialJob job;
  job.trial = trial;
  job.threads = options.threads > 0 ? options.threads : default_thread_count();
  job.predicted_bytes = attempt.predicted ? static_cast<std::int64_t>(*attempt.predicted) : -1;
  if (!write_frame(attempt.control.write_end.get(), encode(job)))
    return record_end(attempt, {}, "the trial process ended before its job");
  const std::optional<Frame> first = wait_for_frame(reports, attempt.spawned + options.start_timeout);
  if (!first && !reports.at_end()) {
    attempt.process->send_signal(SIGKILL);
    return record_end(attempt, {},
                      fmt::format("the trial process was not ready within {} s",
                                  std::chrono::duration<double>(options.start_timeout).count()));
  }
  if (!first) return record_end(attempt, {}, "the trial process ended before it was ready");
  if (first->type == FrameType::failure) {
    ProcessOutcome outcome;
    outcome.failure = decode_failure(*first);
    write_frame(attempt.control.write_end.get(), empty_frame(FrameType::exit));
    return record_end(attempt, std::move(outcome));
  }
  decode_ready(*first);  // checks that it is a whole ready report
  attempt.row.start_seconds = seconds_between(attempt.spawned, Clock::now());
  timings.start_seconds = attempt.row.start_seconds;
}

// The baseline: the ready process, data mapped, nothing of the trial built.
void TrainingRunner::Impl::take_baseline(Attempt& attempt) {
  attempt.probe = make_proc_memory_probe(attempt.process->pid());
  ProcessMemory memory;
  if (attempt.probe->read_process(memory)) attempt.baseline.rss_bytes = memory.rss_bytes;
  attempt.row.rss_baseline = attempt.baseline.rss_bytes;
}

// A trial whose prediction over its baseline passes its budget is not
// started: the process is told to exit, and the row says why.
// A search's probe always runs: its answer is what trained, never what
// the estimate says would not have (docs/search.md).
void TrainingRunner::Impl::check_budget_before_start(Attempt& attempt) {
  if (!attempt.budget || !attempt.predicted || attempt.baseline.rss_bytes < 0) return;
  if (attempt.row.search >= 0) return;
  const std::optional<std::string> message = over_budget_before_start(
      *attempt.predicted, static_cast<std::uint64_t>(attempt.baseline.rss_bytes), *attempt.budget);
  if (!message) return;
  write_frame(attempt.control.write_end.get(), empty_frame(FrameType::exit));
  attempt.process->reap(kExitGrace);
  set_fixed(attempt.row.end_cause, end_cause::kExited);
  timings.setup_seconds = seconds_between(attempt.entry, Clock::now()) - timings.dataset_seconds;
  finish(attempt, TrialStatus::over_budget, *message);
}

// The sampler on the process, from a fresh region: what a trial whose sink
// threw left behind is dropped first. `held`: its first sample waits for
// Sampler::release().
void TrainingRunner::Impl::begin_region(Attempt& attempt, std::int32_t phase, std::unique_ptr<MemoryProbe> probe,
                                        bool held) {
  sampler->drain([](const SampleChunk&) {});
  sampler->set_phase(0, phase);
  sampler->set_target(attempt.process->pid(), std::move(probe));
  if (held)
    sampler->begin_held_region(attempt.baseline);
  else
    sampler->begin_region(attempt.baseline);
}

WatchSettings TrainingRunner::Impl::watch_settings(const Attempt& attempt, const TrialSpec& trial,
                                                   const TrialContext& context) const {
  WatchSettings settings;
  settings.trial_id = attempt.row.trial_id;
  settings.attempt = context.attempt;
  settings.rank = context.rank;
  settings.counter_slots = counter_slots;
  settings.check_interval = options.check_interval;
  settings.budget_bytes = attempt.budget;
  settings.time_limit = time_limit(trial);
  settings.stop_grace = options.stop_grace;
  settings.external_stop = context.stop;
  settings.program = trial.program.has_value();
  return settings;
}

// The measured region: the sampler on the process (its counters open now,
// while it has one thread and waits), the go-ahead, the watch, and the
// peak read while the process still exists (it waits for `exit` after its
// result); a process that ended leaves its last reading.
void TrainingRunner::Impl::train(Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                                 TrialSink& sink) {
  ChildProcess& process = *attempt.process;
  begin_region(attempt, sample_phase::kSetup, make_proc_memory_probe(process.pid()));
  TrialWatch watch(watch_settings(attempt, trial, context), process, *attempt.report_reader, *sampler, *attempt.probe,
                   sink);
  const Clock::time_point go = Clock::now();
  timings.setup_seconds = seconds_between(attempt.entry, go) - timings.dataset_seconds;
  write_frame(attempt.control.write_end.get(), empty_frame(FrameType::go));

  WatchReport seen;
  try {
    seen = watch.run();
  } catch (...) {
    sampler->stop();
    throw;
  }
  const Clock::time_point training_end = Clock::now();
  timings.training_seconds = seconds_between(go, training_end);
  const RegionSummary region = sampler->end_region();
  write_frame(attempt.control.write_end.get(), empty_frame(FrameType::exit));
  attempt.control.write_end.reset();
  watch.forward_chunks();

  record_trial_measures(attempt.row, region, seen, attempt.baseline);
  record_end(attempt, std::move(seen.outcome));
  timings.teardown_seconds = seconds_between(training_end, Clock::now());
}

void TrainingRunner::Impl::record_end(Attempt& attempt, ProcessOutcome outcome, std::string_view before_message) {
  TrialRow& row = attempt.row;
  outcome.end = attempt.process->reap(kExitGrace);
  if (attempt.cgroup) {
    row.cgroup_peak = attempt.cgroup->report().peak_bytes;
    outcome.cgroup_limit_is_budget = attempt.cgroup_limit_is_budget;
  }
  if (needs_oom_evidence(outcome))
    outcome.oom_seen_in = oom_kill_seen(attempt.oom_before, read_oom_counters(cgroups), attempt.cgroup.get());
  const TrialEnding ending = decide_ending(outcome);
  row.end_signal = ending.signal;
  row.oom_killed = ending.oom_killed ? 1 : 0;
  set_fixed(row.end_cause, ending.cause);
  finish(attempt, ending.status,
         before_message.empty() ? ending.message : fmt::format("{}: {}", before_message, ending.message));
}

namespace {

// How much of a failed program's stderr its message keeps: the message is
// stored whole (/messages), so this bounds only what a console line or a
// table cell has to hold of a long traceback.
constexpr int kTailLines = 3;
constexpr std::size_t kTailBytes = 1000;
constexpr std::size_t kTailReadBytes = 8192;

// The program's output files: kept in the log folder, or (no folder) an
// unnamed file for stderr alone, read for a failure's message.
struct ProgramOutput {
  UniqueFd out;
  UniqueFd err;
};

ProgramOutput open_program_output(const std::filesystem::path& log_dir, const TrialSpec& trial, int attempt) {
  constexpr int kFlags = O_CREAT | O_TRUNC | O_CLOEXEC;
  if (log_dir.empty()) {
    return {UniqueFd(::open("/dev/null", O_WRONLY | O_CLOEXEC)),
            UniqueFd(::open(std::filesystem::temp_directory_path().c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600))};
  }
  std::filesystem::create_directories(log_dir);
  const std::string stem = (log_dir / fmt::format("{}-{}", trial.id, attempt)).string();
  // stderr is read back for a failure's message.
  ProgramOutput output{UniqueFd(::open((stem + ".out").c_str(), O_WRONLY | kFlags, 0644)),
                       UniqueFd(::open((stem + ".err").c_str(), O_RDWR | kFlags, 0644))};
  if (!output.out || !output.err)
    throw std::system_error(errno, std::generic_category(),
                            "cannot open the program's log files " + stem + ".out/.err");
  return output;
}

// Whatever of the trial's tree is still there: its process group, the
// processes the probe found (a descendant may have left the group), and its
// cgroup's.
void kill_tree(pid_t root, const ProcessTreeProbe& probe, const TrialCgroup* cgroup) {
  ::kill(-root, SIGKILL);
  for (const int pid : probe.members())
    if (pid != root) ::kill(pid, SIGKILL);
  if (cgroup != nullptr) {
    const UniqueFd file(::open(cgroup->procs_file().c_str(), O_RDONLY | O_CLOEXEC));
    if (!file) return;
    std::string text(65536, '\0');
    const ssize_t got = ::read(file.get(), text.data(), text.size());
    text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
    for (const int pid : parse_pid_list(text)) ::kill(pid, SIGKILL);
  }
}

// The most the child had of the rank's image before its exec, short of the
// pages it faults in on its way there (kPreExecGrowthBytes): the larger of
// its own VmHWM now, waiting at its start gate or still on its way (read
// through a probe of its own, so that the tree's peaks never include it),
// and the rank's own VmHWM, which bounds what the fork copied (the child's
// RSS at the fork is pages the rank had). -1 if the child's is unreadable.
std::int64_t pre_exec_peak(pid_t pid) {
  std::int64_t child = -1;
  std::int64_t rank = -1;
  if (!make_proc_memory_probe(pid)->read_peak_rss(child)) return -1;
  make_proc_memory_probe()->read_peak_rss(rank);
  return std::max(child, rank);
}

// What starting the program takes, found before its fork.
struct PreparedProgram {
  ProgramInvocation invocation;
  std::string executable;  // absolute: the child enters its workdir before it execs
  std::vector<std::string> environment;
  ProgramOutput output;
};

// The row's memory columns from the program's tree: its peak is the
// largest of what the sampler and the watch's tree probe saw, all of it
// read after the exec (the samples from the exec on, each member's VmHWM,
// which a new image starts afresh), and of wait4's ru_maxrss only where it
// cannot be the rank's image from before the exec (program_max_rss()); it
// has no ready point, so its footprint is its whole peak.
void record_program_measures(TrialRow& row, const ProcessTreeStats& stats, const ProcessEnd& end,
                             std::int64_t pre_exec_peak, const RegionSummary& region, const WatchReport& seen) {
  row.process_peak_max =
      std::max({stats.largest_peak, program_max_rss(end.max_rss_bytes, pre_exec_peak), seen.last_peak});
  row.rss_peak = std::max(region.max_sampled_rss_bytes, row.process_peak_max);
  row.rss_peak_hwm_sum = stats.peak_sum >= 0 ? std::max(stats.peak_sum, row.process_peak_max) : row.process_peak_max;
  row.rss_footprint = row.rss_peak;
  record_sampled_means(row, region);
  row.processes = stats.processes_seen;
}

// The row's training columns from what the program reported on its events
// channel, and the Q&A rule's prediction from the model size it gave.
void record_program_progress(TrialRow& row, const ProgramProgress& progress, const TrialSpec& trial) {
  row.epochs_done = progress.epochs_done;
  row.final_train_loss = progress.last_loss;
  row.test_accuracy = progress.last_accuracy;
  row.bad_event_lines = progress.bad_lines;
  row.torch_allocated_peak = progress.gpu.allocated_peak;
  row.torch_reserved_peak = progress.gpu.reserved_peak;
  if (!progress.model_size) return;
  RuleCounts counts;
  counts.parameters = static_cast<std::uint64_t>(progress.model_size->parameters);
  counts.activations_per_example = static_cast<std::uint64_t>(progress.model_size->activations_per_example);
  const ImageShape input = model_spec(trial).input;
  counts.input_per_example = static_cast<std::uint64_t>(input.channels) * input.height * input.width;
  counts.batch = static_cast<std::uint64_t>(trial.batch_size);
  const MemoryEstimate rule = rule_estimate(counts);
  for (const EstimatePart& part : rule.parts) record_estimate_part(row, part.name, part.bytes);
  row.parameters = progress.model_size->parameters;
  row.predicted_bytes = static_cast<std::int64_t>(rule.total());
}

}  // namespace

// The folder holding the trial's dataset files, for {data_dir}: where
// memsweep's trainer would read them. Synthetic data has none: the first
// folder on the search list.
std::string TrainingRunner::Impl::program_data_dir(const TrialSpec& trial) const {
  using namespace dataset_detail;
  switch (trial.dataset.kind) {
    case DatasetKind::synthetic: return options.data_dirs.empty() ? std::string() : options.data_dirs.front().string();
    case DatasetKind::cifar10: return locate_cifar_files(options.data_dirs).test_batch.parent_path().string();
    default: return locate_idx_files(trial.dataset.kind, options.data_dirs).train_images.parent_path().string();
  }
}

void TrainingRunner::Impl::run_program(Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                                       TrialSink& sink) {
  ++trials_started;
  attempt.oom_before = read_oom_counters(cgroups);
  std::optional<PreparedProgram> program = prepare_program(attempt, trial, context);
  if (!program) return;
  Pipe event_pipe = make_pipe("a program's events");
  Pipe gate = make_pipe("a program's start gate");
  spawn_program(attempt, *program, event_pipe, gate);
  if (attempt.ended) return;
  limit_cgroup_to_budget(attempt);

  // The sampler's counters on the waiting child, then its exec: the program
  // is counted from its first instruction. Its memory is sampled only from
  // the exec on: until then the child is a fork of the rank, whose image
  // (10 to 15 MiB) is not the program's. It has no ready point, so its
  // baseline is nothing and its footprint is its whole peak.
  const std::string procs = attempt.cgroup ? attempt.cgroup->procs_file() : std::string();
  std::unique_ptr<ProcessTreeProbe> tree = make_process_tree_probe(attempt.process->pid(), procs);
  attempt.baseline.rss_bytes = 0;
  attempt.row.rss_baseline = 0;
  // Unknown until the program reports a phase: one that reports none has
  // every sample unknown, not "setup".
  begin_region(attempt, sample_phase::kUnknown, make_process_tree_probe(attempt.process->pid(), procs), true);
  attempt.pre_exec_peak = pre_exec_peak(attempt.process->pid());
  open_gate(attempt, gate);
  if (attempt.ended) return;
  sampler->release();
  watch_program(attempt, trial, context, sink, event_pipe, *tree, program->output);
}

// Its command line, environment, executable and output files.
std::optional<PreparedProgram> TrainingRunner::Impl::prepare_program(Attempt& attempt, const TrialSpec& trial,
                                                                     const TrialContext& context) {
  ProgramRunValues values;
  values.threads = options.threads > 0 ? options.threads : default_thread_count();
  values.max_train_examples = options.max_train_examples;
  values.max_test_examples = options.max_test_examples;
  values.attempt = context.attempt;
  PreparedProgram program;
  try {
    // Only a program that names {data_dir} reads the files; others' dataset is a label.
    if (trial.program->uses_data_dir) values.data_dir = program_data_dir(trial);
    ProgramInvocation& invocation = program.invocation = program_invocation(trial, values);
    invocation.env.emplace_back(kEventsFdVariable, std::to_string(kEventsFd));
    invocation.env.emplace_back("MEMSWEEP_TRIAL_ID", trial.id);
    program.environment = merged_environment(current_environment(), invocation.env);
    const std::string path_list =
        environment_value(program.environment, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
    const std::optional<std::string> found = find_executable(invocation.argv.at(0), path_list, invocation.workdir);
    if (!found) {
      finish(attempt, TrialStatus::failed,
             fmt::format("program \"{}\" not found{} or not executable", invocation.argv.at(0),
                         invocation.argv.at(0).find('/') == std::string::npos ? " on PATH" : ""));
      return std::nullopt;
    }
    program.executable = std::filesystem::absolute(*found).string();
    program.output = open_program_output(options.log_dir, trial, context.attempt);
  } catch (const std::exception& error) {
    finish(attempt, TrialStatus::failed, one_line(error.what()));
    return std::nullopt;
  }
  return program;
}

// The child forked, waiting at its start gate, with the events pipe's
// write end as kEventsFd.
void TrainingRunner::Impl::spawn_program(Attempt& attempt, PreparedProgram& program, Pipe& event_pipe, Pipe& gate) {
  SpawnRequest request;
  request.executable = program.executable;
  request.argv = program.invocation.argv;
  request.program = true;
  request.environment = std::move(program.environment);
  request.workdir = program.invocation.workdir;
  request.control_fd = event_pipe.write_end.get();  // kEventsFd: the program's events channel
  request.stdout_fd = program.output.out.get();
  request.stderr_fd = program.output.err.get();
  request.start_gate_fd = gate.read_end.get();
  spawn(attempt, request);
  if (attempt.ended) return;
  event_pipe.write_end.reset();
  gate.read_end.reset();
  ::fcntl(event_pipe.read_end.get(), F_SETFL, O_NONBLOCK);
}

// The go-ahead through the start gate, and the child's exec confirmed.
void TrainingRunner::Impl::open_gate(Attempt& attempt, Pipe& gate) {
  const char go = 1;
  const bool opened = ::write(gate.write_end.get(), &go, 1) == 1;
  gate.write_end.reset();
  try {
    if (!opened) throw std::runtime_error("the program's process ended before it could start");
    attempt.process->confirm_exec();
  } catch (const std::exception& error) {
    sampler->end_region();
    return record_end(attempt, {}, one_line(error.what()));
  }
  attempt.row.start_seconds = seconds_between(attempt.spawned, Clock::now());
  timings.start_seconds = attempt.row.start_seconds;
}

// The watch until the program exits, the last look at its tree, whatever
// of the tree is left killed, and the row.
void TrainingRunner::Impl::watch_program(Attempt& attempt, const TrialSpec& trial, const TrialContext& context,
                                         TrialSink& sink, Pipe& event_pipe, ProcessTreeProbe& tree,
                                         const ProgramOutput& output) {
  TrialRow& row = attempt.row;
  ChildProcess& process = *attempt.process;
  EventLineReader reports(event_pipe.read_end.get());
  TrialWatch watch(watch_settings(attempt, trial, context), process, reports, *sampler, tree, sink);
  const Clock::time_point go_time = Clock::now();
  timings.setup_seconds = seconds_between(attempt.entry, go_time);

  WatchReport seen;
  try {
    seen = watch.run();
  } catch (...) {
    sampler->stop();
    kill_tree(process.pid(), tree, attempt.cgroup.get());
    throw;
  }
  const Clock::time_point training_end = Clock::now();
  timings.training_seconds = seconds_between(go_time, training_end);
  std::int64_t largest = -1;
  tree.read_peak_rss(largest);  // the last look at the descendants still there
  kill_tree(process.pid(), tree, attempt.cgroup.get());
  const RegionSummary region = sampler->end_region();
  watch.forward_chunks();

  const ProcessTreeStats stats = tree.stats();
  const ProcessEnd end = process.reap();
  record_program_measures(row, stats, end, attempt.pre_exec_peak, region, seen);
  const ProgramProgress& progress = reports.progress();
  record_program_progress(row, progress, trial);
  seen.outcome.output_tail = output_tail(read_file_end(output.err.get(), kTailReadBytes), kTailLines, kTailBytes);
  record_end(attempt, std::move(seen.outcome));
  if (progress.out_of_memory) {
    // Caught by the program itself (a GPU's OOM in PyTorch): not the
    // kernel's, so only the program can say it; a search counts it as not fitting.
    attempt.row.reported_oom = 1;
    set_message(attempt,
                fmt::format("out of memory, the program says ({}); {}", *progress.out_of_memory, attempt.message));
  }
  if (progress.bad_lines > 0 && get_fixed(row.status) == status_name(TrialStatus::ok))
    set_message(attempt, fmt::format("{} events line{} not understood; the first: {}", progress.bad_lines,
                                     progress.bad_lines == 1 ? "" : "s", progress.first_bad_line));
  if (!region.gpu_warning.empty() && get_fixed(row.status) == status_name(TrialStatus::ok))
    set_message(attempt, attempt.message.empty() ? region.gpu_warning
                                                 : fmt::format("{}; {}", attempt.message, region.gpu_warning));
  timings.teardown_seconds = seconds_between(training_end, Clock::now());
}

TrainingRunner::TrainingRunner(const TrainingRunnerOptions& options) : impl_(std::make_unique<Impl>(options)) {}

TrainingRunner::~TrainingRunner() = default;

TrialRecord TrainingRunner::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  return impl_->run(trial, context, sink);
}

const std::vector<EventStatus>& TrainingRunner::counter_events() const { return impl_->events; }

std::string TrainingRunner::isolation() const { return std::string(isolation_name(impl_->cgroups.isolation())); }

std::string TrainingRunner::isolation_problem() const { return impl_->cgroups.problem(); }

std::string TrainingRunner::gpu_problem() const { return impl_->gpu_problem; }

std::size_t TrainingRunner::dataset_opens() const { return impl_->datasets.opens(); }

std::size_t TrainingRunner::dataset_decodes() const { return impl_->datasets.decodes(); }

const RunnerTimings& TrainingRunner::last_timings() const { return impl_->timings; }

std::unique_ptr<TrainingRunner> make_training_runner(const TrainingRunnerOptions& options) {
  return std::make_unique<TrainingRunner>(options);
}

}  // namespace memsweep
