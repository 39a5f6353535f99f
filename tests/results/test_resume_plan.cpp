// plan_resume: which trials run again, with which attempt number, and the
// rows for attempts lost with their rank or with rank 0 (`interrupted`, or
// `killed` when the attempt before was lost with its rank too). Pure: rows
// and series by hand.

#include "memsweep/results.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>

namespace memsweep {
namespace {

using ::testing::HasSubstr;

std::vector<TrialSpec> four_trials() {
  return parse_sweep(R"([sweep]
name = "resume"
[grid]
batch_size = [8, 16, 32, 64]
)",
                     "resume.toml")
      .trials.list();
}

struct RowSpec {
  int trial;  // index into four_trials(); -1: a trial of another sweep
  int attempt;
  std::string_view status;
  std::string_view end_cause = {};
};
struct SeriesSpec {
  int trial;
  int attempt;
};

struct PlanCase {
  std::string name;
  std::vector<RowSpec> rows;
  std::vector<SeriesSpec> series;
  int retry_killed;
  std::vector<PendingTrial> pending;
  std::size_t already_final;
  std::size_t killed_not_retried;
  std::vector<std::string_view> lost_statuses;  // of the rows written for lost attempts, in order
  std::size_t unknown_rows;
};

// What gtest prints for a case (ctest's list shows it).
void PrintTo(const PlanCase& plan_case, std::ostream* out) { *out << plan_case.name; }

std::string id_for(const std::vector<TrialSpec>& trials, int index) {
  return index < 0 ? std::string("0123456789ab") : trials[static_cast<std::size_t>(index)].id;
}

SeriesSummary series_of(const std::string& id, int attempt) {
  SeriesSummary series;
  series.trial_id = id;
  series.attempt = attempt;
  series.rank = 3;
  series.samples = 250;
  series.first_rss = 100 << 20;
  series.peak_rss = 300 << 20;
  series.mean_rss = 200 << 20;
  series.sys_used_mean = 5e9;
  series.last_t = 2.5;
  series.last_epoch = 2;
  return series;
}

class ResumePlans : public ::testing::TestWithParam<PlanCase> {};

TEST_P(ResumePlans, PendingTrialsAndCounts) {
  const PlanCase& c = GetParam();
  const std::vector<TrialSpec> trials = four_trials();
  ASSERT_EQ(trials.size(), 4u);
  std::vector<TrialRow> rows;
  for (const RowSpec& spec : c.rows) {
    TrialRow row;
    set_fixed(row.trial_id, id_for(trials, spec.trial));
    row.attempt = spec.attempt;
    set_fixed(row.status, spec.status);
    set_fixed(row.end_cause, spec.end_cause);
    rows.push_back(row);
  }
  std::vector<SeriesSummary> series;
  for (const SeriesSpec& spec : c.series) series.push_back(series_of(id_for(trials, spec.trial), spec.attempt));

  const ResumePlan plan = plan_resume(trials, rows, series, c.retry_killed, 1, LostAttempts::rank_died);
  EXPECT_EQ(plan.pending.expand(trials), c.pending);
  EXPECT_EQ(plan.pending.count(trials.size()), c.pending.size());
  EXPECT_EQ(plan.already_final, c.already_final);
  EXPECT_EQ(plan.killed_not_retried, c.killed_not_retried);
  std::vector<std::string> lost_statuses;
  for (const TrialRecord& lost : plan.lost_rows) lost_statuses.push_back(get_fixed(lost.row.status));
  EXPECT_EQ(lost_statuses, std::vector<std::string>(c.lost_statuses.begin(), c.lost_statuses.end()));
  EXPECT_EQ(plan.unknown_rows, c.unknown_rows);
}

std::vector<PendingTrial> all_first_attempts() { return {{0, 0}, {1, 0}, {2, 0}, {3, 0}}; }

INSTANTIATE_TEST_SUITE_P(
    Cases, ResumePlans,
    ::testing::Values(
        PlanCase{"EmptyFileRunsEverything", {}, {}, 0, all_first_attempts(), 0, 0, {}, 0},
        PlanCase{"OkIsDone", {{0, 0, "ok"}}, {{0, 0}}, 0, {{1, 0}, {2, 0}, {3, 0}}, 1, 0, {}, 0},
        PlanCase{"FailedDivergedOverBudgetTimeoutAreDone",
                 {{0, 0, "failed"}, {1, 0, "diverged"}, {2, 0, "over_budget"}, {3, 0, "timeout"}},
                 {},
                 0,
                 {},
                 4,
                 0,
                 {},
                 0},
        PlanCase{"InterruptedRunsAgainWithTheNextAttempt",
                 {{1, 0, "interrupted"}},
                 {{1, 0}},
                 0,
                 {{0, 0}, {1, 1}, {2, 0}, {3, 0}},
                 0,
                 0,
                 {},
                 0},
        PlanCase{"KilledRowNotRetriedByDefault", {{2, 0, "killed"}}, {}, 0, {{0, 0}, {1, 0}, {3, 0}}, 0, 1, {}, 0},
        PlanCase{
            "KilledRowRetriedOnceWhenAsked", {{2, 0, "killed"}}, {}, 1, {{0, 0}, {1, 0}, {2, 1}, {3, 0}}, 0, 0, {}, 0},
        // A lost rank is no result: the attempt is interrupted and runs again
        // without --retry-killed.
        PlanCase{"OrphanSeriesIsInterruptedAndRunsAgain",
                 {},
                 {{2, 0}},
                 0,
                 {{0, 0}, {1, 0}, {2, 1}, {3, 0}},
                 0,
                 0,
                 {"interrupted"},
                 0},
        // The rule of two: lost with its rank both of the last two times.
        PlanCase{"TwoOrphansInARowAreKilled",
                 {},
                 {{2, 0}, {2, 1}},
                 0,
                 {{0, 0}, {1, 0}, {3, 0}},
                 0,
                 1,
                 {"interrupted", "killed"},
                 0},
        PlanCase{"TwoOrphansInARowRetriedWhenAsked",
                 {},
                 {{2, 0}, {2, 1}},
                 1,
                 {{0, 0}, {1, 0}, {2, 2}, {3, 0}},
                 0,
                 0,
                 {"interrupted", "killed"},
                 0},
        PlanCase{"OrphanAfterARowLostWithItsRankIsKilled",
                 {{1, 0, "interrupted", "rank_lost"}},
                 {{1, 0}, {1, 1}},
                 0,
                 {{0, 0}, {2, 0}, {3, 0}},
                 0,
                 1,
                 {"killed"},
                 0},
        PlanCase{"OrphanAfterANodeLostOrSilentRowIsKilled",
                 {{1, 0, "interrupted", "node_lost"}, {2, 0, "interrupted", "silent"}},
                 {{1, 1}, {2, 1}},
                 0,
                 {{0, 0}, {3, 0}},
                 0,
                 2,
                 {"killed", "killed"},
                 0},
        // A finished attempt between two losses breaks the pair.
        PlanCase{"AnOrphanAfterAKilledAttemptIsOnlyInterrupted",
                 {{2, 0, "killed"}},
                 {{2, 0}, {2, 1}},
                 1,
                 {{0, 0}, {1, 0}, {2, 2}, {3, 0}},
                 0,
                 0,
                 {"interrupted"},
                 0},
        PlanCase{"OrphanAfterAnInterruptedAttempt",
                 {{3, 0, "interrupted"}},
                 {{3, 0}, {3, 1}},
                 5,
                 {{0, 0}, {1, 0}, {2, 0}, {3, 2}},
                 0,
                 0,
                 {"interrupted"},
                 0},
        PlanCase{"FinalWinsOverLaterInterruptions",
                 {{0, 0, "interrupted"}, {0, 1, "ok"}, {0, 2, "interrupted"}},
                 {},
                 0,
                 {{1, 0}, {2, 0}, {3, 0}},
                 1,
                 0,
                 {},
                 0},
        PlanCase{"UnreadableStatusRunsAgain", {{1, 4, "bogus"}}, {}, 0, {{0, 0}, {1, 5}, {2, 0}, {3, 0}}, 0, 0, {}, 0},
        PlanCase{"OtherSweepsRowsAreCountedAndKept",
                 {{-1, 0, "ok"}, {-1, 1, "ok"}},
                 {{-1, 2}},
                 0,
                 all_first_attempts(),
                 0,
                 0,
                 {},
                 2}),
    [](const ::testing::TestParamInfo<PlanCase>& case_info) { return case_info.param.name; });

TEST(ResumeLostRow, CarriesTheSeriesFiguresAndTheTrialsHyperparameters) {
  const std::vector<TrialSpec> trials = four_trials();
  const SeriesSummary series = series_of(trials[1].id, 2);
  const ResumePlan plan = plan_resume(trials, {}, {series}, 0, 7, LostAttempts::rank_died);
  ASSERT_EQ(plan.lost_rows.size(), 1u);
  const TrialRow& row = plan.lost_rows[0].row;
  EXPECT_EQ(get_fixed(row.trial_id), trials[1].id);
  EXPECT_EQ(row.attempt, 2);
  EXPECT_EQ(row.run, 7);
  EXPECT_EQ(row.batch_size, 16);
  EXPECT_EQ(get_fixed(row.definition), trials[1].canonical_text());
  EXPECT_EQ(row.rank, 3);
  EXPECT_EQ(get_fixed(row.host), "");
  EXPECT_EQ(row.rss_peak, 300 << 20);
  EXPECT_EQ(row.rss_baseline, 100 << 20);
  EXPECT_EQ(row.rss_footprint, 200 << 20);
  EXPECT_EQ(row.rss_mean, 200 << 20);
  EXPECT_EQ(row.sys_used_mean, 5e9);
  EXPECT_EQ(row.samples, 250u);
  EXPECT_EQ(row.wall_seconds, 2.5);
  const std::string message = plan.lost_rows[0].message;
  EXPECT_EQ(get_fixed(row.message), message) << "short enough for the row's column";
  EXPECT_THAT(message, HasSubstr("rank 3 was lost"));
  EXPECT_THAT(message, HasSubstr("2.500 s"));
  EXPECT_THAT(message, HasSubstr("250 samples"));
  EXPECT_THAT(message, HasSubstr("300.00 MiB"));
  EXPECT_EQ(get_fixed(row.status), "interrupted");
  EXPECT_EQ(get_fixed(row.end_cause), "rank_lost");
  // The attempt after the lost one, without --retry-killed.
  EXPECT_EQ(plan.pending.expand(trials)[1], (PendingTrial{1, 3}));
}

// The job script knows a node was lost: that is the rows' cause.
TEST(ResumeLostRow, TheJobScriptsCauseIsRecorded) {
  const std::vector<TrialSpec> trials = four_trials();
  const ResumePlan plan =
      plan_resume(trials, {}, {series_of(trials[1].id, 0)}, 0, 2, LostAttempts::rank_died, end_cause::kNodeLost);
  ASSERT_EQ(plan.lost_rows.size(), 1u);
  EXPECT_EQ(get_fixed(plan.lost_rows[0].row.status), "interrupted");
  EXPECT_EQ(get_fixed(plan.lost_rows[0].row.end_cause), "node_lost");
  EXPECT_THAT(plan.lost_rows[0].message, HasSubstr("a node of the job was lost"));
}

// The second loss in a row: killed, saying why, and not run again by default.
TEST(ResumeLostRow, TheSecondLossInARowSaysTheTrialIsTheLikelyCause) {
  const std::vector<TrialSpec> trials = four_trials();
  const ResumePlan first = plan_resume(trials, {}, {series_of(trials[0].id, 0)}, 0, 1, LostAttempts::rank_died);
  ASSERT_EQ(first.lost_rows.size(), 1u);
  const ResumePlan second =
      plan_resume(trials, {first.lost_rows[0].row}, {series_of(trials[0].id, 0), series_of(trials[0].id, 1)}, 0, 2,
                  LostAttempts::rank_died);
  ASSERT_EQ(second.lost_rows.size(), 1u);
  EXPECT_EQ(second.lost_rows[0].row.attempt, 1);
  EXPECT_EQ(get_fixed(second.lost_rows[0].row.status), "killed");
  EXPECT_THAT(second.lost_rows[0].message, HasSubstr("its rank died both times it ran"));
  EXPECT_THAT(second.lost_rows[0].message, HasSubstr("--retry-killed"));
  EXPECT_EQ(second.pending.expand(trials), (std::vector<PendingTrial>{{1, 0}, {2, 0}, {3, 0}}));
}

// Rank 0 died (its run has no stop mark): the workers' trials were healthy,
// so their attempts are interrupted and run again, whatever --retry-killed
// says, and they count as no kill.
TEST(ResumeLostRow, AttemptsLostWithRankZeroAreInterruptedAndRunAgain) {
  const std::vector<TrialSpec> trials = four_trials();
  std::vector<TrialRow> rows(1);
  set_fixed(rows[0].trial_id, trials[2].id);
  set_fixed(rows[0].status, "killed");  // killed once before: retry_killed 0 would keep it
  const ResumePlan plan = plan_resume(trials, rows, {series_of(trials[1].id, 0), series_of(trials[2].id, 1)}, 0, 4,
                                      LostAttempts::writer_died);
  ASSERT_EQ(plan.lost_rows.size(), 2u);
  for (const auto& [row, message] : plan.lost_rows) {
    EXPECT_EQ(get_fixed(row.status), "interrupted");
    EXPECT_EQ(get_fixed(row.end_cause), "rank_lost");
    EXPECT_THAT(message, HasSubstr("interrupted: rank 0 died while rank 3 ran the trial"));
    EXPECT_EQ(row.rss_peak, 300 << 20) << "what the samples reached is kept";
  }
  EXPECT_EQ(plan.pending.expand(trials), (std::vector<PendingTrial>{{0, 0}, {1, 1}, {3, 0}}))
      << "trial 1 runs again; trial 2 stays out for its earlier kill only";
  EXPECT_EQ(plan.killed_not_retried, 1u);
}

TEST(ResumeLostRow, RowsComeInTheSweepsOrderWhateverTheSamplesOrder) {
  const std::vector<TrialSpec> trials = four_trials();
  const ResumePlan plan =
      plan_resume(trials, {}, {series_of(trials[3].id, 0), series_of(trials[0].id, 1), series_of(trials[0].id, 0)}, 0,
                  1, LostAttempts::rank_died);
  ASSERT_EQ(plan.lost_rows.size(), 3u);
  EXPECT_EQ(get_fixed(plan.lost_rows[0].row.trial_id), trials[0].id);
  EXPECT_EQ(plan.lost_rows[0].row.attempt, 0);
  EXPECT_EQ(plan.lost_rows[1].row.attempt, 1);
  EXPECT_EQ(get_fixed(plan.lost_rows[2].row.trial_id), trials[3].id);
}

}  // namespace
}  // namespace memsweep

