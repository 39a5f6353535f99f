#include "runner/trial_attempt.hpp"

#include "common/duration_text.hpp"
#include "memsweep/trainer.hpp"
#include "runner/budget.hpp"
#include "runner/trial_messages.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace memsweep::runner::detail {
namespace {

double unix_seconds_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<std::chrono::milliseconds> time_limit(const TrainingRunnerOptions& options, const TrialSpec& trial) {
  std::optional<std::chrono::milliseconds> limit = options.trial_timeout;
  if (trial.timeout_seconds) {
    const std::chrono::milliseconds own = limit_milliseconds(*trial.timeout_seconds);
    limit = limit ? std::min(*limit, own) : own;
  }
  return limit;
}

// Into its cgroup, where the node lets the rank make one, while it execs: a
// move between groups waits for an RCU grace period (about 10 ms), as long
// as the exec's loading takes, so the two overlap. What the process took
// before the move (its start-up) is charged to the rank's group; its own
// RSS and peak are whole either way. Without a group the trial is measured
// through /proc alone, and says so; the next trial tries again.
void place_in_cgroup(RunnerState& runner, Attempt& attempt) {
  if (runner.cgroups.isolation() == Isolation::proc) return;
  std::unique_ptr<TrialCgroup> group;
  try {
    group = runner.cgroups.create(fmt::format("memsweep-{}-trial-{}", ::getpid(), runner.trials_started), std::nullopt);
  } catch (const std::exception& error) {
    return attempt.note(fmt::format("no cgroup of its own ({}): measured through /proc alone", one_line(error.what())));
  }
  join_cgroup(attempt, std::move(group), attempt.process->pid());
}

}  // namespace

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

Attempt::Attempt(const TrialSpec& trial, const TrialContext& context) : entry(Clock::now()) {
  row = trial_row_for(trial, context.attempt);
  row.run = context.run;
  row.rank = context.rank;
  set_fixed(row.host, context.host);
  row.start_time = unix_seconds_now();
  budget = effective_budget(context.mem_budget_bytes, trial.mem_budget_bytes);
}

void Attempt::set_message(std::string_view text) {
  message = std::string(text);
  set_fixed(row.message, text);
}

void Attempt::note(std::string text) { notes.push_back(std::move(text)); }

TrialRecord Attempt::record() && {
  std::string whole = std::move(message);
  for (const std::string& text : notes) whole += (whole.empty() ? "" : "; ") + text;
  TrialRecord record{row, {}};
  memsweep::set_message(record, whole);
  return record;
}

void finish(Attempt& attempt, TrialStatus status, std::string_view message) {
  TrialRow& row = attempt.row;
  set_fixed(row.status, status_name(status));
  attempt.set_message(message);
  row.end_time = unix_seconds_now();
  row.wall_seconds = seconds_between(attempt.entry, Clock::now());
}

bool spawn(RunnerState& runner, Attempt& attempt, const SpawnRequest& request, int reports_fd) {
  ++runner.trials_started;
  attempt.oom_before = read_oom_counters(runner.cgroups);
  attempt.spawned = Clock::now();
  try {
    attempt.process.emplace(ChildProcess::spawn(request));
  } catch (const std::exception& error) {
    finish(attempt, TrialStatus::failed, one_line(error.what()));
    return false;
  }
  ::fcntl(reports_fd, F_SETFL, O_NONBLOCK);
  const pid_t pid = attempt.process->pid();
  attempt.row.pid = pid;
  place_in_cgroup(runner, attempt);
  if (runner.guard)
    runner.guard->watch({.root = pid,
                         .own_group = request.program,
                         .cgroup = attempt.cgroup ? attempt.cgroup->path() : std::filesystem::path()});
  set_fixed(attempt.row.isolation, isolation_name(attempt.cgroup ? runner.cgroups.isolation() : Isolation::proc));
  return true;
}

int trial_threads(const TrainingRunnerOptions& options) {
  return options.threads > 0 ? options.threads : default_thread_count();
}

void record_started(RunnerState& runner, Attempt& attempt) {
  attempt.row.start_seconds = seconds_between(attempt.spawned, Clock::now());
  runner.timings.start_seconds = attempt.row.start_seconds;
}

