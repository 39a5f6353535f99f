// `memsweep run` and `memsweep summary` end to end, as a user runs them:
// under mpirun with real ranks, training real trials, writing a real HDF5
// file that h5py and h5dump read without memsweep's code.

#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/dataset_files.hpp"
#include "support/exit_statuses.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

const std::string kSource = MEMSWEEP_SOURCE_DIR;
const std::string kQuickstart = kSource + "/jobs/examples/quickstart.toml";

// memsweep with `args` on `ranks` ranks.
std::vector<std::string> memsweep_on_ranks_argv(int ranks, const std::vector<std::string>& args) {
  return on_ranks(MEMSWEEP_MPIEXEC, ranks, memsweep_argv(args));
}

CommandResult memsweep_on_ranks(int ranks, const std::vector<std::string>& args, const std::string& dir) {
  return run_command(memsweep_on_ranks_argv(ranks, args), dir, kEnvironment);
}

// "145.2 MiB" -> bytes.
double parse_size(const std::string& number, const std::string& unit) {
  static const std::map<std::string, double> kUnits{
      {"B", 1.0}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  return std::stod(number) * kUnits.at(unit);
}

// What the run printed for a finished trial.
struct PrintedTrial {
  std::string id;
  std::string status;
  std::optional<double> peak_bytes;
};

std::vector<PrintedTrial> printed_trials(const std::string& err) {
  static const std::regex kTrialLine(
      R"(\b([0-9a-f]{12})\b\s+(ok|failed|diverged|over_budget|timeout|interrupted|killed)\b)");
  static const std::regex kPeak(R"(peak\s+([0-9.]+)\s*(B|KiB|MiB|GiB|TiB)\b)");
  std::vector<PrintedTrial> trials;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, kTrialLine)) continue;
    PrintedTrial trial{match[1], match[2], std::nullopt};
    if (std::regex_search(line, match, kPeak)) trial.peak_bytes = parse_size(match[1], match[2]);
    trials.push_back(trial);
  }
  return trials;
}

// memsweep's own lines (mpirun adds its banner when a rank exits non-zero).
std::size_t memsweep_lines(const std::string& err) {
  std::size_t count = 0;
  std::istringstream lines(err);
  for (std::string line; std::getline(lines, line);) count += line.rfind("memsweep", 0) == 0 ? 1 : 0;
  return count;
}

std::string sweep_file(const TempDir& dir, const std::string& name, const std::string& body) {
  return dir.write(name, body).string();
}

// ---- a sweep run once on three ranks, shared by the read-back tests --------

class QuickstartOnThreeRanks : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    result_ = new CommandResult(memsweep_on_ranks(3, {"run", kQuickstart, "-o", "out.h5"}, dir_->path().string()));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete dir_;
  }
  void SetUp() override { ASSERT_EQ(result_->exit_status, kOk) << result_->err; }
  static std::filesystem::path file() { return dir_->path() / "out.h5"; }

  static TempDir* dir_;
  static CommandResult* result_;
};
TempDir* QuickstartOnThreeRanks::dir_ = nullptr;
CommandResult* QuickstartOnThreeRanks::result_ = nullptr;

TEST_F(QuickstartOnThreeRanks, EveryTrialIsInTheFileAsTheRunPrintedIt) {
  const std::vector<PrintedTrial> printed = printed_trials(result_->err);
  ASSERT_EQ(printed.size(), 4U) << result_->err;
  const TsvTable trials = h5py_table(file(), "trials");
  ASSERT_EQ(trials.rows.size(), 4U);
  for (const PrintedTrial& trial : printed) {
    SCOPED_TRACE(trial.id);
    const auto rows = trials.where("trial_id", trial.id);
    ASSERT_EQ(rows.size(), 1U);
    const std::size_t row = rows.front();
    EXPECT_EQ(trial.status, "ok");
    EXPECT_EQ(trials.at(row, "status"), "ok");
    ASSERT_TRUE(trial.peak_bytes.has_value()) << "no peak printed for " << trial.id;
    // Printed with 3 significant digits or so: within 1 %.
    EXPECT_NEAR(*trial.peak_bytes, trials.number(row, "rss_peak"), 0.01 * trials.number(row, "rss_peak"));
  }
}

TEST_F(QuickstartOnThreeRanks, TrialRowsArePlausible) {
  const TsvTable trials = h5py_table(file(), "trials");
  std::set<std::string> ranks;
  std::set<std::string> pids;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    SCOPED_TRACE(trials.at(row, "trial_id"));
    ranks.insert(trials.at(row, "rank"));
    EXPECT_THAT(trials.at(row, "rank"), ::testing::AnyOf("1", "2"));  // rank 0 writes, it does not train
    EXPECT_FALSE(trials.at(row, "host").empty());
    EXPECT_EQ(trials.at(row, "attempt"), "0");
    EXPECT_EQ(trials.at(row, "dataset"), "synthetic");
    EXPECT_EQ(trials.at(row, "epochs_done"), "3");
    const double baseline = trials.number(row, "rss_baseline");
    const double peak = trials.number(row, "rss_peak");
    EXPECT_GT(baseline, 0);
    EXPECT_GE(peak, baseline);
    EXPECT_EQ(trials.number(row, "rss_footprint"), peak - baseline);
    EXPECT_GT(trials.number(row, "rss_mean"), 0.5 * baseline);
    EXPECT_LE(trials.number(row, "rss_mean"), peak);
    EXPECT_GT(trials.number(row, "sys_used_mean"), 0);
    EXPECT_GT(trials.number(row, "predicted_bytes"), 0);
    EXPECT_GT(trials.number(row, "samples"), 0);
    EXPECT_GT(trials.number(row, "test_accuracy"), 0.3);  // 10 classes: chance is 0.1
    EXPECT_LE(trials.number(row, "test_accuracy"), 1.0);
    EXPECT_GE(trials.number(row, "end_time"), trials.number(row, "start_time"));
    // Each trial ran in a process of its own that exited after reporting.
    EXPECT_GT(trials.number(row, "pid"), 0);
    pids.insert(trials.at(row, "pid"));
    EXPECT_EQ(trials.at(row, "end_cause"), "exited");
    EXPECT_EQ(trials.at(row, "end_signal"), "0");
    EXPECT_EQ(trials.at(row, "oom_killed"), "0");
    EXPECT_THAT(trials.at(row, "isolation"), ::testing::AnyOf("cgroup1", "cgroup2", "proc"));
    EXPECT_GT(trials.number(row, "start_seconds"), 0.0);
    EXPECT_LT(trials.number(row, "start_seconds"), trials.number(row, "wall_seconds"));
  }
  EXPECT_EQ(ranks.size(), 2U) << "both workers should have trained";
  EXPECT_EQ(pids.size(), trials.rows.size()) << "a fresh process per trial";
}

