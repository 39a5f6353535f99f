// A program sweep as memsweep's commands describe it (issue 43, item 13):
// `plan` no longer says "every trial's data are synthetic" of program trials
// that name no dataset; `--split-by params.NAME` splits by a program's
// parameter (plan lists the parts, run runs one); a stopped run's --resume
// line has no --data-dir when the sweep reads no dataset (and keeps it when
// a program is given the data folder).

#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNoDataset[] = R"([sweep]
name = "wlm"
[programs.wlm]
command = ["sh", "-c", "exit 0", "sh", "{bptt}"]
[defaults]
program = "wlm"
[grid]
params.bptt = [35, 70]
)";

TEST(ProgramSweepPlan, TrialsWithoutADatasetAreNotCalledSynthetic) {
  const TempDir dir;
  const std::string sweep = dir.write("wlm.toml", kNoDataset).string();
  const CommandResult plan = run_memsweep({"plan", sweep});
  ASSERT_EQ(plan.exit_status, kOk) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("datasets: none to read (no trial names a dataset: the programs read none that "
                                  "memsweep knows)\n"));
  EXPECT_THAT(plan.out, Not(HasSubstr("synthetic")));

  // Beside a built-in trial on synthetic data, each is said of its own.
  const std::string mixed = dir.write("mixed.toml", std::string(kNoDataset) + R"(
[[trial]]
program = "memsweep"
dataset = "synthetic"
hidden = [4]
)")
                                .string();
  const CommandResult both = run_memsweep({"plan", mixed});
  ASSERT_EQ(both.exit_status, kOk) << both.err;
  EXPECT_THAT(both.out, HasSubstr("datasets: none to read (some program trials name no dataset: they read none that "
                                  "memsweep knows; the rest are synthetic)\n"));
}

TEST(ProgramSweepSplit, PlanListsAndRunRunsThePartsOfAParameter) {
  const TempDir dir;
  const std::string sweep = dir.write("wlm.toml", kNoDataset).string();
  const CommandResult plan = run_memsweep({"plan", sweep, "--split-by", "params.bptt"}, dir.path().string());
  ASSERT_EQ(plan.exit_status, kOk) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("2 parts by params.bptt"));
  EXPECT_THAT(plan.out, HasSubstr("params.bptt=70"));
  const CommandResult outputs =
      run_memsweep({"plan", sweep, "--split-by", "params.bptt", "--outputs"}, dir.path().string());
  EXPECT_EQ(outputs.out, "wlm.params.bptt-35.h5\nwlm.params.bptt-70.h5\n");

  const CommandResult run =
      run_memsweep({"run", sweep, "--split-by", "params.bptt", "--part", "1", "-q"}, dir.path().string());
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  EXPECT_THAT(run.err, HasSubstr("(1 ok)"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "wlm.params.bptt-70.h5"));
  const CommandResult exported = run_memsweep({"export", "wlm.params.bptt-70.h5"}, dir.path().string());
  ASSERT_EQ(exported.exit_status, kOk) << exported.err;
  EXPECT_THAT(exported.out, HasSubstr("\"{\"\"bptt\"\":70}\""));
  EXPECT_THAT(exported.out, Not(HasSubstr("\"bptt\"\":35")));

  const CommandResult typo = run_memsweep({"plan", sweep, "--split-by", "params.bpt"});
  EXPECT_EQ(typo.exit_status, kBadInput);
  EXPECT_THAT(typo.err, HasSubstr("--split-by params.bpt: no trial of the sweep has a parameter bpt"));
}

// The command after "continue with:" in a stopped run's last lines.
std::string printed_command(const std::string& err) {
  const std::string marker = "continue with:\n  ";
  const std::size_t at = err.find(marker);
  if (at == std::string::npos) return "";
  const std::size_t start = at + marker.size();
  return err.substr(start, err.find('\n', start) - start);
}

// Started with --data-dir, stopped by SIGTERM while its program runs: the
// command it prints to continue, and summary's.
std::string stopped_runs_command(const TempDir& dir, const std::string& name, const std::string& command_line) {
  const std::string sweep = dir.write(name + ".toml", fmt::format(R"([sweep]
name = "{}"
[programs.nap]
command = {}
[[trial]]
program = "nap"
)",
                                                                  name, command_line))
                                .string();
  std::filesystem::create_directories(dir.path() / "data");
  const std::string results = (dir.path() / (name + ".h5")).string();
  BackgroundProcess run(memsweep_argv({"run", sweep, "-o", results, "--data-dir", "data"}), dir.path(), kEnvironment,
                        dir.path());
  // The file is there once rank 0 is about to start the trial.
  EXPECT_TRUE(run.wait_for([&] { return std::filesystem::exists(results); }, std::chrono::seconds(60))) << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  run.signal(SIGTERM);
  EXPECT_EQ(run.wait(), kStopped) << run.err();
  const std::string command = printed_command(run.err());
  EXPECT_FALSE(command.empty()) << run.err();
  const CommandResult summary = run_memsweep({"summary", results});
  EXPECT_THAT(summary.out, HasSubstr("continue with: " + command));
  return command;
}

TEST(ProgramSweepResume, TheResumeLineHasADataDirOnlyWhereTheSweepUsesOne) {
  const TempDir dir;
  const std::string none = stopped_runs_command(dir, "none", R"(["sleep", "30"])");
  EXPECT_THAT(none, HasSubstr("--resume"));
  EXPECT_THAT(none, Not(HasSubstr("--data-dir")));
  // A program given {data_dir} (on synthetic data: the first folder) needs it again.
  const std::string given = stopped_runs_command(dir, "given", R"(["sh", "-c", "sleep 30", "sh", "{data_dir}"])");
  EXPECT_THAT(given, HasSubstr("--data-dir " + (dir.path() / "data").string()));
}

}  // namespace
}  // namespace memsweep::testing
