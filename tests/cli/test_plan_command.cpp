// `memsweep plan` run as a user runs it: the published studies print their
// exact trials, and bad input gets one clear line and exit status 2.

#include "support/dataset_files.hpp"
#include "support/exit_statuses.hpp"
#include "support/paper_tables.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

const std::string kExamples = std::string(MEMSWEEP_SOURCE_DIR) + "/jobs/examples/";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Each trial's line as its cells, the trial number kept.
std::vector<std::vector<std::string>> trial_lines(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : lines_of(out)) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string cell; cells >> cell;) row.push_back(cell);
    if (!row.empty() && std::regex_match(row[0], std::regex("[0-9a-f]{12}"))) rows.push_back(row);
  }
  return rows;
}

// Table rows are the lines that start with a 12-digit trial id. The trial
// number beside the id (the one summary and the report show) must count the
// rows from 1; it is checked here and left out of what is returned.
std::vector<std::vector<std::string>> table_rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (std::vector<std::string> row : trial_lines(out)) {
    EXPECT_GE(row.size(), 2u) << row[0];
    if (row.size() < 2) continue;
    EXPECT_EQ(row[1], std::to_string(rows.size() + 1)) << row[0];
    row.erase(row.begin() + 1);
    rows.push_back(row);
  }
  return rows;
}

struct Study {
  const char* sweep_file;
  const char* csv_file;
  const char* dataset;
  std::size_t trials;
};

class PlanPaperStudy : public ::testing::TestWithParam<Study> {};