TEST_F(QuickstartOnThreeRanks, EpochsAreThereAndTrainingLearns) {
  const TsvTable trials = h5py_table(file(), "trials");
  const TsvTable epochs = h5py_table(file(), "epochs");
  ASSERT_EQ(epochs.rows.size(), 12U);  // 4 trials x 3 epochs
  double first = 0.0;
  double last = 0.0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    SCOPED_TRACE(trials.at(row, "trial_id"));
    const auto mine = epochs.where("trial_id", trials.at(row, "trial_id"));
    ASSERT_EQ(mine.size(), 3U);
    std::map<int, double> accuracy;
    std::map<int, double> loss;
    for (std::size_t e : mine) {
      accuracy[std::stoi(epochs.at(e, "epoch"))] = epochs.number(e, "test_accuracy");
      loss[std::stoi(epochs.at(e, "epoch"))] = epochs.number(e, "train_loss");
    }
    ASSERT_EQ(accuracy.size(), 3U);
    EXPECT_LT(loss.at(3), loss.at(1)) << "training should lower the loss";
    EXPECT_GT(epochs.number(mine.back(), "rss"), 0);
    first += accuracy.at(1);
    last += accuracy.at(3);
    EXPECT_DOUBLE_EQ(accuracy.at(3), trials.number(row, "test_accuracy"));
  }
  EXPECT_GE(last, first) << "mean test accuracy after the last epoch should be at least the first's";
}

TEST_F(QuickstartOnThreeRanks, SamplesMatchTheirTrials) {
  const TsvTable trials = h5py_table(file(), "trials");
  const TsvTable samples = h5py_table(file(), "samples");
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    SCOPED_TRACE(id);
    const auto mine = samples.where("trial_id", id);
    ASSERT_EQ(static_cast<double>(mine.size()), trials.number(row, "samples"));
    double previous_t = -1.0;
    double max_rss = 0.0;
    int max_epoch = 0;
    for (std::size_t s : mine) {
      EXPECT_GE(samples.number(s, "t"), previous_t);
      previous_t = samples.number(s, "t");
      EXPECT_GT(samples.number(s, "rss"), 0);
      EXPECT_GT(samples.number(s, "sys_used"), 0);
      EXPECT_EQ(samples.at(s, "rank"), trials.at(row, "rank"));
      max_rss = std::max(max_rss, samples.number(s, "rss"));
      max_epoch = std::max(max_epoch, std::stoi(samples.at(s, "epoch")));
    }
    // The kernel's peak (VmHWM) is at least any sampled RSS.
    EXPECT_LE(max_rss, trials.number(row, "rss_peak"));
    EXPECT_GE(max_epoch, 1);
    EXPECT_LE(max_epoch, 3);
  }
}

TEST_F(QuickstartOnThreeRanks, FileDescribesItself) {
  const auto attributes = h5py_attributes(file());
  EXPECT_EQ(attributes.at("format"), "memsweep");
  EXPECT_EQ(attributes.at("schema_version"), "13");
  EXPECT_EQ(attributes.at("sweep_name"), "quickstart");
  EXPECT_EQ(attributes.at("sweep_text"), slurp(kQuickstart));
  EXPECT_THAT(attributes.at("sweep_hash"), ::testing::MatchesRegex("[0-9a-f]{16}"));
  EXPECT_EQ(attributes.at("ranks"), "3");
  EXPECT_EQ(std::count(attributes.at("hosts").begin(), attributes.at("hosts").end(), ',') + 1, 3);
  for (const char* version : {"memsweep_version", "onednn_version", "mpi_version", "papi_version", "hdf5_version"})
    EXPECT_FALSE(attributes.at(version).empty()) << version;
  EXPECT_THAT(attributes.at("mpi_version"), HasSubstr("MPI"));
  EXPECT_THAT(attributes.at("command_line"), HasSubstr("quickstart.toml"));

  const auto sample_units = h5py_units(file(), "samples");
  EXPECT_EQ(sample_units.at("rss"), "bytes");
  EXPECT_EQ(sample_units.at("t"), "s");
  for (const auto& [column, unit] : h5py_units(file(), "trials")) EXPECT_FALSE(unit.empty()) << column;
}

TEST_F(QuickstartOnThreeRanks, H5dumpReadsTheSameValues) {
  const CommandResult header = run_command({MEMSWEEP_H5DUMP, "-A", file().string()});
  ASSERT_EQ(header.exit_status, 0) << header.err;
  EXPECT_THAT(header.out, ::testing::ContainsRegex("ATTRIBUTE \"schema_version\""));
  EXPECT_THAT(header.out, HasSubstr("DATASPACE  SIMPLE { ( 4 ) / ( H5S_UNLIMITED ) }"));

  const CommandResult trials = run_command({MEMSWEEP_H5DUMP, "-d", "/trials", file().string()});
  ASSERT_EQ(trials.exit_status, 0) << trials.err;
  for (const PrintedTrial& trial : printed_trials(result_->err))
    EXPECT_THAT(trials.out, HasSubstr("\"" + trial.id + "\"")) << "h5dump of /trials lacks " << trial.id;
}

TEST_F(QuickstartOnThreeRanks, SummaryShowsThePapersLayoutAndTheFileValues) {
  const CommandResult summary = run_memsweep({"summary", file().string()});
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("synthetic (4 trials)"));
  EXPECT_THAT(summary.out,
              ::testing::ContainsRegex("lr +epochs +batch +hidden +rss peak +rss mean +peak-base +predicted +used MB"));
  const TsvTable trials = h5py_table(file(), "trials");
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    // Each trial's line holds its id, then (among others) its peak in MiB.
    const std::string peak = fmt::format("{:.1f}", trials.number(row, "rss_peak") / 1048576.0);
    const std::string used = fmt::format("{:.1f}", trials.number(row, "sys_used_mean") / 1048576.0);
    // The trial's own peak first, its node's used memory after (issue 43).
    EXPECT_THAT(summary.out,
                ::testing::ContainsRegex(trials.at(row, "trial_id") + " .* " + peak + " .* " + used + " .* ok"));
  }
}

