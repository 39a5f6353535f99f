// Rank 0's walk through a sweep (trial_cursor.hpp): every attempt once, in
// the sweep's order, a large sweep's duplicates skipped by id with a note,
// a resume's decisions applied, and an id set that holds what it was given.

#include "sweep/trial_cursor.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

namespace memsweep::sweep::detail {
namespace {

using ::testing::HasSubstr;

std::vector<Job> all_jobs(TrialCursor& cursor) {
  std::vector<Job> jobs;
  while (std::optional<Job> job = cursor.next()) jobs.push_back(std::move(*job));
  return jobs;
}

TEST(TrialIdSet, HoldsExactlyWhatWasInserted) {
  std::mt19937_64 rng(3);
  TrialIdSet set;
  std::set<std::uint64_t> reference;
  for (int k = 0; k < 200'000; ++k) {
    const std::uint64_t id = rng() & ((std::uint64_t{1} << 48) - 1);
    EXPECT_EQ(set.insert(id), reference.insert(id).second);
  }
  // Small, alike ids (a test's) and 0 too.
  for (std::uint64_t id = 0; id < 5000; ++id) EXPECT_EQ(set.insert(id), reference.insert(id).second);
  EXPECT_EQ(set.size(), reference.size());
  for (const std::uint64_t id : reference) ASSERT_TRUE(set.contains(id)) << id;
  std::size_t absent_found = 0;
  for (int k = 0; k < 10'000; ++k) {
    const std::uint64_t id = (rng() & ((std::uint64_t{1} << 48) - 1)) | (std::uint64_t{1} << 50);
    absent_found += set.contains(id) ? 1 : 0;
  }
  EXPECT_EQ(absent_found, 0U);
}

// Every trial, attempt 0, positions in order: what a fresh run hands out.
TEST(TrialCursor, AFreshRunHandsOutEveryPositionInOrder) {
  const SweepSpec sweep = parse_sweep("[sweep]\nrepeats = 2\n[grid]\nbatch_size = [8, 16, 32]\n", "c.toml");
  const PendingTrials pending;
  TrialCursor cursor(sweep.trials, pending);
  EXPECT_EQ(cursor.left(), 6U);
  const std::vector<Job> jobs = all_jobs(cursor);
  ASSERT_EQ(jobs.size(), 6U);
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    EXPECT_EQ(jobs[k].attempt.index, k);
    EXPECT_EQ(jobs[k].attempt.attempt, 0);
    EXPECT_EQ(jobs[k].trial.id, sweep.trials[k].id);
  }
  EXPECT_EQ(cursor.left(), 0U);
  EXPECT_EQ(cursor.take_skipped().count, 0U);
}

// A sweep too large to walk keeps its duplicates' positions: the cursor
// hands each id out once and says why it skipped the others.
TEST(TrialCursor, ALargeSweepsDuplicatesRunOnceWithANote) {
  std::string text = "[grid]\noptimizer = [\"adam\"]\nmomentum = [0.1, 0.9]\nbatch_size = [";
  for (int k = 1; k <= 60'000; ++k) text += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  text += "]\n";
  const SweepSpec sweep = parse_sweep(text, "large.toml");
  ASSERT_FALSE(sweep.trials.duplicates_known());
  ASSERT_EQ(sweep.trials.size(), 120'000U);
  const PendingTrials pending;
  TrialCursor cursor(sweep.trials, pending);
  std::set<std::string> handed;
  std::size_t jobs = 0;
  while (std::optional<Job> job = cursor.next()) {
    ++jobs;
    EXPECT_TRUE(handed.insert(job->trial.id).second) << job->trial.id;
    // adam ignores momentum: the second half is the first half again.
    EXPECT_LT(job->attempt.index, 60'000U);
  }
  EXPECT_EQ(jobs, 60'000U);
  const TrialCursor::Skipped skipped = cursor.take_skipped();
  EXPECT_EQ(skipped.count, 60'000U);
  ASSERT_EQ(skipped.notes.size(), TrialCursor::kNotedDuplicates);
  EXPECT_THAT(skipped.notes.front(), HasSubstr("large.toml:1 grid[60000] has the id"));
  EXPECT_THAT(skipped.notes.front(), HasSubstr("it does not run again"));
  EXPECT_THAT(skipped.notes.back(), HasSubstr("further ones are counted"));
}

// A large sweep is not made trial by trial when read: values wrong only
// together (an MLP with no hidden layer, from two grid axes, neither at its
// first or last value) are found when handed out. Those trials do not run and
// are named; the others run (the user's sweep goes on, as for a crash).
TEST(TrialCursor, ALargeSweepsTrialsWrongOnlyTogetherAreSkippedAndNamed) {
  std::string text =
      "[defaults]\nchannels = [4]\n[grid]\nmodel = [\"cnn\", \"mlp\"]\nhidden = [[8], [], [16]]\nbatch_size = [";
  for (int k = 1; k <= 30'000; ++k) text += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  text += "]\n";
  const SweepSpec sweep = parse_sweep(text, "together.toml");  // each value alone is fine
  ASSERT_EQ(sweep.trials.size(), 180'000U);
  ASSERT_FALSE(sweep.trials.made(120'000).has_value()) << "mlp, no hidden layer";
  const PendingTrials pending;
  TrialCursor cursor(sweep.trials, pending);
  std::size_t jobs = 0;
  while (std::optional<Job> job = cursor.next()) {
    ++jobs;
    EXPECT_FALSE(job->trial.model == ModelKind::mlp && job->trial.hidden.empty());
  }
  EXPECT_EQ(jobs, 150'000U);
  const TrialCursor::Skipped skipped = cursor.take_skipped();
  EXPECT_EQ(skipped.count, 30'000U);
  ASSERT_EQ(skipped.notes.size(), TrialCursor::kNotedDuplicates);
  EXPECT_THAT(skipped.notes.front(), HasSubstr("trial 120001 of the sweep cannot be made, and does not run"));
  EXPECT_THAT(skipped.notes.front(), HasSubstr("an MLP needs at least one hidden layer"));
  // A resume walks past them too.
  const ResumePlan plan = plan_resume(sweep.trials, {}, {}, 0, 1, LostAttempts::rank_died);
  EXPECT_EQ(plan.pending.count(sweep.trials.size()), 150'000U);
}

// A resume's PendingTrials: done trials skipped, the others at their next attempt.
TEST(TrialCursor, AResumeSkipsDoneTrialsAndRunsTheOthersAtTheirNextAttempt) {
  const SweepSpec sweep = parse_sweep("[grid]\nbatch_size = [8, 16, 32, 64]\n", "c.toml");
  const PendingTrials pending({sweep.trials[1].id}, {{sweep.trials[2].id, 3}}, 3);
  TrialCursor cursor(sweep.trials, pending);
  EXPECT_EQ(cursor.left(), 3U);
  const std::vector<Job> jobs = all_jobs(cursor);
  ASSERT_EQ(jobs.size(), 3U);
  EXPECT_EQ(jobs[0].attempt, (PendingTrial{0, 0}));
  EXPECT_EQ(jobs[1].attempt, (PendingTrial{2, 3}));
  EXPECT_EQ(jobs[2].attempt, (PendingTrial{3, 0}));
}

TEST(TrialCursor, AListedPendingIsHandedOutAsListedAndAPositionPastTheSweepIsRefused) {
  const SweepSpec sweep = parse_sweep("[grid]\nbatch_size = [8, 16, 32, 64]\n", "c.toml");
  const PendingTrials listed(std::vector<PendingTrial>{{3, 1}, {0, 0}});
  TrialCursor cursor(sweep.trials, listed);
  const std::vector<Job> jobs = all_jobs(cursor);
  ASSERT_EQ(jobs.size(), 2U);
  EXPECT_EQ(jobs[0].trial.id, sweep.trials[3].id);
  EXPECT_EQ(jobs[0].attempt.attempt, 1);
  EXPECT_EQ(jobs[1].trial.id, sweep.trials[0].id);

  const PendingTrials past(std::vector<PendingTrial>{{4, 0}});
  TrialCursor refusing(sweep.trials, past);
  EXPECT_THROW(refusing.next(), std::out_of_range);
}

}  // namespace
}  // namespace memsweep::sweep::detail
