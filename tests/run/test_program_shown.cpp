// A user's program shown as itself, end to end: `memsweep run` on a program
// trial whose `dataset` is a label (no dataset files anywhere), then
// `summary`, `export` and `watch --trial` on what it wrote. The program
// writes no events lines, so it has no epochs to show.

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The command names {batch_size} only; the file sets dataset (a label) and
// batch_size. Everything else the built-in trainer has a default for is
// blank for this trial.
constexpr const char* kLabelled = R"([sweep]
name = "labelled"
[sampler]
interval_ms = 5
[[trial]]
program = ["sh", "-c", "sleep 0.3", "sh", "{batch_size}"]
trainer = "sleeper"
dataset = "mnist"
batch_size = 16
params = { act = "relu" }
)";

const std::map<std::string, std::string> kEnvironment{{"OMP_NUM_THREADS", "1"}};

// One CSV line's cells; quoted cells may hold commas and doubled quotes.
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// The export's first row, by column name.
std::map<std::string, std::string> first_row(const std::string& csv) {
  std::istringstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> names = csv_cells(header);
  const std::vector<std::string> cells = csv_cells(row);
  std::map<std::string, std::string> by_name;
  for (std::size_t i = 0; i < names.size() && i < cells.size(); ++i) by_name[names[i]] = cells[i];
  return by_name;
}

class ProgramShown : public ::testing::Test {
 protected:
  void SetUp() override {
    sweep_ = dir_.write("labelled.toml", kLabelled).string();
    results_ = (dir_.path() / "out.h5").string();
    // The data folder is empty: a label needs no files.
    const CommandResult run =
        run_command({MEMSWEEP_EXECUTABLE, "run", sweep_, "-o", results_, "-q", "--data-dir", data_.path().string()}, "",
                    kEnvironment);
    ASSERT_EQ(run.exit_status, kOk) << run.err;
  }

  TempDir dir_;
  TempDir data_;
  std::string sweep_;
  std::string results_;
};

TEST_F(ProgramShown, ExportCarriesNoneOfTheBuiltInDefaults) {
  const CommandResult exported = run_command(memsweep_argv({"export", results_}));
  ASSERT_EQ(exported.exit_status, kOk) << exported.err;
  std::map<std::string, std::string> row = first_row(exported.out);
  ASSERT_FALSE(row.empty()) << exported.out;
  EXPECT_EQ(row["status"], "ok") << exported.out;
  EXPECT_EQ(row["trainer"], "sleeper");
  EXPECT_EQ(row["dataset"], "mnist") << "the label";
  EXPECT_EQ(row["batch_size"], "16") << "set by the file and named by the command";
  EXPECT_THAT(row["params"], HasSubstr("relu"));
  for (const char* blank : {"model", "optimizer", "learning_rate", "epochs", "depth", "hidden", "channels"})
    EXPECT_EQ(row[blank], "") << blank << " is not the program's: no default in its place\n" << exported.out;
}

TEST_F(ProgramShown, SummaryCarriesNoneOfTheBuiltInDefaults) {
  const CommandResult summary = run_command(memsweep_argv({"summary", results_}));
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  std::istringstream lines(summary.out);
  std::string row;
  for (std::string line; std::getline(lines, line);)
    if (line.find("sleeper") != std::string::npos && line.find(" ok") != std::string::npos) row = line;
  ASSERT_FALSE(row.empty()) << summary.out;
  EXPECT_THAT(row, HasSubstr(" 16 "));
  EXPECT_THAT(row, HasSubstr("relu"));
  for (const char* shown_by_default : {" mlp ", " sgd ", " 0.01 ", " 128 ", "synthetic"})
    EXPECT_THAT(row, Not(HasSubstr(shown_by_default))) << summary.out;
  EXPECT_THAT(summary.out, HasSubstr("mnist (1 trial)")) << "its label heads its table";
}

TEST_F(ProgramShown, WatchShowsAProgramWithoutEventsAsItIs) {
  const CommandResult exported = run_command(memsweep_argv({"export", results_}));
  const std::string id = first_row(exported.out)["trial_id"];
  ASSERT_EQ(id.size(), 12u) << exported.out;
  const CommandResult view =
      run_command(memsweep_argv({"watch", results_, "--once", "--trial", id}), "", {{"COLUMNS", "160"}});
  ASSERT_EQ(view.exit_status, kOk) << view.err;
  EXPECT_THAT(view.out, HasSubstr("RSS of the program's process tree"));
  EXPECT_THAT(view.out, HasSubstr("ok  elapsed ")) << "its status and time, no epoch";
  EXPECT_THAT(view.out, Not(HasSubstr("setup")));
  EXPECT_THAT(view.out, Not(HasSubstr("epoch")));
  EXPECT_THAT(view.out, HasSubstr("sleeper mnist batch=16 act=relu")) << "what it is, in one line";
}

TEST(ProgramDataDir, AProgramThatUsesDataDirHasItsDatasetChecked) {
  const TempDir dir;
  const TempDir data;
  std::string text = kLabelled;
  text.replace(text.find("\"{batch_size}\""), 14, "\"{data_dir}\"");
  const std::string sweep = dir.write("reads.toml", text).string();
  const CommandResult run = run_command({MEMSWEEP_EXECUTABLE, "run", sweep, "-o", (dir.path() / "out.h5").string(),
                                         "-q", "--data-dir", data.path().string()},
                                        "", kEnvironment);
  EXPECT_EQ(run.exit_status, kBadInput) << run.out;
  EXPECT_THAT(run.err, HasSubstr("mnist: not found"));
  EXPECT_THAT(run.err, HasSubstr("reads.toml:6: trial[0].program (its command, env or workdir uses {data_dir})"));
}

}  // namespace
}  // namespace memsweep::testing
