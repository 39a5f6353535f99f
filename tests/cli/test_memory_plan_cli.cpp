// `memsweep plan` and `memsweep estimate` with memory plans (issue 32): plan
// lists each trial's plan when the sweep leaves the default, estimate takes
// --memory-plan and --recompute-every, and bad values get one clear line.

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPlansSweep[] = R"([defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 3, train_size = 64, test_size = 32 }
hidden = [16]
recompute_every = 2
[grid]
memory_plan = ["keep", "reuse", "recompute"]
)";

// The words of `out`'s line that starts with a 12-digit trial id, by id order of appearance.
std::vector<std::vector<std::string>> trial_rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string cell; cells >> cell;) row.push_back(cell);
    if (!row.empty() && std::regex_match(row[0], std::regex("[0-9a-f]{12}"))) rows.push_back(row);
  }
  return rows;
}

std::string header_line(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("id ", 0) == 0) return line;
  return {};
}

TEST(MemoryPlanCli, PlanListsEachTrialsPlan) {
  const TempDir dir;
  const auto sweep = dir.write("plans.toml", kPlansSweep);
  const CommandResult result = run_memsweep({"plan", sweep.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(header_line(result.out), HasSubstr(" memory_plan "));
  const auto rows = trial_rows(result.out);
  ASSERT_EQ(rows.size(), 3u) << result.out;
  const auto has = [](const std::vector<std::string>& row, const std::string& cell) {
    return std::find(row.begin(), row.end(), cell) != row.end();
  };
  EXPECT_TRUE(has(rows[0], "keep")) << result.out;
  EXPECT_TRUE(has(rows[1], "reuse")) << result.out;
  EXPECT_TRUE(has(rows[2], "recompute:2")) << result.out;
}

TEST(MemoryPlanCli, PlanOfASweepWithoutPlansHasNoPlanColumn) {
  const TempDir dir;
  const auto sweep = dir.write("keep.toml", "[grid]\nbatch_size = [8, 16]\n");
  const CommandResult result = run_memsweep({"plan", sweep.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(header_line(result.out), Not(HasSubstr("memory_plan")));
}

TEST(MemoryPlanCli, EstimateNamesThePlanItPredicts) {
  const CommandResult keep = run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "64"});
  ASSERT_EQ(keep.exit_status, 0) << keep.err;
  EXPECT_THAT(keep.out, Not(HasSubstr("memory plan")));
  const CommandResult reuse =
      run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "64", "--memory-plan", "reuse"});
  ASSERT_EQ(reuse.exit_status, 0) << reuse.err;
  EXPECT_THAT(reuse.out, HasSubstr("mnist, mlp 784-64-10, sgd, batch 32, memory plan reuse, 60000 + 10000 examples"));
  const CommandResult recompute = run_memsweep(
      {"estimate", "--dataset", "mnist", "--hidden", "64", "--memory-plan", "recompute", "--recompute-every", "2"});
  ASSERT_EQ(recompute.exit_status, 0) << recompute.err;
  EXPECT_THAT(recompute.out, HasSubstr("memory plan recompute every 2 layers"));
  // Another plan is another trial: another id in the heading.
  const std::regex id(R"(trial ([0-9a-f]{12}) )");
  std::smatch keep_id, reuse_id;
  ASSERT_TRUE(std::regex_search(keep.out, keep_id, id));
  ASSERT_TRUE(std::regex_search(reuse.out, reuse_id, id));
  EXPECT_NE(keep_id[1], reuse_id[1]);
}

TEST(MemoryPlanCli, EstimateOfASweepFileTakesThePlanForEveryTrial) {
  const TempDir dir;
  const auto sweep = dir.write("keep.toml", "[grid]\nbatch_size = [8, 16]\n");
  const CommandResult result = run_memsweep({"estimate", sweep.string(), "--memory-plan", "reuse"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  std::size_t headings = 0;
  for (std::size_t at = result.out.find("memory plan reuse"); at != std::string::npos;
       at = result.out.find("memory plan reuse", at + 1))
    ++headings;
  EXPECT_EQ(headings, 2u) << result.out;
}

TEST(MemoryPlanCli, EstimateRefusesBadPlanOptions) {
  const CommandResult unknown =
      run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "64", "--memory-plan", "share"});
  EXPECT_EQ(unknown.exit_status, kBadInput);
  EXPECT_THAT(unknown.err, HasSubstr("--memory-plan: share not in {keep,reuse,recompute}"));
  const CommandResult negative = run_memsweep(
      {"estimate", "--dataset", "mnist", "--hidden", "64", "--memory-plan", "recompute", "--recompute-every", "-1"});
  EXPECT_EQ(negative.exit_status, kBadInput);
  EXPECT_THAT(negative.err, HasSubstr("expected a whole number from 0 to 1000"));
  const CommandResult without_recompute =
      run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "64", "--recompute-every", "3"});
  EXPECT_EQ(without_recompute.exit_status, kBadInput);
  EXPECT_THAT(without_recompute.err, HasSubstr("--recompute-every: only memory plan recompute has segments"));
}

}  // namespace
}  // namespace memsweep::testing