// ---- one process, no mpirun -------------------------------------------------

TEST(RunCommand, OneProcessTrainsAndWritesItself) {
  const TempDir dir;
  const CommandResult run = run_command({MEMSWEEP_EXECUTABLE, "run", kQuickstart, "-o", "single.h5", "--quiet"},
                                        dir.path().string(), kEnvironment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable trials = h5py_table(dir.path() / "single.h5", "trials");
  ASSERT_EQ(trials.rows.size(), 4U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "rank"), "0");
    EXPECT_EQ(trials.at(row, "status"), "ok");
  }
}

// ---- never clobber ------------------------------------------------------------

TEST(RunCommand, RefusesAnExistingFileThenResumesOrReplacesIt) {
  const TempDir dir;
  const std::string out = (dir.path() / "r.h5").string();
  ASSERT_EQ(memsweep_on_ranks(2, {"run", kQuickstart, "-o", out, "-q"}, dir.path().string()).exit_status, kOk);
  const std::string before = slurp(out);

  const CommandResult again = memsweep_on_ranks(2, {"run", kQuickstart, "-o", out}, dir.path().string());
  EXPECT_EQ(again.exit_status, kBadInput);
  EXPECT_THAT(again.err, HasSubstr(out));
  EXPECT_THAT(again.err, HasSubstr("--resume"));
  EXPECT_THAT(again.err, HasSubstr("--force"));
  EXPECT_EQ(slurp(out), before) << "a refused run must leave the file as it was";

  const CommandResult resumed = memsweep_on_ranks(2, {"run", kQuickstart, "-o", out, "--resume"}, dir.path().string());
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  EXPECT_TRUE(printed_trials(resumed.err).empty()) << "every trial was final: nothing runs again\n" << resumed.err;
  EXPECT_EQ(h5py_table(out, "trials").rows.size(), 4U);
  EXPECT_EQ(h5py_table(out, "runs").rows.size(), 2U);

  const CommandResult forced =
      memsweep_on_ranks(2, {"run", kQuickstart, "-o", out, "--force", "-q"}, dir.path().string());
  ASSERT_EQ(forced.exit_status, kOk) << forced.err;
  EXPECT_EQ(h5py_table(out, "runs").rows.size(), 1U) << "--force starts a new file";
  EXPECT_EQ(h5py_table(out, "trials").rows.size(), 4U);
}

TEST(RunCommand, ResumeRefusesAFileOfAnotherSweep) {
  const TempDir dir;
  const std::string out = (dir.path() / "r.h5").string();
  ASSERT_EQ(memsweep_on_ranks(2, {"run", kQuickstart, "-o", out, "-q"}, dir.path().string()).exit_status, kOk);
  std::string text = slurp(kQuickstart);
  text.replace(text.find("[32, 128]"), 9, "[32, 64]");
  const std::string other = sweep_file(dir, "other.toml", text);
  const CommandResult resumed = memsweep_on_ranks(2, {"run", other, "-o", out, "--resume"}, dir.path().string());
  EXPECT_EQ(resumed.exit_status, kBadInput);
  EXPECT_THAT(resumed.err, HasSubstr(out));
  EXPECT_THAT(resumed.err, HasSubstr("hash"));
  EXPECT_EQ(memsweep_lines(resumed.err), 1U) << "one line, from rank 0 only:\n" << resumed.err;
  EXPECT_EQ(h5py_table(out, "trials").rows.size(), 4U);
  EXPECT_EQ(h5py_table(out, "runs").rows.size(), 1U) << "a refused resume adds no run";
}

TEST(RunCommand, BadSweepFileIsOneLineFromRankZero) {
  const TempDir dir;
  const std::string bad = sweep_file(dir, "bad.toml", "[sweep]\nname = \"x\"\nbatch = 3\n");
  const CommandResult run = memsweep_on_ranks(3, {"run", bad, "-o", "x.h5"}, dir.path().string());
  EXPECT_EQ(run.exit_status, kBadInput);
  EXPECT_THAT(run.err, HasSubstr("bad.toml:3"));
  EXPECT_EQ(memsweep_lines(run.err), 1U) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "x.h5"));
}

struct BadRun {
  const char* name;
  std::vector<std::string> args;  // "@" is the quickstart sweep
  const char* message;
};

class RunBadOptions : public ::testing::TestWithParam<BadRun> {};