TEST_P(PlanPaperStudy, PrintsThePublishedTrialsWithTheirExactValues) {
  const Study& study = GetParam();
  const auto csv = paper_table(study.csv_file);
  MEMSWEEP_REQUIRE_SHARED_FILE(csv);
  const std::vector<PublishedTrial> published = read_paper_table(csv);

  // Plan looks for the study's dataset: the smallest files it accepts.
  const TempDir data;
  write_tiny_datasets(data.path());
  const CommandResult result = run_memsweep({"plan", kExamples + study.sweep_file, "--data-dir", data.path().string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto rows = table_rows(result.out);
  ASSERT_EQ(rows.size(), study.trials) << result.out;
  ASSERT_EQ(published.size(), study.trials);
  EXPECT_THAT(result.out, HasSubstr(fmt::format("\n{} trials\n", study.trials)));
  // id repeat dataset model optimizer lr epochs batch hidden predicted ("5.23 MiB": two cells)
  for (std::size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(fmt::format("published trial {}", i + 1));
    ASSERT_EQ(rows[i].size(), 11u);
    EXPECT_EQ(rows[i][2], study.dataset);
    EXPECT_EQ(rows[i][3], "mlp");
    EXPECT_DOUBLE_EQ(std::stod(rows[i][5]), published[i].learning_rate);
    EXPECT_EQ(rows[i][6], std::to_string(published[i].epochs));
    EXPECT_EQ(rows[i][7], std::to_string(published[i].batch_size));
    EXPECT_EQ(rows[i][8], fmt::format("{}", fmt::join(published[i].hidden, "-")));
    // The paper's MLPs need a few MiB each (docs/estimate.md).
    EXPECT_GT(std::stod(rows[i][9]), 0.0);
    EXPECT_EQ(rows[i][10], "MiB");
  }
}

INSTANTIATE_TEST_SUITE_P(Paper, PlanPaperStudy,
                         ::testing::Values(Study{"paper-mnist.toml", "mnist_table1.csv", "mnist", 11},
                                           Study{"paper-fashion-mnist.toml", "fashion_mnist_tables2_3.csv",
                                                 "fashion-mnist", 5},
                                           Study{"paper-cifar-10.toml", "cifar10_tables4_5.csv", "cifar-10", 5}));

TEST(PlanCommand, QuickstartPrintsEveryTrialOnce) {
  const CommandResult result = run_memsweep({"plan", kExamples + "quickstart.toml"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto rows = table_rows(result.out);
  ASSERT_GE(rows.size(), 2u);
  std::set<std::string> ids;
  for (const auto& row : rows) {
    ids.insert(row[0]);
    EXPECT_THAT(row[2], ::testing::StartsWith("synthetic:"));
  }
  EXPECT_EQ(ids.size(), rows.size());
  EXPECT_THAT(result.out, HasSubstr("sweep \"quickstart\""));
}

TEST(PlanCommand, IdsDoNotDependOnTheWorkingDirectoryOrFileName) {
  const TempDir dir;
  const auto copy = dir.write("renamed.toml", "[grid]\nbatch_size = [3, 4]\n");
  const auto again = dir.write("sub/other.toml", "[grid]\nbatch_size = [3, 4]\n");
  const auto a = table_rows(run_memsweep({"plan", copy.string()}).out);
  const auto b = table_rows(run_memsweep({"plan", "other.toml"}, (dir.path() / "sub").string()).out);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(a[0][0], b[0][0]);
  EXPECT_EQ(a[1][0], b[1][0]);
  EXPECT_NE(a[0][0], a[1][0]);
}

// Issue 29: a sweep of more than 1000 trials shows its first and last ten
// and its sections' values, made from their positions (10^7 in a fraction
// of a second); --all lists every one.
TEST(PlanCommand, ALargeSweepShowsItsEndsAndItsSectionsAndAllListsEveryTrial) {
  const TempDir dir;
  std::string grid = "[grid]\nbatch_size = [";
  for (int k = 1; k <= 1000; ++k) grid += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  grid += "]\nepochs = [";
  for (int k = 1; k <= 10'000; ++k) grid += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  grid += "]\n";
  const auto large = dir.write("large.toml", grid);
  const CommandResult result = run_memsweep({"plan", large.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("10000000 trials (10000000 defined x 1 repeat)"));
  EXPECT_THAT(result.out, HasSubstr("[grid]: 10000000 trials\n  batch_size: 1000 values: 1, 2, 3 … 1000\n"
                                    "  epochs: 10000 values: 1, 2, 3 … 10000\n"));
  EXPECT_THAT(result.out, HasSubstr("9999980 more"));
  const auto rows = trial_lines(result.out);
  ASSERT_EQ(rows.size(), 20U);
  EXPECT_EQ(rows.front()[1], "1");
  EXPECT_EQ(rows[10][1], "9999991");
  EXPECT_EQ(rows.back()[1], "10000000");
  EXPECT_EQ(rows.back()[8], "1000") << "the last trial: the last batch size";
  EXPECT_EQ(rows.back()[7], "10000") << "and the last epoch count";

  const auto small = dir.write(
      "small.toml", "[grid]\nbatch_size = [1, 2, 3, 4]\nepochs = [" + [] {
        std::string epochs;
        for (int k = 1; k <= 500; ++k) epochs += fmt::format("{}{}", k == 1 ? "" : ", ", k);
        return epochs;
      }() + "]\n");
  EXPECT_EQ(trial_lines(run_memsweep({"plan", small.string()}).out).size(), 20U);
  const auto all = table_rows(run_memsweep({"plan", "--all", small.string()}).out);
  ASSERT_EQ(all.size(), 2000U);
  std::set<std::string> ids;
  for (const auto& row : all) ids.insert(row[0]);
  EXPECT_EQ(ids.size(), 2000U);
}

TEST(PlanCommand, DuplicateTrialsAreNotedOnStderr) {
  const TempDir dir;
  const auto file = dir.write("dup.toml", "[[trial]]\nbatch_size = 4\n[[trial]]\nbatch_size = 4\n");
  const CommandResult result = run_memsweep({"plan", file.string()});
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_EQ(table_rows(result.out).size(), 1u);
  EXPECT_THAT(result.err, HasSubstr("defines the same trial as"));
}

// ---- --split-by and --outputs (an array job's parts) ----

// (batch 16, mnist), (16, fashion-mnist), (64, mnist), (64, fashion-mnist), by hand from the grid's order.
constexpr const char* kStudy = "[grid]\nbatch_size = [16, 64]\ndataset = [\"mnist\", \"fashion-mnist\"]\n";

// The parts table's rows: "K  FIELD=VALUE  TRIALS  RESULTS".
std::vector<std::vector<std::string>> part_rows(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : lines_of(out)) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string cell; cells >> cell;) row.push_back(cell);
    if (row.size() == 4 && std::regex_match(row[0], std::regex("[0-9]+")) && row[1].find('=') != std::string::npos)
      rows.push_back(row);
  }
  return rows;
}

TEST(PlanSplit, ListsThePartsTheirTrialsAndTheirFiles) {
  const TempDir dir;
  dir.write("study.toml", kStudy);
  write_tiny_datasets(dir.path() / "data");
  const CommandResult result =
      run_memsweep({"plan", "study.toml", "--split-by", "dataset", "--data-dir", "data"}, dir.path().string());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("2 parts by dataset: memsweep run --split-by dataset --part K runs part K"));
  EXPECT_THAT(result.out, HasSubstr("--array=0-1"));
  const auto parts = part_rows(result.out);
  ASSERT_EQ(parts.size(), 2u) << result.out;
  EXPECT_EQ(parts[0], (std::vector<std::string>{"0", "dataset=mnist", "2", "study.dataset-mnist.h5"}));
  EXPECT_EQ(parts[1], (std::vector<std::string>{"1", "dataset=fashion-mnist", "2", "study.dataset-fashion-mnist.h5"}));
  // The trials' table gains a part column: id part repeat dataset ...
  const auto trials = table_rows(result.out);
  ASSERT_EQ(trials.size(), 4u) << result.out;
  const std::vector<std::pair<std::string, std::string>> expected{
      {"0", "mnist"}, {"1", "fashion-mnist"}, {"0", "mnist"}, {"1", "fashion-mnist"}};
  for (std::size_t i = 0; i < trials.size(); ++i) {
    EXPECT_EQ(trials[i][1], expected[i].first) << result.out;
    EXPECT_EQ(trials[i][3], expected[i].second) << result.out;
  }
  const CommandResult by_batch =
      run_memsweep({"plan", "study.toml", "--split-by", "batch_size", "-o", "out/{part}.h5", "--data-dir", "data"},
                   dir.path().string());
  ASSERT_EQ(by_batch.exit_status, 0) << by_batch.err;
  const auto batch_parts = part_rows(by_batch.out);
  ASSERT_EQ(batch_parts.size(), 2u) << by_batch.out;
  EXPECT_EQ(batch_parts[0], (std::vector<std::string>{"0", "batch_size=16", "2", "out/batch_size-16.h5"}));
  EXPECT_EQ(batch_parts[1], (std::vector<std::string>{"1", "batch_size=64", "2", "out/batch_size-64.h5"}));
}

TEST(PlanSplit, WithoutSplitByThereIsNoPartsTable) {
  const TempDir dir;
  dir.write("study.toml", kStudy);
  write_tiny_datasets(dir.path() / "data");
  const CommandResult result = run_memsweep({"plan", "study.toml", "--data-dir", "data"}, dir.path().string());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_TRUE(part_rows(result.out).empty()) << result.out;
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("parts by")));
  ASSERT_EQ(table_rows(result.out).size(), 4u);
  EXPECT_EQ(table_rows(result.out)[0].size(), 11u) << "no part column";
}

