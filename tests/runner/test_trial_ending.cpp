// How a trial process's end becomes the row's status, message and end
// columns: every way, on values (runner/trial_ending.hpp).

#include "runner/trial_ending.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <ostream>
#include <string_view>

namespace memsweep::runner::detail {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

ProcessOutcome exited_with(std::optional<ResultReport> result) {
  ProcessOutcome outcome;
  outcome.result = std::move(result);
  outcome.end.exited = true;
  outcome.seconds = 2.5;
  outcome.epoch = 3;
  return outcome;
}

ProcessOutcome killed_by(int signal_number) {
  ProcessOutcome outcome;
  outcome.end.signal = signal_number;
  outcome.seconds = 1.25;
  outcome.epoch = 2;
  return outcome;
}

TEST(DecideEnding, AReportedResultIsTheStatus) {
  const TrialEnding ok = decide_ending(exited_with(ResultReport{ResultOutcome::completed, "", 3, 0.1, 0.9}));
  EXPECT_EQ(ok.status, TrialStatus::ok);
  EXPECT_EQ(ok.message, "");
  EXPECT_EQ(ok.cause, end_cause::kExited);
  EXPECT_EQ(ok.signal, 0);
  EXPECT_FALSE(ok.oom_killed);

  const TrialEnding diverged = decide_ending(exited_with(ResultReport{ResultOutcome::diverged, "loss became nan", 1}));
  EXPECT_EQ(diverged.status, TrialStatus::diverged);
  EXPECT_EQ(diverged.message, "loss became nan");

  const TrialEnding stopped =
      decide_ending(exited_with(ResultReport{ResultOutcome::stopped, "stopped at epoch 2, step 5 of 30", 1}));
  EXPECT_EQ(stopped.status, TrialStatus::interrupted);
  EXPECT_EQ(stopped.message, "interrupted: stopped at epoch 2, step 5 of 30");
  EXPECT_EQ(stopped.cause, end_cause::kExited);
}

TEST(DecideEnding, AReportedFailureIsFailedWithItsMessage) {
  ProcessOutcome outcome = exited_with(std::nullopt);
  outcome.failure = FailureReport{"out of memory (std::bad_alloc) while training"};
  const TrialEnding ending = decide_ending(outcome);
  EXPECT_EQ(ending.status, TrialStatus::failed);
  EXPECT_EQ(ending.message, "out of memory (std::bad_alloc) while training");
  EXPECT_EQ(ending.cause, end_cause::kExited);
}

TEST(DecideEnding, TheRanksOwnKillsSayWhy) {
  ProcessOutcome budget = killed_by(SIGKILL);
  budget.kill = RankKill::budget;
  budget.kill_message = "stopped: RSS 300 MiB passed the budget 256 MiB";
  const TrialEnding over = decide_ending(budget);
  EXPECT_EQ(over.status, TrialStatus::over_budget);
  EXPECT_EQ(over.cause, end_cause::kBudget);
  EXPECT_EQ(over.message, budget.kill_message);
  EXPECT_EQ(over.signal, SIGKILL);

  ProcessOutcome late = killed_by(SIGKILL);
  late.kill = RankKill::timeout;
  late.kill_message = "stopped: no result within its time limit";
  EXPECT_EQ(decide_ending(late).status, TrialStatus::timeout);
  EXPECT_EQ(decide_ending(late).cause, end_cause::kTimeout);

  ProcessOutcome deaf = killed_by(SIGKILL);
  deaf.kill = RankKill::stop_unanswered;
  deaf.kill_message = "interrupted: did not stop";
  EXPECT_EQ(decide_ending(deaf).status, TrialStatus::interrupted);
  EXPECT_EQ(decide_ending(deaf).cause, end_cause::kStopped);

  // The rank's word stands even if the kernel also reported an OOM kill.
  late.oom_seen_in = "/proc/vmstat";
  EXPECT_EQ(decide_ending(late).status, TrialStatus::timeout);
  EXPECT_FALSE(decide_ending(late).oom_killed);
}

TEST(DecideEnding, TheOomKillerIsNamedWhereTheKernelSaysSo) {
  ProcessOutcome outcome = killed_by(SIGKILL);
  outcome.oom_seen_in = "the trial's cgroup";
  const TrialEnding ending = decide_ending(outcome);
  EXPECT_EQ(ending.status, TrialStatus::killed);
  EXPECT_EQ(ending.cause, end_cause::kOom);
  EXPECT_TRUE(ending.oom_killed);
  EXPECT_EQ(ending.message,
            "killed by the kernel's OOM killer (SIGKILL, reported by the trial's cgroup) at 1.25 s in epoch 2");

  // In a cgroup whose limit is the budget, that kill is the budget at work.
  outcome.cgroup_limit_is_budget = true;
  const TrialEnding budget = decide_ending(outcome);
  EXPECT_EQ(budget.status, TrialStatus::over_budget);
  EXPECT_EQ(budget.cause, end_cause::kBudget);
  EXPECT_TRUE(budget.oom_killed);
  EXPECT_THAT(budget.message, HasSubstr("stopped at its budget: the kernel's OOM killer ended it"));
}

TEST(DecideEnding, ASigkillNobodyExplainsIsKilledNotOom) {
  const TrialEnding ending = decide_ending(killed_by(SIGKILL));
  EXPECT_EQ(ending.status, TrialStatus::killed);
  EXPECT_EQ(ending.cause, end_cause::kSignal);
  EXPECT_FALSE(ending.oom_killed);
  EXPECT_THAT(ending.message, HasSubstr("killed by SIGKILL (Killed), which memsweep did not send"));
  EXPECT_EQ(decide_ending(killed_by(SIGTERM)).status, TrialStatus::killed);
}

TEST(DecideEnding, ACrashSignalIsAFailureOfTheTrial) {
  for (const int signal_number : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) {
    const TrialEnding ending = decide_ending(killed_by(signal_number));
    EXPECT_EQ(ending.status, TrialStatus::failed) << signal_number;
    EXPECT_EQ(ending.cause, end_cause::kCrash);
    EXPECT_EQ(ending.signal, signal_number);
    EXPECT_THAT(ending.message, HasSubstr("the trial process crashed: SIG"));
    EXPECT_THAT(ending.message, HasSubstr("at 1.25 s in epoch 2"));
  }
  EXPECT_EQ(decide_ending(killed_by(SIGSEGV)).message,
            "the trial process crashed: SIGSEGV (Segmentation fault) at 1.25 s in epoch 2");
}

TEST(DecideEnding, AnExitWithoutAResultIsAFailure) {
  ProcessOutcome outcome = exited_with(std::nullopt);
  outcome.end.exit_status = 3;
  const TrialEnding ending = decide_ending(outcome);
  EXPECT_EQ(ending.status, TrialStatus::failed);
  EXPECT_EQ(ending.cause, end_cause::kNoResult);
  EXPECT_EQ(ending.message, "the trial process exited with status 3 without a result at 2.50 s in epoch 3");
}

TEST(DecideEnding, AResultStandsEvenIfASignalEndedTheProcessAfterIt) {
  ProcessOutcome outcome = killed_by(SIGKILL);
  outcome.result = ResultReport{ResultOutcome::completed, "", 2, 0.2, 0.8};
  EXPECT_EQ(decide_ending(outcome).status, TrialStatus::ok);
}

TEST(WhenText, SaysTheTimeTheEpochAndThePhase) {
  EXPECT_EQ(when_text(0.4, 0, false, false), "at 0.40 s, before the first epoch");
  EXPECT_EQ(when_text(12.345, 4, true, false), "at 12.35 s in epoch 4 (evaluating)");
  EXPECT_EQ(when_text(12.345, 4, false, true), "at 12.35 s in epoch 4") << "a program's last reported epoch";
}

TEST(WhenText, AProgramWithoutEventsIsNotGivenAnEpoch) {
  EXPECT_EQ(when_text(36.0, 0, false, true), "at 36.00 s");
  ProcessOutcome outcome = killed_by(SIGKILL);
  outcome.program = true;
  outcome.seconds = 36.0;
  outcome.epoch = 0;  // it wrote no events lines
  outcome.oom_seen_in = "the trial's cgroup";
  const TrialEnding ending = decide_ending(outcome);
  EXPECT_THAT(ending.message, HasSubstr("at 36.00 s"));
  EXPECT_THAT(ending.message, Not(HasSubstr("epoch")));
  EXPECT_EQ(signal_text(SIGKILL), "SIGKILL (Killed)");
  EXPECT_TRUE(is_crash_signal(SIGBUS));
  EXPECT_FALSE(is_crash_signal(SIGTERM));
}

// ------------------------------------------------------- which status wins
// One row a precedence rule: the facts the rank gathered of a process's
// end, and the status and end cause that win.

struct PrecedenceRow {
  const char* rule;
  ProcessOutcome facts;
  TrialStatus status;
  std::string_view cause;
};

void PrintTo(const PrecedenceRow& row, std::ostream* out) { *out << row.rule; }

struct Facts {
  ProcessOutcome outcome;
  Facts& signal(int number) {
    outcome.end.signal = number;
    return *this;
  }
  Facts& exited(int status) {
    outcome.end.exited = true;
    outcome.end.exit_status = status;
    return *this;
  }
  Facts& rank_kill(RankKill kill) {
    outcome.kill = kill;
    outcome.kill_message = "the rank's words";
    return *this;
  }
  Facts& oom_reported() {
    outcome.oom_seen_in = "the trial's cgroup";
    return *this;
  }
  Facts& limit_is_budget() {
    outcome.cgroup_limit_is_budget = true;
    return *this;
  }
  Facts& result(ResultOutcome kind) {
    outcome.result = ResultReport{kind, "said", 1, 0.5, 0.5};
    return *this;
  }
  Facts& failure() {
    outcome.failure = FailureReport{"it failed"};
    return *this;
  }
  Facts& program() {
    outcome.program = true;
    return *this;
  }
  Facts& stop_requested() {
    outcome.stop_requested = true;
    return *this;
  }
  operator ProcessOutcome() const { return outcome; }  // NOLINT: rows read as sentences
};

Facts facts() { return {}; }

class StatusPrecedence : public ::testing::TestWithParam<PrecedenceRow> {};

TEST_P(StatusPrecedence, TheRuleDecides) {
  const PrecedenceRow& row = GetParam();
  const TrialEnding ending = decide_ending(row.facts);
  EXPECT_EQ(status_name(ending.status), status_name(row.status)) << row.rule;
  EXPECT_EQ(ending.cause, row.cause) << row.rule;
}

const PrecedenceRow kPrecedence[] = {
    {"the rank's budget kill beats the kernel's OOM report",
     facts().signal(SIGKILL).rank_kill(RankKill::budget).oom_reported(), TrialStatus::over_budget, end_cause::kBudget},
    {"the rank's timeout kill beats a result",
     facts().signal(SIGKILL).rank_kill(RankKill::timeout).result(ResultOutcome::completed), TrialStatus::timeout,
     end_cause::kTimeout},
    {"an unanswered stop is an interruption", facts().signal(SIGKILL).rank_kill(RankKill::stop_unanswered),
     TrialStatus::interrupted, end_cause::kStopped},
    {"a program asked to stop is interrupted whatever its end", facts().program().stop_requested().signal(SIGSEGV),
     TrialStatus::interrupted, end_cause::kStopped},
    {"a program asked to stop that exits with an error is interrupted", facts().program().stop_requested().exited(1),
     TrialStatus::interrupted, end_cause::kStopped},
    {"a SIGKILL the kernel reports as OOM is an OOM kill", facts().signal(SIGKILL).oom_reported(), TrialStatus::killed,
     end_cause::kOom},
    {"an OOM kill at a cgroup limit that is the budget is over budget",
     facts().signal(SIGKILL).oom_reported().limit_is_budget(), TrialStatus::over_budget, end_cause::kBudget},
    {"an OOM report does not explain a crash signal", facts().signal(SIGSEGV).oom_reported(), TrialStatus::failed,
     end_cause::kCrash},
    {"a crash signal is a failure", facts().signal(SIGBUS), TrialStatus::failed, end_cause::kCrash},
    {"a program's crash is a failure", facts().program().signal(SIGABRT), TrialStatus::failed, end_cause::kCrash},
    {"a signal nobody explains is a kill", facts().signal(SIGTERM), TrialStatus::killed, end_cause::kSignal},
    {"a result beats a signal after it", facts().signal(SIGKILL).oom_reported().result(ResultOutcome::completed),
     TrialStatus::ok, end_cause::kExited},
    {"a reported failure beats a signal after it", facts().signal(SIGKILL).failure(), TrialStatus::failed,
     end_cause::kExited},
    {"a program's exit status 0 is ok", facts().program().exited(0), TrialStatus::ok, end_cause::kExited},
    {"a program's other exit status is a failure", facts().program().exited(3), TrialStatus::failed,
     end_cause::kExited},
    {"a reported failure beats an exit status", facts().exited(1).failure(), TrialStatus::failed, end_cause::kExited},
    {"a completed result is ok", facts().exited(0).result(ResultOutcome::completed), TrialStatus::ok,
     end_cause::kExited},
    {"a diverged result is diverged", facts().exited(0).result(ResultOutcome::diverged), TrialStatus::diverged,
     end_cause::kExited},
    {"a stopped result is an interruption", facts().exited(0).result(ResultOutcome::stopped), TrialStatus::interrupted,
     end_cause::kExited},
    {"an exit without a result is a failure", facts().exited(0), TrialStatus::failed, end_cause::kNoResult},
};

INSTANTIATE_TEST_SUITE_P(DecideEnding, StatusPrecedence, ::testing::ValuesIn(kPrecedence));

TEST(NeedsOomEvidence, OnlyASigkillTheRankDidNotSend) {
  EXPECT_TRUE(needs_oom_evidence(facts().signal(SIGKILL)));
  EXPECT_FALSE(needs_oom_evidence(facts().signal(SIGKILL).rank_kill(RankKill::budget)));
  EXPECT_FALSE(needs_oom_evidence(facts().signal(SIGSEGV)));
  EXPECT_FALSE(needs_oom_evidence(facts().exited(0)));
}

}  // namespace
}  // namespace memsweep::runner::detail