TEST_P(RunBadOptions, OneLineStatusTwoAndNoFile) {
  const TempDir dir;
  const std::vector<std::string>& extra = GetParam().args;
  // -o x.h5 unless the case gives its own.
  std::vector<std::string> args{"run", kQuickstart};
  if (std::find(extra.begin(), extra.end(), "-o") == extra.end()) args.insert(args.end(), {"-o", "x.h5"});
  args.insert(args.end(), extra.begin(), extra.end());
  const CommandResult run =
      run_command(with_file(memsweep_on_ranks_argv(2, args), kQuickstart), dir.path().string(), kEnvironment);
  EXPECT_EQ(run.exit_status, kBadInput);
  EXPECT_THAT(run.err, HasSubstr(GetParam().message));
  EXPECT_EQ(memsweep_lines(run.err), 1U) << run.err;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    ADD_FAILURE() << "a refused run wrote " << entry.path();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RunBadOptions,
    ::testing::Values(BadRun{"resume_and_force", {"--resume", "--force"}, "--resume and --force contradict"},
                      BadRun{"bad_budget", {"--mem-budget", "lots"}, "--mem-budget: expected a size"},
                      BadRun{"zero_flush", {"--flush-interval", "0"}, "--flush-interval: expected seconds"},
                      BadRun{"part_without_split_by", {"--part", "0"}, "--part 0 needs --split-by FIELD"},
                      BadRun{"split_by_without_part", {"--split-by", "hidden"}, "--split-by hidden needs --part K"},
                      BadRun{"unknown_split_field",
                             {"--split-by", "depth", "--part", "0", "-o", "x.{part}.h5"},
                             "--split-by: \"depth\" is not a field a sweep can be split by; expected one of:"},
                      BadRun{"part_out_of_range",
                             {"--split-by", "hidden", "--part", "2", "-o", "x.{part}.h5"},
                             "--part 2: the sweep has 2 parts by hidden (0..1)"},
                      BadRun{"negative_part",
                             {"--split-by", "dataset", "--part", "-1", "-o", "x.{part}.h5"},
                             "--part: -1 is out of range; expected a whole number from 0 to 2147483647"},
                      BadRun{"split_output_without_placeholder",
                             {"--split-by", "hidden", "--part", "0"},
                             "-o x.h5: with --split-by, the results file must contain {part}"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

struct BadResults {
  const char* name;
  const char* contents;  // nullptr: no such file; "/": a directory
  const char* message;
};

class SummaryBadFile : public ::testing::TestWithParam<BadResults> {};

TEST_P(SummaryBadFile, OneLineAndStatusTwo) {
  const TempDir dir;
  std::filesystem::path file = dir.path() / "results.h5";
  if (GetParam().contents == nullptr) {
  } else if (std::string(GetParam().contents) == "/") {
    std::filesystem::create_directory(file);
  } else {
    file = dir.write("results.h5", GetParam().contents);
  }
  const CommandResult summary = run_memsweep({"summary", file.string()});
  EXPECT_EQ(summary.exit_status, kBadInput);
  EXPECT_THAT(summary.err, HasSubstr(file.string()));
  EXPECT_THAT(summary.err, HasSubstr(GetParam().message));
  EXPECT_EQ(memsweep_lines(summary.err), 1U) << summary.err;
}

INSTANTIATE_TEST_SUITE_P(Cases, SummaryBadFile,
                         ::testing::Values(BadResults{"missing", nullptr, ""}, BadResults{"directory", "/", ""},
                                           BadResults{"empty", "", "HDF5"},
                                           BadResults{"text", "trial,lr\n1,0.1\n", "HDF5"}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// ---- one part of a sweep per run (an array job) ---------------------------------

// Four tiny trials, in grid order: (lr 0.05, batch 16), (0.05, 32), (0.1, 16), (0.1, 32).
constexpr const char* kPartsSweep = R"(
[sweep]
name = "parts"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 256, test_size = 64 }
epochs = 1
hidden = [16]
[grid]
learning_rate = [0.05, 0.1]
batch_size = [16, 32]
)";

const std::vector<std::string> kTiny{"--max-train-examples", "128", "--max-test-examples", "32"};

std::vector<std::string> with_tiny(std::vector<std::string> args) {
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  return args;
}

CommandResult memsweep_alone(const std::vector<std::string>& args, const std::string& dir) {
  return run_command(memsweep_argv(args), dir, kEnvironment);
}

// The trial ids `memsweep plan --split-by FIELD` puts in part `part`, in order.
std::vector<std::string> planned_ids(const std::string& sweep, const std::string& field, const std::string& part,
                                     const std::string& dir) {
  const CommandResult plan = run_memsweep({"plan", sweep, "--split-by", field}, dir);
  EXPECT_EQ(plan.exit_status, kOk) << plan.err;
  std::vector<std::string> ids;
  std::istringstream lines(plan.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::string id;
    std::string number;  // the trial's plan number, beside its id
    std::string in_part;
    cells >> id >> number >> in_part;
    if (std::regex_match(id, std::regex("[0-9a-f]{12}")) && in_part == part) ids.push_back(id);
  }
  return ids;
}

std::vector<std::string> sorted(std::vector<std::string> values) {
  std::sort(values.begin(), values.end());
  return values;
}

TEST(RunParts, EachPartWritesItsOwnNamedFileWithExactlyItsTrials) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "parts.toml", kPartsSweep);
  const CommandResult outputs = run_memsweep({"plan", "parts.toml", "--split-by", "batch_size", "--outputs"}, cwd);
  ASSERT_EQ(outputs.exit_status, kOk) << outputs.err;
  ASSERT_EQ(outputs.out, "parts.batch_size-16.h5\nparts.batch_size-32.h5\n");

  const CommandResult second =
      memsweep_on_ranks(2, with_tiny({"run", "parts.toml", "--split-by", "batch_size", "--part", "1"}), cwd);
  ASSERT_EQ(second.exit_status, kOk) << second.err;
  EXPECT_THAT(second.err, HasSubstr("part 1 of parts 0..1 by batch_size: batch_size=32, 2 of the sweep's 4 trials"));
  EXPECT_THAT(second.err, HasSubstr("results in parts.batch_size-32.h5"));
  const auto file = dir.path() / "parts.batch_size-32.h5";
  ASSERT_TRUE(std::filesystem::exists(file));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "parts.h5"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "parts.batch_size-16.h5"));

  const TsvTable trials = h5py_table(file, "trials");
  ASSERT_EQ(trials.rows.size(), 2U);
  std::vector<std::string> ids;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "batch_size"), "32");
    EXPECT_EQ(trials.at(row, "status"), "ok");
    ids.push_back(trials.at(row, "trial_id"));
  }
  const std::vector<std::string> planned = planned_ids("parts.toml", "batch_size", "1", cwd);
  ASSERT_EQ(planned.size(), 2U);
  EXPECT_EQ(sorted(ids), sorted(planned)) << "the run's trials are the ones plan lists for part 1";
  const TsvTable samples = h5py_table(file, "samples");
  ASSERT_FALSE(samples.rows.empty());
  for (std::size_t row = 0; row < samples.rows.size(); ++row)
    EXPECT_NE(std::find(ids.begin(), ids.end(), samples.at(row, "trial_id")), ids.end());

  const auto attributes = h5py_attributes(file);
  EXPECT_EQ(attributes.at("part"), "batch_size=32");
  EXPECT_EQ(attributes.at("planned_trials"), "2");
  EXPECT_EQ(attributes.at("sweep_text"), kPartsSweep) << "the whole sweep's text, for summary";

  // -o with {part}, in one process.
  const CommandResult first = memsweep_alone(
      with_tiny({"run", "parts.toml", "--split-by", "batch_size", "--part", "0", "-o", "sub-{part}.h5", "-q"}), cwd);
  ASSERT_EQ(first.exit_status, kOk) << first.err;
  const TsvTable first_trials = h5py_table(dir.path() / "sub-batch_size-16.h5", "trials");
  ASSERT_EQ(first_trials.rows.size(), 2U);
  for (std::size_t row = 0; row < first_trials.rows.size(); ++row) EXPECT_EQ(first_trials.at(row, "batch_size"), "16");
  EXPECT_EQ(h5py_attributes(dir.path() / "sub-batch_size-16.h5").at("part"), "batch_size=16");
  EXPECT_NE(h5py_attributes(dir.path() / "sub-batch_size-16.h5").at("sweep_hash"), attributes.at("sweep_hash"));

  // The whole sweep records an empty part.
  const CommandResult whole = memsweep_alone(with_tiny({"run", "parts.toml", "-q"}), cwd);
  ASSERT_EQ(whole.exit_status, kOk) << whole.err;
  EXPECT_EQ(h5py_attributes(dir.path() / "parts.h5").at("part"), "");
  EXPECT_EQ(h5py_table(dir.path() / "parts.h5", "trials").rows.size(), 4U);
}