// --outputs is a question about paths (job scripts ask it): it does not look
// for the datasets, which this folder lacks.
TEST(PlanOutputs, OnlyTheResultsFilesOnePerPartInPartOrder) {
  const TempDir dir;
  dir.write("study.toml", kStudy);
  const std::string cwd = dir.path().string();
  const CommandResult split = run_memsweep({"plan", "study.toml", "--split-by", "dataset", "--outputs"}, cwd);
  ASSERT_EQ(split.exit_status, 0) << split.err;
  EXPECT_EQ(split.out, "study.dataset-mnist.h5\nstudy.dataset-fashion-mnist.h5\n");
  EXPECT_EQ(split.err, "");

  const CommandResult named =
      run_memsweep({"plan", "study.toml", "--split-by", "batch_size", "--outputs", "-o", "/scratch/r-{part}.h5"}, cwd);
  ASSERT_EQ(named.exit_status, 0) << named.err;
  EXPECT_EQ(named.out, "/scratch/r-batch_size-16.h5\n/scratch/r-batch_size-64.h5\n");

  const CommandResult whole = run_memsweep({"plan", "study.toml", "--outputs"}, cwd);
  ASSERT_EQ(whole.exit_status, 0) << whole.err;
  EXPECT_EQ(whole.out, "study.h5\n");
  const CommandResult whole_named = run_memsweep({"plan", "study.toml", "--outputs", "-o", "all.h5"}, cwd);
  ASSERT_EQ(whole_named.exit_status, 0) << whole_named.err;
  EXPECT_EQ(whole_named.out, "all.h5\n");

  // One part only: still one line.
  const CommandResult one = run_memsweep({"plan", "study.toml", "--split-by", "model", "--outputs"}, cwd);
  ASSERT_EQ(one.exit_status, 0) << one.err;
  EXPECT_EQ(one.out, "study.model-mlp.h5\n");
}

