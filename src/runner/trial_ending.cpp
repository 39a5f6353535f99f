#include "runner/trial_ending.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstring>

namespace memsweep::runner::detail {

std::string signal_text(int signal_number) {
  const char* abbreviation = ::sigabbrev_np(signal_number);
  const char* description = ::sigdescr_np(signal_number);
  if (abbreviation == nullptr) return fmt::format("signal {}", signal_number);
  return description == nullptr ? fmt::format("SIG{}", abbreviation)
                                : fmt::format("SIG{} ({})", abbreviation, description);
}

bool is_crash_signal(int signal_number) {
  switch (signal_number) {
    case SIGSEGV:
    case SIGBUS:
    case SIGABRT:
    case SIGFPE:
    case SIGILL:
    case SIGSYS:
    case SIGTRAP: return true;
    default: return false;
  }
}

bool needs_oom_evidence(const ProcessOutcome& outcome) {
  return outcome.end.signal == SIGKILL && outcome.kill == RankKill::none;
}

namespace {

// Each step below starts from `ending`, which carries the end's signal, and
// fills in the status, cause and message of one kind of end.

// The rank's own kills: it knows why.
TrialEnding rank_kill(const ProcessOutcome& outcome, TrialEnding ending) {
  switch (outcome.kill) {
    case RankKill::budget:
      ending.status = TrialStatus::over_budget;
      ending.cause = end_cause::kBudget;
      break;
    case RankKill::gpu_limit:
      ending.status = TrialStatus::over_budget;
      ending.cause = end_cause::kGpu;
      break;
    case RankKill::timeout:
      ending.status = TrialStatus::timeout;
      ending.cause = end_cause::kTimeout;
      break;
    case RankKill::stop_unanswered:
      ending.status = TrialStatus::interrupted;
      ending.cause = end_cause::kStopped;
      break;
    case RankKill::none: break;  // not a kill: decide_ending does not ask
  }
  ending.message = outcome.kill_message;
  return ending;
}

// A program asked to stop ends however it likes (SIGTERM's default, an exit
// of its own): either way the sweep stopped it, and a resume runs it.
TrialEnding stopped_program(const std::string& when, TrialEnding ending) {
  ending.status = TrialStatus::interrupted;
  ending.cause = end_cause::kStopped;
  ending.message = fmt::format("interrupted: the sweep stopped; the program ended {}", when);
  return ending;
}

// SIGKILL with the kernel's OOM kill on record: at the budget when the
// cgroup's limit is the budget, else a kill by the kernel.
TrialEnding oom_kill(const ProcessOutcome& outcome, const std::string& when, TrialEnding ending) {
  ending.oom_killed = true;
  if (outcome.cgroup_limit_is_budget) {
    ending.status = TrialStatus::over_budget;
    ending.cause = end_cause::kBudget;
    ending.message = fmt::format(
        "stopped at its budget: the kernel's OOM killer ended it at its cgroup's limit (the budget) {}", when);
  } else {
    ending.status = TrialStatus::killed;
    ending.cause = end_cause::kOom;
    ending.message =
        fmt::format("killed by the kernel's OOM killer (SIGKILL, reported by {}) {}", outcome.oom_seen_in, when);
  }
  return ending;
}

// Killed by someone else, before it reported: the kernel, a crash, or a
// person.
TrialEnding foreign_signal(const ProcessOutcome& outcome, const std::string& when, TrialEnding ending) {
  if (outcome.end.signal == SIGKILL && !outcome.oom_seen_in.empty()) return oom_kill(outcome, when, ending);
  if (is_crash_signal(outcome.end.signal)) {
    ending.status = TrialStatus::failed;
    ending.cause = end_cause::kCrash;
    ending.message = fmt::format("the {} crashed: {} {}", outcome.program ? "program" : "trial process",
                                 signal_text(outcome.end.signal), when);
    if (!outcome.output_tail.empty()) ending.message += ": " + outcome.output_tail;
    return ending;
  }
  ending.status = TrialStatus::killed;
  ending.cause = end_cause::kSignal;
  ending.message = fmt::format("killed by {}, which memsweep did not send (no OOM kill reported), {}",
                               signal_text(outcome.end.signal), when);
  return ending;
}

// A program's own exit: its status is the verdict (it sends no result).
TrialEnding program_exit(const ProcessOutcome& outcome, const std::string& when, TrialEnding ending) {
  ending.cause = end_cause::kExited;
  if (outcome.end.exit_status == 0) return ending;  // ok
  ending.status = TrialStatus::failed;
  ending.message = fmt::format("the program exited with status {} {}", outcome.end.exit_status, when);
  if (!outcome.output_tail.empty()) ending.message += ": " + outcome.output_tail;
  return ending;
}

// What memsweep's trial process reported before it exited.
TrialEnding reported_result(const ResultReport& result, TrialEnding ending) {
  ending.cause = end_cause::kExited;
  switch (result.outcome) {
    case ResultOutcome::completed: ending.status = TrialStatus::ok; break;
    case ResultOutcome::diverged:
      ending.status = TrialStatus::diverged;
      ending.message = result.message;
      break;
    case ResultOutcome::stopped:
      ending.status = TrialStatus::interrupted;
      ending.message = "interrupted: " + result.message;
      break;
  }
  return ending;
}

TrialEnding without_result(const ProcessOutcome& outcome, const std::string& when, TrialEnding ending) {
  ending.status = TrialStatus::failed;
  ending.cause = end_cause::kNoResult;
  ending.message = outcome.end.exited ? fmt::format("the trial process exited with status {} without a result {}",
                                                    outcome.end.exit_status, when)
                                      : fmt::format("the trial process ended without a result {}", when);
  return ending;
}

}  // namespace

// The precedence, first match wins (tests/runner/test_trial_ending.cpp
// holds one row per rule).
TrialEnding decide_ending(const ProcessOutcome& outcome) {
  TrialEnding ending;
  ending.signal = outcome.end.signal;
  const std::string when = when_text(outcome.seconds, outcome.epoch, outcome.evaluating, outcome.program);
  if (outcome.kill != RankKill::none) return rank_kill(outcome, ending);
  if (outcome.program && outcome.stop_requested) return stopped_program(when, ending);
  if (outcome.end.signal != 0 && !outcome.result && !outcome.failure) return foreign_signal(outcome, when, ending);
  if (outcome.program) return program_exit(outcome, when, ending);
  if (outcome.failure) {
    ending.status = TrialStatus::failed;
    ending.cause = end_cause::kExited;
    ending.message = outcome.failure->message;
    return ending;
  }
  if (outcome.result) return reported_result(*outcome.result, ending);
  return without_result(outcome, when, ending);
}

}  // namespace memsweep::runner::detail