// The trial ids `memsweep plan` lists for the whole sweep, in its order.
std::vector<std::string> plan_order(const std::string& sweep, const std::string& dir) {
  const CommandResult plan = run_memsweep({"plan", sweep}, dir);
  EXPECT_EQ(plan.exit_status, kOk) << plan.err;
  std::vector<std::string> ids;
  std::istringstream lines(plan.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::string id;
    cells >> id;
    if (std::regex_match(id, std::regex("[0-9a-f]{12}"))) ids.push_back(id);
  }
  return ids;
}

// Part 1 by batch size holds the plan's second and fourth trials: its file
// and its summary number them so, not 1 and 2.
TEST(RunParts, APartsTrialsKeepThePlansNumbersInTheFileAndTheSummary) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "parts.toml", kPartsSweep);
  ASSERT_EQ(memsweep_alone(with_tiny({"run", "parts.toml", "--split-by", "batch_size", "--part", "1", "-q"}), cwd)
                .exit_status,
            kOk);
  const auto file = dir.path() / "parts.batch_size-32.h5";
  const std::vector<std::string> plan = plan_order("parts.toml", cwd);
  ASSERT_EQ(plan.size(), 4U);
  const TsvTable trials = h5py_table(file, "trials");
  ASSERT_EQ(trials.rows.size(), 2U);
  std::set<std::string> numbers;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    const auto position = std::find(plan.begin(), plan.end(), id) - plan.begin();
    EXPECT_EQ(trials.at(row, "plan_index"), std::to_string(position)) << id;
    numbers.insert(std::to_string(position + 1));
  }
  EXPECT_EQ(numbers, (std::set<std::string>{"2", "4"}));

  const CommandResult summary = run_memsweep({"summary", file.string()}, cwd);
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  // Categorical columns first, in this order, model and optimizer always.
  EXPECT_THAT(summary.out, ::testing::ContainsRegex("trial +id +model +optimizer +lr +epochs +batch +hidden"));
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    const auto number = std::find(plan.begin(), plan.end(), id) - plan.begin() + 1;
    EXPECT_THAT(summary.out, ::testing::ContainsRegex(fmt::format("\n *{} +{} +mlp +sgd +", number, id)))
        << summary.out;
  }
}

// A sample's place among the trainer's steps: setup, then each epoch's
// training and its evaluation; nullopt for a label that is none of them.
std::optional<int> trainer_step(int epoch, int phase, int epochs) {
  if (phase == 0 && epoch == 0) return 0;
  if ((phase != 1 && phase != 2) || epoch < 1 || epoch > epochs) return std::nullopt;
  return 2 * (epoch - 1) + phase;
}

// The evaluation pass after each epoch is a phase of its own in the samples.
// What the samples must show is the phases' order, each step in turn, not a
// number of samples per phase: how long a phase lasts is the machine's. A
// step may be missing only between two samples far enough apart for the
// sampler to have missed it (a busy machine's pause); between samples taken
// at the sampler's pace, a jump over a step is one the runner never
// recorded. The sets make each phase last many intervals (the last
// evaluation too, which no later sample could show skipped).
TEST(RunCommand, SamplesCarryTheSetupTrainingAndEvaluationPhases) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "phases.toml", R"(
[sweep]
name = "phases"
[sampler]
interval_ms = 2
[[trial]]
dataset = "synthetic"
synthetic = { shape = [1, 16, 16], classes = 4, train_size = 32768, test_size = 65536 }
epochs = 2
batch_size = 64
hidden = [256]
)");
  const CommandResult run = memsweep_alone({"run", "phases.toml", "-o", "phases.h5", "-q"}, cwd);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const int epochs = static_cast<int>(h5py_table(dir.path() / "phases.h5", "trials").number(0, "epochs"));
  const double interval = std::stod(h5py_attributes(dir.path() / "phases.h5").at("sampler_interval_ms")) / 1000.0;
  // Beyond the sampler's pace and its jitter on a busy machine (gaps of 2.8
  // intervals are common), short of the shortest phase here (about 13).
  const double sampler_pause = 3 * interval;

  const TsvTable samples = h5py_table(dir.path() / "phases.h5", "samples");
  std::vector<std::pair<double, int>> steps;  // (t, step)
  for (std::size_t row = 0; row < samples.rows.size(); ++row) {
    const int epoch = std::stoi(samples.at(row, "epoch"));
    const int phase = std::stoi(samples.at(row, "phase"));
    const std::optional<int> step = trainer_step(epoch, phase, epochs);
    ASSERT_TRUE(step.has_value()) << "row " << row << ": epoch " << epoch << ", phase " << phase;
    steps.emplace_back(samples.number(row, "t"), *step);
  }
  std::sort(steps.begin(), steps.end());
  ASSERT_FALSE(steps.empty());
  EXPECT_EQ(steps.front().second, 0) << "the first sample is taken before the trainer reports a phase";
  for (std::size_t i = 1; i < steps.size(); ++i) {
    const auto [before, step_before] = steps[i - 1];
    const auto [t, step] = steps[i];
    EXPECT_GE(step, step_before) << "t=" << t << ": a step recorded after the one that follows it";
    if (step > step_before + 1) {
      EXPECT_GT(t - before, sampler_pause) << "t=" << t << ": from step " << step_before << " to " << step
                                           << " between samples " << (t - before) * 1e3 << " ms apart";
    }
  }
  EXPECT_EQ(steps.back().second, 2 * epochs) << "the trial ends in its last epoch's evaluation";
}