TEST(PlanOutputs, NotesGoToStderr) {
  const TempDir dir;
  const auto file = dir.write("dup.toml", "[[trial]]\nbatch_size = 4\n[[trial]]\nbatch_size = 4\n");
  const CommandResult result =
      run_memsweep({"plan", file.string(), "--split-by", "batch_size", "--outputs"}, dir.path().string());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, "dup.batch_size-4.h5\n");
  EXPECT_THAT(result.err, HasSubstr("defines the same trial as"));
}

// Bad input: one line on stderr naming the problem, nothing on stdout, exit 2.
struct BadInvocation {
  const char* name;
  std::vector<std::string> args;  // "@" is replaced by the path of a file holding `contents`
  std::string contents;
  std::string expected;
};

class PlanBadInput : public ::testing::TestWithParam<BadInvocation> {};

TEST_P(PlanBadInput, OneClearLineAndExitStatusTwo) {
  const BadInvocation& c = GetParam();
  const TempDir dir;
  const auto file = dir.write("sweep.toml", c.contents);
  const CommandResult result = run_memsweep(with_file(c.args, file.string()), dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_THAT(result.err, HasSubstr(c.expected));
  EXPECT_LE(lines_of(result.err).size(), 2u) << result.err;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanBadInput,
    ::testing::Values(
        BadInvocation{"unknown_key",
                      {"plan", "@"},
                      "[[trial]]\nbatchsize = 3\n",
                      "sweep.toml:2: trial[0].batchsize: unknown key; expected one of:"},
        BadInvocation{"wrong_type",
                      {"plan", "@"},
                      "[[trial]]\nepochs = 'ten'\n",
                      "sweep.toml:2: trial[0].epochs: expected a whole number from 1 to 100000, found the string"},
        BadInvocation{"impossible_value",
                      {"plan", "@"},
                      "[defaults]\nbatch_size = 0\n[[trial]]\n",
                      "sweep.toml:2: defaults.batch_size: expected a whole number from 1 to 1048576, found 0"},
        BadInvocation{"empty_hidden",
                      {"plan", "@"},
                      "[[trial]]\nhidden = []\n",
                      "trial[0].hidden: an MLP needs at least one hidden layer"},
        BadInvocation{"unknown_dataset",
                      {"plan", "@"},
                      "[[trial]]\ndataset = 'svhn'\n",
                      "trial[0].dataset: unknown dataset \"svhn\""},
        BadInvocation{"syntax_error", {"plan", "@"}, "[sweep\nname = 3\n", "sweep.toml:1: syntax error"},
        BadInvocation{"binary_file",
                      {"plan", "@"},
                      std::string("\x7f"
                                  "ELF\x02\x01\x01\0\0\0",
                                  10),
                      "sweep.toml: a binary file, not a sweep file; expected TOML text"},
        BadInvocation{"empty_file", {"plan", "@"}, "", "sweep.toml:1: the sweep defines no trials"},
        BadInvocation{"missing_file",
                      {"plan", "no-such-sweep.toml"},
                      "",
                      "no-such-sweep.toml: cannot read the sweep file: No such file or directory"},
        BadInvocation{"directory", {"plan", "."}, "", ".: is a directory; expected a sweep file"},
        BadInvocation{"no_command", {}, "", "a command is required: run, summary, watch, plan"},
        BadInvocation{"unknown_command",
                      {"plant", "@"},
                      "",
                      "unknown command \"plant\"; expected one of: run, summary, watch, plan"},
        BadInvocation{"plan_without_file", {"plan"}, "", "sweep is required"},
        BadInvocation{"split_by_unknown_field",
                      {"plan", "@", "--split-by", "depth"},
                      "[grid]\nbatch_size = [1, 2]\n",
                      "--split-by: \"depth\" is not a field a sweep can be split by; expected one of: dataset, model, "
                      "optimizer, learning_rate, epochs, batch_size, hidden, channels, memory_plan, repeat"},
        BadInvocation{"outputs_unknown_field",
                      {"plan", "@", "--split-by", "Dataset", "--outputs"},
                      "[grid]\nbatch_size = [1, 2]\n",
                      "--split-by: \"Dataset\" is not a field"},
        BadInvocation{"split_output_without_placeholder",
                      {"plan", "@", "--split-by", "batch_size", "-o", "r.h5"},
                      "[grid]\nbatch_size = [1, 2]\n",
                      "-o r.h5: with --split-by, the results file must contain {part}"},
        BadInvocation{"outputs_without_placeholder",
                      {"plan", "@", "--split-by", "batch_size", "-o", "r.h5", "--outputs"},
                      "[grid]\nbatch_size = [1, 2]\n",
                      "-o r.h5: with --split-by, the results file must contain {part}"},
        BadInvocation{"placeholder_without_split",
                      {"plan", "@", "-o", "r.{part}.h5", "--outputs"},
                      "[grid]\nbatch_size = [1, 2]\n",
                      "-o r.{part}.h5: {part} stands for a part's label, and this sweep is not split"},
        BadInvocation{"split_by_without_field", {"plan", "@", "--split-by"}, "[[trial]]\n", "--split-by"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PlanCommand, UnreadableFileIsBadInput) {
  if (::geteuid() == 0) {
    // root reads any file; test with a path under a file instead, which no one can open.
    const TempDir dir;
    const auto file = dir.write("plain", "x");
    const CommandResult result = run_memsweep({"plan", (file / "sweep.toml").string()});
    EXPECT_EQ(result.exit_status, kBadInput);
    EXPECT_THAT(result.err, HasSubstr("cannot read the sweep file: Not a directory"));
    return;
  }
  const TempDir dir;
  const auto file = dir.write("locked.toml", "[[trial]]\n");
  std::filesystem::permissions(file, std::filesystem::perms::none);
  const CommandResult result = run_memsweep({"plan", file.string()});
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_THAT(result.err, HasSubstr("cannot read the sweep file: Permission denied"));
}

TEST(MemsweepCommand, HelpAndVersionExitZero) {
  const CommandResult help = run_memsweep({"--help"});
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_THAT(help.out, HasSubstr("plan"));
  const CommandResult version = run_memsweep({"--version"});
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_THAT(version.out, ::testing::MatchesRegex("memsweep [0-9]+\\.[0-9]+\\.[0-9]+\n"));
}

}  // namespace
}  // namespace memsweep::testing