namespace memsweep {
namespace {

std::vector<TrialRow> rows_with_statuses(const std::vector<TrialSpec>& trials,
                                         const std::vector<std::pair<int, std::string_view>>& attempts) {
  std::vector<int> next_attempt(trials.size(), 0);
  std::vector<TrialRow> rows;
  for (const auto& [trial, status] : attempts) {
    TrialRow row =
        trial_row_for(trials[static_cast<std::size_t>(trial)], next_attempt[static_cast<std::size_t>(trial)]++);
    set_fixed(row.status, status);
    rows.push_back(row);
  }
  return rows;
}

// --retry-failed: exactly the trials whose latest attempt failed run once
// more, as their next attempt; ok and other final statuses stay done.
TEST(ResumeRetry, FailedTrialsRunOnceMore) {
  const std::vector<TrialSpec> trials = four_trials();
  const std::vector<TrialRow> rows =
      rows_with_statuses(trials, {{0, "ok"}, {1, "failed"}, {2, "diverged"}, {3, "failed"}, {3, "failed"}});
  const ResumePlan plan =
      plan_resume(trials, rows, {}, RetryPolicy(0, {TrialStatus::failed}), 1, LostAttempts::rank_died);
  EXPECT_EQ(plan.pending.expand(trials), (std::vector<PendingTrial>{{1, 1}, {3, 2}}));
  EXPECT_EQ(plan.already_final, 2u);
  EXPECT_EQ(plan.retried.at("failed"), 2u);

  // Without the policy the failed trials are done, as before.
  const ResumePlan plain = plan_resume(trials, rows, {}, 0, 1, LostAttempts::rank_died);
  EXPECT_TRUE(plain.pending.expand(trials).empty());
  EXPECT_EQ(plain.already_final, 4u);
}

// A retried trial that then succeeded is done: only the latest attempt's
// status decides.
TEST(ResumeRetry, ARetryThatSucceededIsDone) {
  const std::vector<TrialSpec> trials = four_trials();
  const std::vector<TrialRow> rows =
      rows_with_statuses(trials, {{0, "failed"}, {0, "ok"}, {1, "ok"}, {2, "ok"}, {3, "timeout"}});
  const ResumePlan plan = plan_resume(trials, rows, {}, RetryPolicy(0, {TrialStatus::failed, TrialStatus::timeout}), 2,
                                      LostAttempts::rank_died);
  EXPECT_EQ(plan.pending.expand(trials), (std::vector<PendingTrial>{{3, 1}}));
  EXPECT_EQ(plan.retried.count("failed"), 0u);
  EXPECT_EQ(plan.retried.at("timeout"), 1u);
}

// --retry killed runs a killed trial again past the --retry-killed limit.
TEST(ResumeRetry, KilledPastTheLimit) {
  const std::vector<TrialSpec> trials = four_trials();
  const std::vector<TrialRow> rows =
      rows_with_statuses(trials, {{0, "ok"}, {1, "ok"}, {2, "ok"}, {3, "killed"}, {3, "killed"}});
  EXPECT_TRUE(plan_resume(trials, rows, {}, 1, 1, LostAttempts::rank_died).pending.expand(trials).empty());
  const ResumePlan plan =
      plan_resume(trials, rows, {}, RetryPolicy(1, {TrialStatus::killed}), 1, LostAttempts::rank_died);
  EXPECT_EQ(plan.pending.expand(trials), (std::vector<PendingTrial>{{3, 2}}));
}

TEST(ResumeRetry, StatusListParsing) {
  EXPECT_EQ(parse_retry_statuses("failed"), (std::set<TrialStatus>{TrialStatus::failed}));
  EXPECT_EQ(parse_retry_statuses("failed,over_budget,timeout"),
            (std::set<TrialStatus>{TrialStatus::failed, TrialStatus::over_budget, TrialStatus::timeout}));
  for (const char* bad : {"", "ok", "interrupted", "failed,", "failed,nope", "FAILED"})
    EXPECT_EQ(parse_retry_statuses(bad), std::nullopt) << bad;
}

// The row that stands for a trial: the latest final attempt, else the latest.
TEST(StandingRow, LatestFinalAttemptWins) {
  const std::vector<TrialSpec> trials = four_trials();
  const std::vector<TrialRow> rows = rows_with_statuses(trials, {{0, "failed"}, {0, "ok"}, {0, "interrupted"}});
  EXPECT_TRUE(stands_for_trial(rows[1], rows[0]));   // ok (attempt 1) over failed (attempt 0)
  EXPECT_FALSE(stands_for_trial(rows[0], rows[1]));  // and not the other way round
  EXPECT_FALSE(stands_for_trial(rows[2], rows[1]));  // an interrupted retry does not replace a result
  EXPECT_TRUE(stands_for_trial(rows[1], rows[2]));
  TrialRow killed = rows[2];
  set_fixed(killed.status, "killed");
  killed.attempt = 3;
  EXPECT_TRUE(stands_for_trial(killed, rows[2]));  // neither final: the later attempt
}

}  // namespace
}  // namespace memsweep
