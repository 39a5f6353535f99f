#pragma once
// One attempt of a trial, whichever kind runs it (memsweep's trial
// process, builtin_trial_runner.hpp, or a user's program,
// program_trial_runner.hpp), and the steps every kind takes: the spawn into
// the trial's cgroup, the cgroup's limit, the sampler's region, the watch,
// the row's end. docs/runner.md describes the order.
//
// A step that ends the attempt early writes the row's status and returns
// false; the kind's runner then returns. Whatever changed what was measured
// without ending the attempt (no cgroup, no limit, no prediction) is a
// note, appended to the trial's message: never dropped.

#include "memsweep/estimate.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/sweep.hpp"
#include "memsweep/training_runner.hpp"
#include "runner/child_process.hpp"
#include "runner/dataset_cache.hpp"
#include "runner/gpu_reserve.hpp"
#include "runner/oom_evidence.hpp"
#include "runner/trial_cgroup.hpp"
#include "runner/trial_ending.hpp"
#include "runner/trial_guard.hpp"
#include "runner/trial_watch.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

using Clock = std::chrono::steady_clock;

// How long a trial process told to exit has before it is killed: it exits
// at once (std::_Exit), so only a process stuck in the kernel takes longer.
inline constexpr std::chrono::milliseconds kExitGrace{5000};

double seconds_between(Clock::time_point from, Clock::time_point to);

// What the rank's runner keeps from one trial to the next.
struct RunnerState {
  // Resolves the counters and finds the cgroup trials can go in, once.
  explicit RunnerState(const TrainingRunnerOptions& runner_options);

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

// One trial's attempt as it goes: its row, its process and what belongs
// to it.
struct Attempt {
  Attempt(const TrialSpec& trial, const TrialContext& context);

  // The row's message (whole; row.message holds its first bytes).
  void set_message(std::string_view text);
  // A failure that changed what was measured, for the message's end.
  void note(std::string text);
  // The row, and its message with the notes after it ("; " between).
  TrialRecord record() &&;

  Clock::time_point entry;
  TrialRow row;
  std::string message;
  std::vector<std::string> notes;
  std::optional<std::uint64_t> budget;
  std::vector<RankGpu> gpus;         // the trial's own (trial_gpus.hpp)
  std::vector<GpuReserve> reserves;  // holding its GPU limit, one per device, until the attempt ends
  std::unique_ptr<TrialCgroup> cgroup;
  bool cgroup_limit_is_budget = false;
  OomCounters oom_before;
  Clock::time_point spawned;  // just before the fork
  std::optional<ChildProcess> process;
  RegionBaseline baseline;
};

// The row's status and message, its end time and wall time.
void finish(Attempt& attempt, TrialStatus status, std::string_view message);

// The prologue every kind of trial shares, so that a new kind writes only
// what differs: the trial counted (its cgroup's name) and the OOM counters
// read before it; the fork and exec, timed from here; the process made the
// trial's: its pid in the row, its cgroup, the isolation, the guard told
// what to end should the rank die; and `reports_fd`, the rank's end of the
// channel the trial reports on, made non-blocking (the watch polls it). A
// process that cannot start fails the trial (false).
[[nodiscard]] bool spawn(RunnerState& runner, Attempt& attempt, const SpawnRequest& request, int reports_fd);

// The threads a trial is given: --threads, or the CPUs the rank may use.
int trial_threads(const TrainingRunnerOptions& options);

// The trial's process is ready (memsweep's trainer) or has exec'd (a
// program): the start cost, in the row and the runner's timings.
void record_started(RunnerState& runner, Attempt& attempt);

// `pid` into `group`, which becomes the trial's; a group it cannot join is
// let go with a note: the trial is then measured through /proc alone.
void join_cgroup(Attempt& attempt, std::unique_ptr<TrialCgroup> group, pid_t pid);

// The budget as the cgroup's limit: the kernel holds the trial to it even
// between two of the rank's checks. A limit that cannot be set is a note;
// the rank's checks alone enforce the budget then.
void limit_cgroup_to_budget(Attempt& attempt);

// The sampler on the process, from a fresh region: what a trial whose sink
// threw left behind is dropped first. `held`: its first sample waits for
// Sampler::release().
void begin_region(RunnerState& runner, const Attempt& attempt, std::int32_t phase, std::unique_ptr<MemoryProbe> probe,
                  bool held = false);

WatchSettings watch_settings(const RunnerState& runner, const Attempt& attempt, const TrialSpec& trial,
                             const TrialContext& context);

// The watch from the go-ahead (already given) to the trial's end, timed
// into the runner's timings. When it throws (the sink's failure), the
// sampler stops and `abandon` ends what is left of the trial before the
// exception passes on.
WatchReport watch_until_end(RunnerState& runner, const Attempt& attempt, TrialWatch& watch,
                            const std::function<void()>& abandon = {});

// The row's status and end columns from how the process ended (reaped
// here), with the cgroup's peak and the kernel's OOM evidence.
void record_end(RunnerState& runner, Attempt& attempt, ProcessOutcome outcome, std::string_view before_message = {});

// The columns a trial's row takes from its samples alone, whoever ran it.
void record_sampled_means(TrialRow& row, const RegionSummary& region);

}  // namespace memsweep::runner::detail
