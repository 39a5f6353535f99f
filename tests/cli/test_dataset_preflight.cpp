// A sweep whose datasets are not there, or not what they should be, is
// refused before anything is written (exit 2, one line per dataset), on one
// rank or several; `plan --data-dir` says what it found. Run as a user runs
// memsweep, with the real datasets where a test needs them.

#include "support/dataset_files.hpp"
#include "support/exit_statuses.hpp"
#include "support/real_datasets.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <ostream>
#include <regex>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// The user's case: a small MNIST sweep (two trials), and one with CIFAR-10 too.
constexpr const char* kMnistSweep = R"(
[sweep]
name = "mnist-mem"
[defaults]
dataset = "mnist"
epochs = 1
batch_size = 64
[grid]
hidden = [[16], [32]]
)";

constexpr const char* kTwoDatasetSweep = R"(
[sweep]
name = "two"
[defaults]
epochs = 1
batch_size = 32
hidden = [16]
[grid]
dataset = ["mnist", "cifar-10", "synthetic"]
)";

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// What a refused run must leave behind: nothing but the sweep file (and the
// folders the test made).
void expect_nothing_written(const TempDir& dir) {
  EXPECT_FALSE(fs::exists(dir.path() / "results.h5"));
  EXPECT_FALSE(fs::exists(dir.path() / "results.logs"));
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_THAT(entry.path().filename().string(), Not(HasSubstr(".h5"))) << "written: " << entry.path();
}

std::vector<std::string> run_args(const TempDir& dir, const fs::path& data_dir) {
  return {"run", (dir.path() / "sweep.toml").string(), "-o", "results.h5", "--data-dir", data_dir.string()};
}

TEST(DatasetPreflight, MissingDatasetRefusesTheRunBeforeTheFileExists) {
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  fs::create_directories(dir.path() / "empty");
  const CommandResult run = run_command(memsweep_argv(run_args(dir, dir.path() / "empty")), dir.path().string());
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  EXPECT_THAT(run.err, HasSubstr("mnist: not found"));
  EXPECT_THAT(run.err, HasSubstr((dir.path() / "empty" / "mnist").string() + ": no such folder"));
  EXPECT_THAT(run.err, HasSubstr("train-images-idx3-ubyte")) << "what was looked for";
  EXPECT_THAT(run.err, Not(HasSubstr("failed"))) << "no trial ran";
  expect_nothing_written(dir);
}

TEST(DatasetPreflight, EveryMissingDatasetIsListedOnItsOwnLine) {
  const TempDir dir;
  dir.write("sweep.toml", kTwoDatasetSweep);
  // MNIST lacks one file; CIFAR-10 has no folder at all.
  const TempDir data;
  write_tiny_datasets(data.path());
  fs::remove(data.path() / "mnist" / "t10k-labels-idx1-ubyte");
  fs::remove_all(data.path() / "cifar-10");
  const CommandResult run = run_command(memsweep_argv(run_args(dir, data.path())), dir.path().string());
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  const std::string mnist_line =
      "mnist: not found: needs train-images-idx3-ubyte, train-labels-idx1-ubyte, "
      "t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each raw or .gz) in one folder; "
      "looked in " +
      (data.path() / "mnist").string() + ": missing t10k-labels-idx1-ubyte[.gz]\n";
  EXPECT_THAT(run.err, HasSubstr(mnist_line));
  EXPECT_THAT(run.err, HasSubstr("\ncifar-10: not found: needs data_batch_1.bin, test_batch.bin (each raw or .gz) in "
                                 "one folder; looked in " +
                                 (data.path() / "cifar-10").string() + ": no such folder; " +
                                 (data.path() / "cifar-10-batches-bin").string() + ": no such folder\n"));
  EXPECT_THAT(run.err, HasSubstr("a folder holding mnist/, cifar-10/"));
  EXPECT_THAT(run.err, Not(HasSubstr("synthetic"))) << "synthetic data need no files";
  expect_nothing_written(dir);
}

TEST(DatasetPreflight, MissingDatasetOnThreeRanksOneMessageEveryRankExits2) {
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  fs::create_directories(dir.path() / "empty");
  const CommandResult run =
      run_command(on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv(run_args(dir, dir.path() / "empty"))),
                  dir.path().string(), kEnvironment);
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  EXPECT_EQ(occurrences(run.err, "mnist: not found"), 1U) << run.err;
  EXPECT_THAT(run.err, HasSubstr((dir.path() / "empty" / "mnist").string()));
  expect_nothing_written(dir);
}