void join_cgroup(Attempt& attempt, std::unique_ptr<TrialCgroup> group, pid_t pid) {
  try {
    group->add(pid);
  } catch (const std::exception& error) {
    return attempt.note(
        fmt::format("not moved into its cgroup ({}): measured through /proc alone", one_line(error.what())));
  }
  attempt.cgroup = std::move(group);
}

void limit_cgroup_to_budget(Attempt& attempt) {
  if (!attempt.budget || !attempt.cgroup) return;
  try {
    attempt.cgroup->set_limit(*attempt.budget);
    attempt.cgroup_limit_is_budget = true;
  } catch (const std::exception& error) {
    attempt.note(fmt::format("the budget is not its cgroup's limit ({}): only the rank's checks held it to the budget",
                             one_line(error.what())));
  }
}

void begin_region(RunnerState& runner, const Attempt& attempt, std::int32_t phase, std::unique_ptr<MemoryProbe> probe,
                  bool held) {
  Sampler& sampler = *runner.sampler;
  sampler.drain([](const SampleChunk&) {});
  sampler.set_phase(0, phase);
  sampler.set_target(attempt.process->pid(), std::move(probe));
  if (held)
    sampler.begin_held_region(attempt.baseline);
  else
    sampler.begin_region(attempt.baseline);
}

WatchSettings watch_settings(const RunnerState& runner, const Attempt& attempt, const TrialSpec& trial,
                             const TrialContext& context) {
  WatchSettings settings;
  settings.trial_id = attempt.row.trial_id;
  settings.attempt = context.attempt;
  settings.rank = context.rank;
  settings.counter_slots = runner.counter_slots;
  settings.check_interval = runner.options.check_interval;
  settings.budget_bytes = attempt.budget;
  if (attempt.row.gpu_limit >= 0) settings.gpu_limit_bytes = attempt.row.gpu_limit;
  settings.time_limit = time_limit(runner.options, trial);
  settings.stop_grace = runner.options.stop_grace;
  settings.external_stop = context.stop;
  settings.program = trial.program.has_value();
  return settings;
}

WatchReport watch_until_end(RunnerState& runner, const Attempt& attempt, TrialWatch& watch,
                            const std::function<void()>& abandon) {
  RunnerTimings& timings = runner.timings;
  const Clock::time_point go = Clock::now();
  timings.setup_seconds = seconds_between(attempt.entry, go) - timings.dataset_seconds;
  WatchReport seen;
  try {
    seen = watch.run();
  } catch (...) {
    runner.sampler->stop();
    if (abandon) abandon();
    throw;
  }
  timings.training_seconds = seconds_between(go, Clock::now());
  return seen;
}

void record_end(RunnerState& runner, Attempt& attempt, ProcessOutcome outcome, std::string_view before_message) {
  TrialRow& row = attempt.row;
  outcome.end = attempt.process->reap(kExitGrace);
  if (attempt.cgroup) {
    row.cgroup_peak = attempt.cgroup->report().peak_bytes;
    outcome.cgroup_limit_is_budget = attempt.cgroup_limit_is_budget;
  }
  if (needs_oom_evidence(outcome))
    outcome.oom_seen_in = oom_kill_seen(attempt.oom_before, read_oom_counters(runner.cgroups), attempt.cgroup.get());
  const TrialEnding ending = decide_ending(outcome);
  row.end_signal = ending.signal;
  row.oom_killed = ending.oom_killed ? 1 : 0;
  set_fixed(row.end_cause, ending.cause);
  finish(attempt, ending.status,
         before_message.empty() ? ending.message : fmt::format("{}: {}", before_message, ending.message));
}

void record_sampled_means(TrialRow& row, const RegionSummary& region) {
  row.rss_mean = region.mean_rss_bytes;
  row.sys_used_mean = region.sys_used_mean_bytes;
  row.samples = region.samples;
  row.dropped_samples = region.dropped_samples;
  row.gpu_peak = region.gpu_peak_bytes;
  set_fixed(row.gpu_devices, region.gpu_devices);
  set_fixed(row.gpu_peak_source, region.gpu_peak_source);
}

}  // namespace memsweep::runner::detail