// A CNN beside an MLP, on synthetic data of two shapes: the summary shows
// each one's channels and shape after model and optimizer.
TEST(RunCommand, SummaryShowsChannelsAndASyntheticShapeThatVaries) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "kinds.toml", R"(
[sweep]
name = "kinds"
[defaults]
dataset = "synthetic"
epochs = 1
hidden = [16]
[[trial]]
model = "cnn"
channels = [4, 8]
optimizer = "adam"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 256, test_size = 64 }
[[trial]]
model = "mlp"
optimizer = "sgd"
synthetic = { shape = [3, 8, 8], classes = 4, train_size = 256, test_size = 64 }
)");
  ASSERT_EQ(memsweep_alone(with_tiny({"run", "kinds.toml", "-o", "kinds.h5", "-q"}), cwd).exit_status, kOk);
  const std::vector<std::string> plan = plan_order("kinds.toml", cwd);
  ASSERT_EQ(plan.size(), 2U);
  const CommandResult summary = run_memsweep({"summary", "kinds.h5"}, cwd);
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, ::testing::ContainsRegex("trial +id +model +optimizer +channels +shape +lr +epochs"));
  EXPECT_THAT(summary.out, ::testing::ContainsRegex("\n1 +" + plan[0] + " +cnn +adam +4-8 +1x8x8 +0.01 "))
      << summary.out;
  EXPECT_THAT(summary.out, ::testing::ContainsRegex("\n2 +" + plan[1] + " +mlp +sgd +- +3x8x8 +0.01 ")) << summary.out;
}

TEST(RunParts, ResumeContinuesTheSamePartAndRefusesAnothers) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "parts.toml", kPartsSweep);
  const std::vector<std::string> part1{"run", "parts.toml", "--split-by", "batch_size", "--part", "1"};
  ASSERT_EQ(memsweep_alone(with_tiny(part1), cwd).exit_status, kOk);
  const auto file = dir.path() / "parts.batch_size-32.h5";

  std::vector<std::string> resume = part1;
  resume.push_back("--resume");
  const CommandResult resumed = memsweep_alone(with_tiny(resume), cwd);
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  EXPECT_TRUE(printed_trials(resumed.err).empty()) << "every trial of the part was final\n" << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("2 of 2 trials done, 0 to run"));
  EXPECT_EQ(h5py_table(file, "runs").rows.size(), 2U);
  EXPECT_EQ(h5py_table(file, "trials").rows.size(), 2U);
  const std::string before = slurp(file);

  // Part 0 pointed at part 1's file (copied to the name part 0 writes).
  const auto copy = dir.path() / "parts.batch_size-16.h5";
  std::filesystem::copy_file(file, copy);
  const CommandResult other =
      memsweep_alone(with_tiny({"run", "parts.toml", "--split-by", "batch_size", "--part", "0", "--resume"}), cwd);
  EXPECT_EQ(other.exit_status, kBadInput);
  EXPECT_THAT(other.err, HasSubstr("parts.batch_size-16.h5: holds part batch_size=32 of sweep \"parts\""));
  EXPECT_THAT(other.err, HasSubstr("but this run is part batch_size=16"));
  EXPECT_EQ(memsweep_lines(other.err), 1U) << other.err;
  EXPECT_EQ(slurp(copy), before) << "a refused resume leaves the file as it was";

  // The whole sweep on a part's file.
  const CommandResult whole = memsweep_alone(with_tiny({"run", "parts.toml", "-o", file.string(), "--resume"}), cwd);
  EXPECT_EQ(whole.exit_status, kBadInput);
  EXPECT_THAT(whole.err, HasSubstr("holds part batch_size=32"));
  EXPECT_THAT(whole.err, HasSubstr("but this run is the whole sweep"));
  EXPECT_EQ(slurp(file), before);
}

TEST(RunParts, SummaryAppliesThePartAndShowsSeveralFilesTogether) {
  const TempDir dir;
  const std::string cwd = dir.path().string();
  sweep_file(dir, "parts.toml", kPartsSweep);
  for (const char* part : {"0", "1"}) {
    const CommandResult run =
        memsweep_alone(with_tiny({"run", "parts.toml", "--split-by", "batch_size", "--part", part, "-q"}), cwd);
    ASSERT_EQ(run.exit_status, kOk) << run.err;
  }
  const std::string first = (dir.path() / "parts.batch_size-16.h5").string();
  const std::string second = (dir.path() / "parts.batch_size-32.h5").string();

  // One part's file: its two trials are all that is planned, none "not run yet".
  const CommandResult one = run_memsweep({"summary", second});
  ASSERT_EQ(one.exit_status, kOk) << one.err;
  EXPECT_THAT(one.out, HasSubstr("sweep \"parts\" (parts.toml), part batch_size=32, started"));
  EXPECT_THAT(one.out, HasSubstr("trials: 2 planned; 2 ok\n"));
  EXPECT_THAT(one.out, ::testing::Not(HasSubstr("not run yet")));
  EXPECT_THAT(one.out, HasSubstr("synthetic (2 trials)"));

  // Both: one table across the files, in the sweep's order (batch 16, 32, 16, 32).
  const CommandResult both = run_memsweep({"summary", first, second});
  ASSERT_EQ(both.exit_status, kOk) << both.err;
  EXPECT_THAT(both.out, HasSubstr("file 1: " + first + "\n"));
  EXPECT_THAT(both.out, HasSubstr("file 2: " + second + "\n"));
  EXPECT_THAT(both.out, HasSubstr("part batch_size=16"));
  EXPECT_THAT(both.out, HasSubstr("2 files: 4 trials planned; 4 ok\n"));
  EXPECT_THAT(both.out, ::testing::Not(HasSubstr("not run yet")));
  EXPECT_THAT(both.out, HasSubstr("synthetic (4 trials)"));
  // Rows: trial file id model optimizer lr epochs batch ...
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(both.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string cell; cells >> cell;) row.push_back(cell);
    if (row.size() > 5 && std::regex_match(row[2], std::regex("[0-9a-f]{12}"))) rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 4U) << both.out;
  const std::vector<std::vector<std::string>> expected{
      {"1", "1", "0.05", "16"}, {"2", "2", "0.05", "32"}, {"3", "1", "0.1", "16"}, {"4", "2", "0.1", "32"}};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][0], expected[i][0]) << both.out;
    EXPECT_EQ(rows[i][1], expected[i][1]) << both.out;
    EXPECT_EQ(rows[i][5], expected[i][2]) << both.out;
    EXPECT_EQ(rows[i][7], expected[i][3]) << both.out;
  }

  // A missing file among several is bad input naming it.
  const CommandResult missing = run_memsweep({"summary", first, (dir.path() / "nope.h5").string()});
  EXPECT_EQ(missing.exit_status, kBadInput);
  EXPECT_THAT(missing.err, HasSubstr("nope.h5"));
}