// Node-local data: rank 0 has the files, ranks 1 and 2 do not. An MPMD
// launch gives each group its own --data-dir, as two nodes would have.
TEST(DatasetPreflight, ARankWithoutTheDataStopsEveryRank) {
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  const TempDir data;
  write_tiny_datasets(data.path());
  fs::create_directories(dir.path() / "empty");
  std::vector<std::string> argv = on_ranks(MEMSWEEP_MPIEXEC, 1, memsweep_argv(run_args(dir, data.path())));
  argv.insert(argv.end(), {":", "-np", "2"});
  const std::vector<std::string> without = memsweep_argv(run_args(dir, dir.path() / "empty"));
  argv.insert(argv.end(), without.begin(), without.end());
  const CommandResult run = run_command(argv, dir.path().string(), kEnvironment);
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  EXPECT_EQ(occurrences(run.err, "mnist: not found"), 1U) << run.err;
  // Named by its rank and its node: on a cluster, one node may lack what the others have.
  EXPECT_THAT(run.err, ::testing::ContainsRegex("rank [12] on [^ :]+: mnist: not found"));
  EXPECT_THAT(run.err, HasSubstr((dir.path() / "empty" / "mnist").string() + ": no such folder"));
  expect_nothing_written(dir);
}

struct Malformed {
  const char* name;
  const char* file;      // under mnist/, replaced
  std::string contents;  // what it holds instead
  const char* expected;  // in the message, after the file's path
};

void PrintTo(const Malformed& test_case, std::ostream* out) { *out << test_case.name; }

class MalformedDataset : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedDataset, RefusesTheRunNamingTheFileAndWhatWasExpected) {
  const Malformed& param = GetParam();
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  const TempDir data;
  write_tiny_datasets(data.path());
  const fs::path file = data.path() / "mnist" / param.file;
  write_dataset_file(file, param.contents);
  const CommandResult run = run_command(memsweep_argv(run_args(dir, data.path())), dir.path().string());
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  EXPECT_THAT(run.err, HasSubstr("mnist: " + file.string() + ": " + param.expected)) << run.err;
  expect_nothing_written(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Headers, MalformedDataset,
    ::testing::Values(
        Malformed{"BadMagic", "train-images-idx3-ubyte", idx_images(2, 28, 28, 0x00000802),
                  "wrong magic number for IDX images: expected 0x00000803, found 0x00000802"},
        Malformed{"TruncatedHeader", "t10k-labels-idx1-ubyte", idx_labels({0, 1}).substr(0, 6),
                  "too short for an IDX labels header: expected 8 bytes, found 6"},
        Malformed{"GzipHeaderOfALabelFile", "train-images-idx3-ubyte", gzip(idx_labels({0, 1, 2, 3, 4, 5, 6, 7})),
                  "wrong magic number for IDX images: expected 0x00000803, found 0x00000801 (an IDX label file)"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// ---- plan --data-dir ------------------------------------------------------

TEST(PlanDatasets, ShowsWhereEachDatasetIsAndItsRecordCounts) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const TempDir dir;
  dir.write("sweep.toml", kTwoDatasetSweep);
  const CommandResult plan =
      run_command(memsweep_argv({"plan", "sweep.toml", "--data-dir", root.string()}), dir.path().string());
  ASSERT_EQ(plan.exit_status, kOk) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("datasets (looked for in " + root.string() + "):\n"));
  // MNIST's published sizes, from the gzip files' IDX headers.
  EXPECT_THAT(plan.out,
              HasSubstr("  mnist: found in " + (root / "mnist").string() + ": 60000 train, 10000 test, 1x28x28\n"));
  // The CIFAR-10 copy may be a subset: counts from the batches' sizes, whole records of 32x32x3.
  EXPECT_THAT(plan.out, ::testing::ContainsRegex("  cifar-10: found in " + (root / "cifar-10").string() +
                                                 ": [1-9][0-9]* train, [1-9][0-9]* test, 3x32x32\n"));
  EXPECT_THAT(plan.out, Not(HasSubstr("synthetic: found")));
}

TEST(PlanDatasets, AMissingDatasetIsShownThenExits2) {
  const TempDir dir;
  dir.write("sweep.toml", kTwoDatasetSweep);
  const TempDir data;
  write_tiny_datasets(data.path());
  fs::remove_all(data.path() / "cifar-10");
  const CommandResult plan =
      run_command(memsweep_argv({"plan", "sweep.toml", "--data-dir", data.path().string()}), dir.path().string());
  EXPECT_EQ(plan.exit_status, kBadInput) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("3 trials")) << "the plan is printed first";
  EXPECT_THAT(plan.out, HasSubstr("  mnist: found in " + (data.path() / "mnist").string() + ": 2 train, 2 test"));
  EXPECT_THAT(plan.out, HasSubstr("  cifar-10: not found: "));
  EXPECT_THAT(plan.err, HasSubstr("memsweep: error: cifar-10: not found"));
  EXPECT_THAT(plan.err, Not(HasSubstr("mnist: ")));

  // --outputs answers where the results go, and does not look for data.
  const CommandResult outputs = run_command(
      memsweep_argv({"plan", "sweep.toml", "--outputs", "--data-dir", data.path().string()}), dir.path().string());
  EXPECT_EQ(outputs.exit_status, kOk) << outputs.err;
  EXPECT_EQ(outputs.out, "sweep.h5\n");
}

TEST(PlanDatasets, TheDataDirDefaultsAsRunsDoes) {
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  const TempDir elsewhere;
  write_tiny_datasets(elsewhere.path());
  write_tiny_datasets(dir.path() / "data");
  // ./data when MEMSWEEP_DATA is empty; MEMSWEEP_DATA when set.
  const CommandResult local =
      run_command(memsweep_argv({"plan", "sweep.toml"}), dir.path().string(), {{"MEMSWEEP_DATA", ""}});
  ASSERT_EQ(local.exit_status, kOk) << local.err;
  EXPECT_THAT(local.out, HasSubstr("mnist: found in " + (dir.path() / "data" / "mnist").string()));
  const CommandResult from_env = run_command(memsweep_argv({"plan", "sweep.toml"}), dir.path().string(),
                                             {{"MEMSWEEP_DATA", elsewhere.path().string()}});
  ASSERT_EQ(from_env.exit_status, kOk) << from_env.err;
  EXPECT_THAT(from_env.out, HasSubstr("mnist: found in " + (elsewhere.path() / "mnist").string()));
}

TEST(PlanDatasets, ASyntheticSweepNeedsNoData) {
  const TempDir dir;
  const CommandResult plan =
      run_command(memsweep_argv({"plan", std::string(MEMSWEEP_SOURCE_DIR) + "/jobs/examples/quickstart.toml",
                                 "--data-dir", (dir.path() / "nowhere").string()}),
                  dir.path().string());
  ASSERT_EQ(plan.exit_status, kOk) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("datasets: none to read (every trial's data are synthetic)\n"));
}

