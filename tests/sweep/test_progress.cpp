// Progress lines as a user reads them on stderr, captured in a string.

#include "memsweep/sweep.hpp"
#include "sweep/sweep_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TrialRow finished_row(const TrialSpec& trial, TrialStatus status, double seconds, int rank) {
  TrialRow row = trial_row_for(trial, 0);
  set_fixed(row.status, status_name(status));
  row.wall_seconds = seconds;
  row.rss_peak = 3 * (1 << 29);  // 1.5 GiB
  row.rank = rank;
  if (status != TrialStatus::ok) set_fixed(row.message, "loss is nan at epoch 2");
  return row;
}

TEST(ProgressReporter, OneLineWithCountStatusSecondsPeakRankAndEta) {
  const std::vector<TrialSpec> trials = make_trials(10);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::normal, 10, 3);
  EXPECT_FALSE(progress.eta());
  progress.trial_finished(finished_row(trials[0], TrialStatus::ok, 2.5, 3));
  // Mean 2.5 s x 9 trials left / 3 workers = 7.5 s.
  EXPECT_EQ(out.str(), "[ 1/10] " + trials[0].id + " ok 2.5s peak 1.50 GiB rank 3 ETA 8s\n");
  ASSERT_TRUE(progress.eta());
  EXPECT_EQ(progress.eta()->count(), 8);
}

TEST(ProgressReporter, EtaInMinutesAndHours) {
  const std::vector<TrialSpec> trials = make_trials(2);
  std::ostringstream minutes;
  ProgressReporter short_sweep(minutes, Verbosity::normal, 4, 1);
  short_sweep.trial_finished(finished_row(trials[0], TrialStatus::ok, 100.0, 1));  // 300 s left
  EXPECT_THAT(minutes.str(), HasSubstr("ETA 5m00s"));

  std::ostringstream hours;
  ProgressReporter long_sweep(hours, Verbosity::normal, 100, 2);
  // 99 trials of 200 s on 2 workers: 50 rounds, the last with one trial: 10000 s.
  long_sweep.trial_finished(finished_row(trials[0], TrialStatus::ok, 200.0, 1));
  EXPECT_THAT(hours.str(), HasSubstr("ETA 2h46m"));
}

TEST(ProgressReporter, EtaFromThePlannedTrialsWork) {
  // Two small MLPs, then one 100 times wider: the wide one is most of what is left.
  std::vector<TrialSpec> trials = make_trials(3);
  trials[2].hidden = {1600};
  trials[2].id = trial_id(trials[2]);
  const std::vector<TrialCost> costs = waiting_costs(trials, all_pending(3, 0), {}).first;
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::normal, costs, 1);
  progress.trial_started(trials[0], 0, 1);
  progress.trial_finished(finished_row(trials[0], TrialStatus::ok, 1.0, 1));

  // One worker, one kind, no measured start: 1 s per trials[0]'s work.
  const double expected = (costs[1].work + costs[2].work) / costs[0].work;
  EXPECT_GT(expected, 90.0);
  ASSERT_TRUE(progress.eta());
  EXPECT_EQ(progress.eta()->count(), std::ceil(expected));
  EXPECT_THAT(out.str(), HasSubstr(" ETA 1m"));  // 90 s or more, under 2 min
  EXPECT_LT(expected, 119.5);

  // A running trial counts with its prediction less what it has done (~0 s here).
  progress.trial_started(trials[1], 0, 1);
  EXPECT_EQ(progress.eta()->count(), std::ceil(expected));
  // The reporter is remaining_seconds() of what it saw.
  EtaInputs inputs;
  inputs.finished.push_back(finished_trial(costs[0], finished_row(trials[0], TrialStatus::ok, 1.0, 1)));
  inputs.running.push_back({costs[1], 0.0});
  inputs.waiting.push_back(costs[2]);
  EXPECT_EQ(progress.eta()->count(), std::ceil(*remaining_seconds(inputs)));
}

TEST(ProgressReporter, LastTrialSaysDoneInsteadOfAnEta) {
  const std::vector<TrialSpec> trials = make_trials(1);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::normal, 1, 1);
  progress.trial_finished(finished_row(trials[0], TrialStatus::ok, 1.0, 0));
  EXPECT_THAT(out.str(), HasSubstr("[1/1]"));
  EXPECT_THAT(out.str(), HasSubstr("done in 0s"));
  EXPECT_THAT(out.str(), Not(HasSubstr("ETA")));
}

TEST(ProgressReporter, FailureShowsItsMessageAndUnmeasuredPeakIsADash) {
  const std::vector<TrialSpec> trials = make_trials(1);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::normal, 5, 1);
  TrialRow row = finished_row(trials[0], TrialStatus::diverged, 0.25, 2);
  row.rss_peak = -1;
  progress.trial_finished(row);
  EXPECT_THAT(out.str(), HasSubstr(" diverged 0.2s peak - rank 2"));
  EXPECT_THAT(out.str(), HasSubstr(": loss is nan at epoch 2\n"));
}

TEST(ProgressReporter, QuietShowsOnlyFailures) {
  const std::vector<TrialSpec> trials = make_trials(3);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::quiet, 3, 1);
  progress.note("resuming: 2 trials done");
  progress.trial_started(trials[0], 0, 1);
  progress.trial_finished(finished_row(trials[0], TrialStatus::ok, 1.0, 1));
  progress.trial_finished(finished_row(trials[1], TrialStatus::failed, 1.0, 1));
  progress.trial_finished(finished_row(trials[2], TrialStatus::ok, 1.0, 1));
  EXPECT_EQ(out.str().find(trials[0].id), std::string::npos);
  EXPECT_EQ(out.str().find(trials[2].id), std::string::npos);
  EXPECT_THAT(out.str(), HasSubstr("[2/3] " + trials[1].id + " failed"));
  EXPECT_THAT(out.str(), Not(HasSubstr("resuming")));
}

TEST(ProgressReporter, VerboseAlsoShowsEachStartWithItsHyperparameters) {
  const std::vector<TrialSpec> trials = make_trials(1);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::verbose, 1, 1);
  progress.note("resuming");
  progress.trial_started(trials[0], 2, 4);
  EXPECT_THAT(out.str(), HasSubstr("resuming\n"));
  EXPECT_THAT(out.str(), HasSubstr("start " + trials[0].id +
                                   " attempt 2 on rank 4: synthetic mlp sgd lr=0.001 "
                                   "batch=32 epochs=1 hidden=[16]"));
}

TEST(ProgressReporter, NormalDoesNotShowStarts) {
  const std::vector<TrialSpec> trials = make_trials(1);
  std::ostringstream out;
  ProgressReporter progress(out, Verbosity::normal, 1, 1);
  progress.trial_started(trials[0], 0, 1);
  progress.note("a note");
  EXPECT_EQ(out.str(), "a note\n");
}

}  // namespace
}  // namespace memsweep::testing