// ---- failure isolation ----------------------------------------------------------

TEST(RunCommand, EachKindOfFailureIsRecordedAndTheSweepGoesOn) {
  const TempDir dir;
  // An MNIST whose headers pass the check before the sweep, with a label out
  // of range that only the full load sees: the trial fails, as one whose
  // dataset vanished after the check would (a missing dataset is exit 2
  // before the sweep: test_dataset_preflight.cpp).
  write_tiny_datasets(dir.path() / "bad-data");
  write_dataset_file(dir.path() / "bad-data" / "mnist" / "train-labels-idx1-ubyte", idx_labels({0, 200}));
  const std::string sweep = sweep_file(dir, "failures.toml", R"(
[sweep]
name = "failures"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 512, test_size = 128 }
epochs = 2
batch_size = 32
hidden = [32]
[[trial]]
learning_rate = 0.05
[[trial]]
dataset = "mnist"
[[trial]]
learning_rate = 1e30
[[trial]]
learning_rate = 0.01
mem_budget = "1MiB"
)");
  const CommandResult run = memsweep_on_ranks(
      2, {"run", sweep, "-o", "f.h5", "--data-dir", (dir.path() / "bad-data").string()}, dir.path().string());
  ASSERT_EQ(run.exit_status, kOk) << "failed trials are results, not a failed sweep\n" << run.err;
  const TsvTable trials = h5py_table(dir.path() / "f.h5", "trials");
  ASSERT_EQ(trials.rows.size(), 4U);
  std::multiset<std::string> statuses;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    statuses.insert(trials.at(row, "status"));
    if (trials.at(row, "dataset") == "mnist") {
      EXPECT_THAT(trials.at(row, "message"), HasSubstr("label 200 is out of range"));
    }
    if (trials.at(row, "status") == "over_budget") {
      EXPECT_THAT(trials.at(row, "message"), HasSubstr("budget"));
    }
  }
  EXPECT_EQ(statuses, (std::multiset<std::string>{"ok", "failed", "diverged", "over_budget"}));

  const CommandResult summary = run_memsweep({"summary", (dir.path() / "f.h5").string()});
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("not ok (3)"));
  // Each numbered as the plan lists it (the file order of [[trial]]s here).
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (trials.at(row, "status") == "ok") continue;
    const int number = std::stoi(trials.at(row, "plan_index")) + 1;
    EXPECT_THAT(summary.out, ::testing::ContainsRegex(fmt::format(
                                 "\n{} +{} +0 +{} ", number, trials.at(row, "trial_id"), trials.at(row, "status"))))
        << summary.out;
  }
  EXPECT_EQ(trials.at(trials.where("dataset", "mnist").at(0), "plan_index"), "1");
}

// ---- signals and kills ------------------------------------------------------------

// Trials of two seconds or more each on one worker (15 epochs: 2.4 s on a
// Zen 5, longer elsewhere), so that a signal or a kill
// lands while one runs.
constexpr const char* kSlowSweep = R"(
[sweep]
name = "slow"
[sampler]
interval_ms = 5
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 16000, test_size = 500 }
learning_rate = 0.02
batch_size = 16
epochs = 15
[grid]
hidden = [[256, 256], [320, 256], [384, 256], [448, 256]]
)";

std::size_t finished_lines(const BackgroundProcess& process) { return printed_trials(process.err()).size(); }

TEST(RunCommand, SignalStopsTheSweepAndResumeCompletesIt) {
  const TempDir dir;
  const std::string sweep = sweep_file(dir, "slow.toml", kSlowSweep);
  const std::string out = (dir.path() / "s.h5").string();
  {
    BackgroundProcess run(memsweep_on_ranks_argv(2, {"run", sweep, "-o", out, "--flush-interval", "0.2"}), dir.path(),
                          kEnvironment);
    ASSERT_TRUE(run.wait_for([&] { return finished_lines(run) >= 1; }, std::chrono::seconds(120))) << run.err();
    run.signal(SIGUSR1);  // mpirun forwards it to every rank, as Slurm's --signal does
    EXPECT_EQ(run.wait(), kStopped) << run.err();
    EXPECT_THAT(run.err(), HasSubstr("--resume"));
  }
  TsvTable trials = h5py_table(out, "trials");
  EXPECT_LT(trials.where("status", "ok").size(), 4U);
  EXPECT_EQ(trials.where("status", "interrupted").size(), 1U) << "the trial running at the signal";

  const CommandResult resumed = memsweep_on_ranks(2, {"run", sweep, "-o", out, "--resume", "-q"}, dir.path().string());
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  trials = h5py_table(out, "trials");
  std::map<std::string, int> final_rows;
  for (std::size_t row = 0; row < trials.rows.size(); ++row)
    if (trials.at(row, "status") == "ok") ++final_rows[trials.at(row, "trial_id")];
  EXPECT_EQ(final_rows.size(), 4U);
  for (const auto& [id, count] : final_rows) EXPECT_EQ(count, 1) << id;
}

// The trial processes (`memsweep trial ID`) of `rank`.
std::vector<pid_t> trial_processes_of(pid_t rank) {
  std::vector<pid_t> found;
  for (const auto& [pid, id] : trial_processes_below(rank)) found.push_back(pid);
  return found;
}

// Whether every one of `pids` is gone (or no longer a trial process) within `timeout`.
bool trial_processes_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const bool any = std::any_of(pids.begin(), pids.end(), [](pid_t pid) {
      return slurp("/proc/" + std::to_string(pid) + "/cmdline").find("trial") != std::string::npos;
    });
    if (!any) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A worker rank killed (kill -9, its node lost) mid-trial: its attempt is