// ---- jobs/submit checks the datasets before anything waits in a queue ----

TEST(SubmitDatasets, ASweepWhoseDatasetIsMissingIsNotSubmitted) {
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  const std::string submit = std::string(MEMSWEEP_SOURCE_DIR) + "/jobs/submit";
  // --dry-run: everything but sbatch, which this machine need not have.
  const CommandResult refused =
      run_command({submit, "sweep.toml", "--memsweep", MEMSWEEP_EXECUTABLE, "--dry-run", "--data-dir", "nodata"},
                  dir.path().string());
  EXPECT_EQ(refused.exit_status, kBadInput) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("mnist: not found"));
  EXPECT_THAT(refused.err, HasSubstr((dir.path() / "nodata" / "mnist").string() + ": no such folder"));
  EXPECT_THAT(refused.err, HasSubstr("sweep.toml: not submitted"));
  EXPECT_THAT(refused.out, Not(HasSubstr("would run")));

  // The folder given is where plan looks, and what the job's run is given.
  write_tiny_datasets(dir.path() / "data-here");
  const CommandResult accepted =
      run_command({submit, "sweep.toml", "--memsweep", MEMSWEEP_EXECUTABLE, "--dry-run", "--data-dir=data-here"},
                  dir.path().string());
  EXPECT_EQ(accepted.exit_status, kOk) << accepted.out << accepted.err;
  EXPECT_THAT(accepted.out, HasSubstr("sweep.toml --data-dir=data-here"));
}

// ---- with the data there, the same sweep runs ------------------------------

TEST(DatasetPreflight, WithTheRealDataTheSweepRuns) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const TempDir dir;
  dir.write("sweep.toml", kMnistSweep);
  std::vector<std::string> args = run_args(dir, root);
  args.insert(args.end(), {"--max-train-examples", "256", "--max-test-examples", "128"});
  const CommandResult run = run_command(memsweep_argv(args), dir.path().string(), kEnvironment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  EXPECT_THAT(run.err, HasSubstr("2 trials run in"));
  EXPECT_THAT(run.err, HasSubstr("(2 ok)"));
  EXPECT_TRUE(fs::exists(dir.path() / "results.h5"));
}

}  // namespace
}  // namespace memsweep::testing
