// The steps every kind of trial shares (trial_attempt.hpp), where a
// failure changes what is measured without ending the trial: the failure
// is a note at the end of the trial's message, never dropped. On fake
// cgroup trees whose files refuse a write.

#include "runner/fake_cgroup_tree.hpp"
#include "runner/trial_attempt.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

namespace memsweep::runner::detail {
namespace {

namespace fs = std::filesystem;
using memsweep::testing::fake_v2;
using memsweep::testing::FakeTree;

constexpr std::uint64_t kBudget = std::uint64_t{64} << 20;

TrialSpec small_trial() {
  TrialSpec trial;
  trial.id = "t0";
  return trial;
}

Attempt attempt_with_budget() {
  TrialContext context;
  context.mem_budget_bytes = kBudget;
  return Attempt(small_trial(), context);
}

TEST(AttemptNotes, FollowTheMessageInOrder) {
  Attempt attempt(small_trial(), TrialContext{});
  attempt.note("first");
  finish(attempt, TrialStatus::failed, "the trial failed");
  attempt.note("second");
  const TrialRecord record = std::move(attempt).record();
  EXPECT_EQ(record.message, "the trial failed; first; second");
  EXPECT_EQ(get_fixed(record.row.message), "the trial failed; first; second");
  EXPECT_EQ(get_fixed(record.row.status), status_name(TrialStatus::failed));
}

TEST(AttemptNotes, AreTheWholeMessageOfATrialThatSaysNothingElse) {
  Attempt attempt(small_trial(), TrialContext{});
  finish(attempt, TrialStatus::ok, "");
  attempt.note("no prediction (why)");
  EXPECT_EQ(std::move(attempt).record().message, "no prediction (why)");
}

TEST(AttemptNotes, ALimitThatCannotBeSetIsNoted) {
  const FakeTree tree = fake_v2("memory\n", "");
  const TrialCgroups cgroups = tree.detect();
  ASSERT_EQ(cgroups.isolation(), Isolation::cgroup2) << cgroups.problem();
  Attempt attempt = attempt_with_budget();
  attempt.cgroup = cgroups.create("memsweep-1-trial-0", std::nullopt);
  const fs::path limit_file = attempt.cgroup->path() / "memory.max";
  fs::create_directories(limit_file);  // the kernel refusing the write, as a plain tree can

  limit_cgroup_to_budget(attempt);
  EXPECT_FALSE(attempt.cgroup_limit_is_budget) << "an OOM kill there would not be the budget's";
  finish(attempt, TrialStatus::ok, "");
  EXPECT_EQ(std::move(attempt).record().message, "the budget is not its cgroup's limit (cannot write \"" +
                                                     std::to_string(kBudget) + "\" to " + limit_file.string() +
                                                     ": Is a directory): only the rank's checks held it to the budget");
}

TEST(AttemptNotes, ALimitThatIsSetLeavesNoNote) {
  const FakeTree tree = fake_v2("memory\n", "");
  Attempt attempt = attempt_with_budget();
  attempt.cgroup = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  ASSERT_NE(attempt.cgroup, nullptr);
  limit_cgroup_to_budget(attempt);
  EXPECT_TRUE(attempt.cgroup_limit_is_budget);
  EXPECT_TRUE(attempt.notes.empty());
}

TEST(AttemptNotes, AGroupThatCannotBeJoinedIsLetGoAndNoted) {
  const FakeTree tree = fake_v2("memory\n", "");
  std::unique_ptr<TrialCgroup> group = tree.detect().create("memsweep-1-trial-0", std::nullopt);
  ASSERT_NE(group, nullptr);
  const std::string procs_file = group->procs_file();
  fs::create_directories(procs_file);  // a write to it fails (EISDIR)
  Attempt attempt(small_trial(), TrialContext{});

  join_cgroup(attempt, std::move(group), ::getpid());
  EXPECT_EQ(attempt.cgroup, nullptr) << "measured through /proc alone";
  finish(attempt, TrialStatus::ok, "");
  EXPECT_EQ(std::move(attempt).record().message, "not moved into its cgroup (cannot write \"" +
                                                     std::to_string(::getpid()) + "\" to " + procs_file +
                                                     ": Is a directory): measured through /proc alone");
}

TEST(AttemptNotes, AGroupThatIsJoinedBecomesTheTrials) {
  const FakeTree tree = fake_v2("memory\n", "");
  Attempt attempt(small_trial(), TrialContext{});
  join_cgroup(attempt, tree.detect().create("memsweep-1-trial-0", std::nullopt), ::getpid());
  ASSERT_NE(attempt.cgroup, nullptr);
  EXPECT_TRUE(attempt.notes.empty());
  EXPECT_EQ(attempt.cgroup->members(), std::vector<pid_t>{::getpid()});
}

}  // namespace
}  // namespace memsweep::runner::detail