// no result. The resume records it `interrupted` (end cause rank_lost) from
// the samples it streamed, and runs the trial again without --retry-killed.
TEST(RunCommand, AKilledRankLeavesAnInterruptedTrialThatRunsAgain) {
  const TempDir dir;
  std::vector<pid_t> trials_before_kill;
  // Trials of 3 s or more, so that one can be caught 2 s in, when rank 0 has
  // made some of its samples durable even on a loaded machine (24 epochs:
  // about 4 s on a Zen 5, 9 s on the Intel machines before it).
  std::string slower = kSlowSweep;
  slower.replace(slower.find("epochs = 15"), 11, "epochs = 24");
  const std::string sweep = sweep_file(dir, "slow.toml", slower);
  const std::string out = (dir.path() / "k.h5").string();
  // When a rank dies, mpirun ends rank 0 too (SIGTERM, then SIGKILL after
  // this grace, as jobs/sweep.sbatch gives it). Whether rank 0 marked its
  // run first changes only the lost row's message.
  std::map<std::string, std::string> environment = kEnvironment;
  environment["OMPI_MCA_odls_base_sigkill_timeout"] = "3";
  std::string killed_run_err;  // what the killed run printed, for a failure's message
  {
    BackgroundProcess run(memsweep_on_ranks_argv(2, {"run", sweep, "-o", out, "--flush-interval", "0.2"}), dir.path(),
                          environment);
    ASSERT_TRUE(run.wait_for([&] { return finished_lines(run) >= 1; }, std::chrono::seconds(120))) << run.err();
    const auto workers = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "1");
    ASSERT_EQ(workers.size(), 1U);
    // Into a trial that has streamed for over a second (rank 0 makes samples
    // durable at least every second), then kill its rank as the OOM killer
    // would: a trial that ends first is passed over for the next one.
    for (int tries = 0; tries < 4 && trials_before_kill.empty(); ++tries) {
      std::vector<pid_t> running;
      ASSERT_TRUE(run.wait_for([&] { return !(running = trial_processes_of(workers.front())).empty(); },
                               std::chrono::seconds(30)));
      std::this_thread::sleep_for(std::chrono::milliseconds(2000));
      if (trial_processes_of(workers.front()) == running) trials_before_kill = running;
    }
    ASSERT_EQ(trials_before_kill.size(), 1U) << "the worker runs its trial in a process of its own";
    ::kill(workers.front(), SIGKILL);
    EXPECT_NE(run.wait(), kOk);
    killed_run_err = run.err();
  }
  const bool marked = !h5py_table(out, "runs", true).at(0, "end_state").empty();
  // Its trial process died with it: no orphan keeps training.
  EXPECT_TRUE(trial_processes_gone(trials_before_kill, std::chrono::seconds(5)))
      << "a trial process outlived its killed rank";
  // The file is left as the killed job left it: HDF5's "open for writing" mark set.
  const CommandResult resumed = memsweep_on_ranks(2, {"run", sweep, "-o", out, "--resume"}, dir.path().string());
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  const TsvTable trials = h5py_table(out, "trials");
  EXPECT_TRUE(trials.where("status", "killed").empty()) << resumed.err;
  const auto lost = trials.where("end_cause", "rank_lost");
  ASSERT_EQ(lost.size(), 1U) << resumed.err << "\nthe killed run printed:\n" << killed_run_err;
  EXPECT_EQ(trials.at(lost.front(), "status"), "interrupted");
  EXPECT_EQ(trials.at(lost.front(), "rank"), "1");
  EXPECT_THAT(trials.at(lost.front(), "message"),
              HasSubstr(marked ? "rank 1 was lost during the trial" : "rank 0 died while rank 1 ran the trial"));
  EXPECT_GT(trials.number(lost.front(), "rss_peak"), 0);
  EXPECT_GT(trials.number(lost.front(), "samples"), 0);
  // Every trial has exactly one final row: the lost one ran again, as its next attempt.
  EXPECT_EQ(trials.where("status", "ok").size(), 4U) << "the lost trial runs again without --retry-killed";
  const std::string lost_id = trials.at(lost.front(), "trial_id");
  const auto attempts = trials.where("trial_id", lost_id);
  ASSERT_EQ(attempts.size(), 2U);
  EXPECT_EQ(trials.at(attempts.back(), "status"), "ok");
  EXPECT_GT(std::stoi(trials.at(attempts.back(), "attempt")), std::stoi(trials.at(attempts.front(), "attempt")));
}

// Rank 0 killed while a worker's trial runs: the worker's trial process was
// healthy, so the resume records that attempt as `interrupted` (not killed)
// and runs the trial again without --retry-killed.
TEST(RunCommand, AKilledRankZeroLeavesAnInterruptedTrialThatRunsAgain) {
  const TempDir dir;
  const std::string sweep = sweep_file(dir, "slow.toml", kSlowSweep);
  const std::string out = (dir.path() / "z.h5").string();
  std::vector<pid_t> trials_before_kill;
  {
    BackgroundProcess run(memsweep_on_ranks_argv(2, {"run", sweep, "-o", out, "--flush-interval", "0.2"}), dir.path(),
                          kEnvironment);
    ASSERT_TRUE(run.wait_for([&] { return finished_lines(run) >= 1; }, std::chrono::seconds(120))) << run.err();
    const auto writer = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "0");
    const auto workers = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "1");
    ASSERT_EQ(writer.size(), 1U);
    ASSERT_EQ(workers.size(), 1U);
    // A trial that has streamed for over a second and a half: its samples
    // are in the file when rank 0 dies.
    for (int tries = 0; tries < 4 && trials_before_kill.empty(); ++tries) {
      std::vector<pid_t> running;
      ASSERT_TRUE(run.wait_for([&] { return !(running = trial_processes_of(workers.front())).empty(); },
                               std::chrono::seconds(30)));
      std::this_thread::sleep_for(std::chrono::milliseconds(1600));
      if (trial_processes_of(workers.front()) == running) trials_before_kill = running;
    }
    ASSERT_EQ(trials_before_kill.size(), 1U);
    ::kill(writer.front(), SIGKILL);
    EXPECT_NE(run.wait(), kOk);
  }
  EXPECT_TRUE(trial_processes_gone(trials_before_kill, std::chrono::seconds(5)))
      << "the worker's trial process ended with the job";
  const CommandResult resumed = memsweep_on_ranks(2, {"run", sweep, "-o", out, "--resume"}, dir.path().string());
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  const TsvTable trials = h5py_table(out, "trials");
  EXPECT_TRUE(trials.where("status", "killed").empty()) << resumed.err;
  std::size_t lost = 0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (trials.at(row, "end_cause") != "rank_lost") continue;
    ++lost;
    EXPECT_EQ(trials.at(row, "status"), "interrupted");
    EXPECT_THAT(trials.at(row, "message"), HasSubstr("rank 0 died while rank 1 ran the trial"));
  }
  EXPECT_EQ(lost, 1U) << resumed.err;
  EXPECT_EQ(trials.where("status", "ok").size(), 4U) << "the interrupted trial ran again";
}

}  // namespace
}  // namespace memsweep::testing
