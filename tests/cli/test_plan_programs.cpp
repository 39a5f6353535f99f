// `memsweep plan` with program trials: a trainer column, a column per
// [params] name, and a program that cannot be started is bad input (exit 2).

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> cells_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> cells;
  for (std::string cell; in >> cell;) cells.push_back(cell);
  return cells;
}

// The table's header (the line starting with "id") and its rows (lines starting with a trial id).
struct PlanTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

PlanTable plan_table(const std::string& out) {
  PlanTable table;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells = cells_of(line);
    if (cells.empty()) continue;
    if (cells[0] == "id") table.header = cells;
    if (std::regex_match(cells[0], std::regex("[0-9a-f]{12}"))) table.rows.push_back(cells);
  }
  return table;
}

constexpr const char* kSideBySide = R"([programs.pytorch]
command = ["sh", "-c", "exit 0", "{batch_size}"]

[defaults]
params = { dropout = 0.1 }

[grid]
program = ["memsweep", "pytorch"]
batch_size = [32, 128]
params.act = ["relu"]
)";

TEST(PlanPrograms, TrainerAndParamsColumns) {
  const TempDir dir;
  const auto file = dir.write("side.toml", kSideBySide);
  const CommandResult result = run_memsweep({"plan", file.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const PlanTable table = plan_table(result.out);
  EXPECT_THAT(table.header, ElementsAre("id", "trial", "trainer", "repeat", "dataset", "model", "optimizer", "lr",
                                        "epochs", "batch", "hidden", "act", "dropout", "predicted"));
  ASSERT_EQ(table.rows.size(), 4u) << result.out;
  // The built-in trainer reads no [params] (-), and has a prediction ("1.20 MiB": two cells).
  EXPECT_EQ(table.rows[0][2], "memsweep");
  EXPECT_EQ(table.rows[0][9], "32");
  EXPECT_EQ(table.rows[0][11], "-");
  EXPECT_EQ(table.rows[0][12], "-");
  EXPECT_EQ(table.rows[0].size(), 15u) << result.out;
  // The plan's numbers, which summary and the report give the same trials.
  for (std::size_t row = 0; row < table.rows.size(); ++row) EXPECT_EQ(table.rows[row][1], std::to_string(row + 1));
  // A program has its [params] and no prediction: memsweep's estimate is of its own trainer. Of the
  // built-in fields it shows only those its file sets or its command names (batch_size): the others are
  // blank cells, not the built-in trainer's defaults (synthetic:1x28x28, mlp, sgd, 0.01, 1, 128).
  EXPECT_THAT(table.rows[3], ElementsAre(table.rows[3][0], "4", "pytorch", "0", "128", "relu", "0.1", "-"));
  EXPECT_THAT(result.out, HasSubstr("for memsweep's own trainer only"));
}

// A program's `dataset` is a label: nothing is looked for unless its
// command, env or workdir names {data_dir}; then the files are checked as
// for memsweep's own trainer, and the error names the program's place.
TEST(PlanPrograms, ADatasetIsALabelUnlessTheProgramUsesDataDir) {
  const TempDir dir;
  const TempDir empty_data;
  const auto label =
      dir.write("label.toml", "[[trial]]\nprogram = [\"sh\", \"-c\", \"exit 0\"]\ndataset = \"mnist\"\n");
  const CommandResult labelled = run_memsweep({"plan", label.string(), "--data-dir", empty_data.path().string()});
  ASSERT_EQ(labelled.exit_status, 0) << labelled.err;
  EXPECT_THAT(labelled.out, HasSubstr("datasets: none to read (the programs' datasets are labels"));
  const PlanTable table = plan_table(labelled.out);
  ASSERT_EQ(table.rows.size(), 1u) << labelled.out;
  EXPECT_THAT(table.rows[0], ElementsAre(table.rows[0][0], "1", "sh", "0", "mnist", "-"))
      << "the label, and no built-in default beside it";

  const auto read =
      dir.write("reads.toml",
                "[sweep]\nname = \"r\"\n[[trial]]\nprogram = [\"sh\", \"-c\", \"exit 0\", \"{data_dir}\"]\n"
                "dataset = \"mnist\"\n");
  const CommandResult checked = run_memsweep({"plan", read.string(), "--data-dir", empty_data.path().string()});
  EXPECT_EQ(checked.exit_status, kBadInput);
  EXPECT_THAT(checked.err, HasSubstr("mnist: not found"));
  EXPECT_THAT(checked.err, HasSubstr("needed by " + read.string() +
                                     ":4: trial[0].program (its command, env or "
                                     "workdir uses {data_dir})"));
}

TEST(PlanPrograms, ThePytorchMnistExampleShowsItsOwnFields) {
  const CommandResult result = run_memsweep(
      {"plan", "jobs/examples/pytorch-mnist-example.toml", "--data-dir", MEMSWEEP_SOURCE_DIR "/tests/data/none"},
      MEMSWEEP_SOURCE_DIR);
  // Its command names {data_dir}: the MNIST files are looked for, and are not in that folder.
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_THAT(result.err, HasSubstr("pytorch-mnist-example.toml:"));
  EXPECT_THAT(result.out, HasSubstr("mnist_main"));
  const PlanTable table = plan_table(result.out);
  ASSERT_EQ(table.rows.size(), 4u) << result.out;
  EXPECT_THAT(table.header, ElementsAre("id", "trial", "trainer", "repeat", "dataset", "model", "optimizer", "lr",
                                        "epochs", "batch", "hidden", "gamma", "log_interval", "predicted"));
  // dataset, lr, epochs, batch: set by the file; model, optimizer, hidden: blank.
  EXPECT_THAT(table.rows[0],
              ElementsAre(table.rows[0][0], "1", "mnist_main", "0", "mnist", "1", "1", "64", "0.7", "100", "-"));
}

TEST(PlanPrograms, TheExampleSweepComparesTorchAndMemsweep) {
  const CommandResult result = run_memsweep({"plan", "jobs/examples/torch-vs-memsweep.toml"}, MEMSWEEP_SOURCE_DIR);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const PlanTable table = plan_table(result.out);
  ASSERT_EQ(table.rows.size(), 4u) << result.out;
  EXPECT_EQ(table.header.at(2), "trainer");
  EXPECT_EQ(table.rows[0][2], "memsweep");
  EXPECT_EQ(table.rows[1][2], "memsweep");
  EXPECT_EQ(table.rows[2][2], "pytorch");
  EXPECT_EQ(table.rows[3][2], "pytorch");
}

TEST(PlanPrograms, WithoutProgramsThereIsNoTrainerColumn) {
  const TempDir dir;
  const auto file = dir.write("plain.toml", "[grid]\nbatch_size = [3, 4]\nprogram = ['memsweep']\n");
  const CommandResult result = run_memsweep({"plan", file.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const PlanTable table = plan_table(result.out);
  EXPECT_THAT(table.header, ElementsAre("id", "trial", "repeat", "dataset", "model", "optimizer", "lr", "epochs",
                                        "batch", "hidden", "predicted"));
  EXPECT_THAT(result.out, ::testing::Not(HasSubstr("own trainer only")));
}

TEST(PlanPrograms, AProgramThatIsNotFoundIsBadInput) {
  const TempDir dir;
  const auto file = dir.write("sweep.toml",
                              "[programs.pytorch]\ncommand = [\"python4\", \"train.py\"]\n"
                              "[grid]\nprogram = [\"memsweep\", \"pytorch\"]\n");
  const CommandResult result = run_memsweep({"plan", file.string()});
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_THAT(result.err,
              HasSubstr("sweep.toml:2: programs.pytorch.command: program \"python4\": not found on PATH ("));
  // --outputs too: a job script learns of it before it submits anything.
  EXPECT_EQ(run_memsweep({"plan", file.string(), "--outputs"}).exit_status, kBadInput);
}

TEST(PlanPrograms, AProgramThatIsNotExecutableIsBadInput) {
  const TempDir dir;
  const auto script = dir.write("train.sh", "#!/bin/sh\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const auto file = dir.write("sweep.toml", "[[trial]]\nprogram = [\"./train.sh\", \"{epochs}\"]\n");
  const CommandResult result = run_memsweep({"plan", "sweep.toml"}, dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_THAT(result.err, HasSubstr("sweep.toml:2: trial[0].program: program \"./train.sh\" ("));
  EXPECT_THAT(result.err, HasSubstr("): not executable"));
}

TEST(PlanPrograms, AnUnknownPlaceholderIsBadInput) {
  const TempDir dir;
  const auto file = dir.write("sweep.toml", "[[trial]]\nprogram = [\"sh\", \"--lr={lr}\"]\n");
  const CommandResult result = run_memsweep({"plan", file.string()});
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_THAT(result.err, HasSubstr("sweep.toml:2: trial[0].program[1]: unknown placeholder {lr}; expected one of:"));
}

}  // namespace
}  // namespace memsweep::testing
