// A sweep whose grid crosses memory plans, end to end (issue 32): each plan
// is a trial of its own, trained, and recorded in the results file's
// /trials (schema 8) as h5py and h5dump read it, then shown by summary and
// export beside the other fields.

#include "run/results_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Three small trials on synthetic data: a second or so each.
constexpr char kPlansSweep[] = R"([sweep]
name = "plans"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 3, train_size = 64, test_size = 32 }
hidden = [16]
epochs = 1
batch_size = 16
recompute_every = 2
[grid]
memory_plan = ["keep", "reuse", "recompute"]
)";

class MemoryPlanRun : public ::testing::Test {
 protected:
  void SetUp() override {
    sweep_ = dir_.write("plans.toml", kPlansSweep);
    results_ = dir_.path() / "plans.h5";
    const CommandResult run = run_memsweep({"run", sweep_.string(), "-o", results_.string()}, dir_.path().string());
    ASSERT_EQ(run.exit_status, 0) << run.err;
  }
  TempDir dir_;
  std::filesystem::path sweep_;
  std::filesystem::path results_;
};

TEST_F(MemoryPlanRun, TrialsCarryTheirPlanInTheResultsFile) {
  const TsvTable trials = h5py_table(results_, "trials");
  ASSERT_EQ(trials.rows.size(), 3u);
  std::set<std::string> ids;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "status"), "ok") << trials.at(row, "message");
    ids.insert(trials.at(row, "trial_id"));
  }
  EXPECT_EQ(ids.size(), 3u) << "each plan is a trial of its own";
  ASSERT_EQ(trials.where("memory_plan", "keep").size(), 1u);
  ASSERT_EQ(trials.where("memory_plan", "reuse").size(), 1u);
  ASSERT_EQ(trials.where("memory_plan", "recompute").size(), 1u);
  // Only recompute has segments; the file's 2 means nothing to the others.
  EXPECT_EQ(trials.at(trials.where("memory_plan", "recompute")[0], "recompute_every"), "2");
  EXPECT_EQ(trials.at(trials.where("memory_plan", "reuse")[0], "recompute_every"), "0");
  EXPECT_EQ(trials.at(trials.where("memory_plan", "keep")[0], "recompute_every"), "0");
  EXPECT_EQ(h5py_attributes(results_).at("schema_version"), "13");
  EXPECT_EQ(h5py_units(results_, "trials").at("memory_plan"), "text");
  EXPECT_EQ(h5py_units(results_, "trials").at("recompute_every"), "1");
}

TEST_F(MemoryPlanRun, H5dumpReadsTheColumns) {
  const CommandResult dump = run_command({MEMSWEEP_H5DUMP, "-d", "/trials", results_.string()});
  ASSERT_EQ(dump.exit_status, 0) << dump.err;
  EXPECT_THAT(dump.out, HasSubstr("\"memory_plan\""));
  EXPECT_THAT(dump.out, HasSubstr("\"recompute_every\""));
  EXPECT_THAT(dump.out, HasSubstr("\"recompute\\000"));  // NUL-padded to 16 bytes, as h5dump shows it
}

TEST_F(MemoryPlanRun, SummaryAndExportShowThePlan) {
  const CommandResult summary = run_memsweep({"summary", results_.string()});
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr(" plan "));
  EXPECT_THAT(summary.out, HasSubstr(" reuse "));
  EXPECT_THAT(summary.out, HasSubstr(" recompute:2 "));

  const std::filesystem::path csv = dir_.path() / "trials.csv";
  const CommandResult exported = run_memsweep({"export", results_.string(), "-o", csv.string()});
  ASSERT_EQ(exported.exit_status, 0) << exported.err;
  std::ifstream in(csv);
  std::string header;
  ASSERT_TRUE(std::getline(in, header)) << csv;
  EXPECT_THAT(header, HasSubstr(",memory_plan,recompute_every,"));
}

TEST(MemoryPlanSummary, ASweepWithoutPlansShowsNoPlanColumn) {
  const TempDir dir;
  const auto sweep = dir.write("keep.toml", R"([defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 3, train_size = 64, test_size = 32 }
hidden = [16]
epochs = 1
batch_size = 16
[grid]
learning_rate = [0.01, 0.1]
)");
  const auto results = dir.path() / "keep.h5";
  ASSERT_EQ(run_memsweep({"run", sweep.string(), "-o", results.string()}, dir.path().string()).exit_status, 0);
  const CommandResult summary = run_memsweep({"summary", results.string()});
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_THAT(summary.out, Not(HasSubstr(" plan ")));
  const TsvTable trials = h5py_table(results, "trials");
  EXPECT_EQ(trials.where("memory_plan", "keep").size(), 2u);
}

}  // namespace
}  // namespace memsweep::testing
