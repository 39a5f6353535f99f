// A resume measures with what the run before it measured with, runs again
// the trials it is told to, and a stopped sweep is continued by the command
// memsweep prints, as printed (issue 18's user cases, end to end).

#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

// Eight MLPs of a few seconds each on the synthetic dataset.
constexpr char kSweep[] = R"([sweep]
name = "keep"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 40000, test_size = 500 }
learning_rate = 0.02
epochs = 3
[grid]
batch_size = [16, 32]
hidden = [[256], [320], [384], [448]]
)";

std::size_t finished_lines(const std::string& err) {
  static const std::regex kTrialLine(R"(\] [0-9a-f]{12} (ok|failed|interrupted))");
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(err.begin(), err.end(), kTrialLine), std::sregex_iterator()));
}

// The command after "continue with:" in a stopped run's last lines.
std::string printed_command(const std::string& err) {
  const std::size_t at = err.find("continue with:\n  ");
  if (at == std::string::npos) return "";
  const std::size_t start = at + std::string("continue with:\n  ").size();
  return err.substr(start, err.find('\n', start) - start);
}

// The user's case: a sweep under mpirun given a data folder, example limits
// and threads, stopped by SIGUSR1; the command it prints, run as printed
// by a shell, completes it with the same options, and every row says which
// invocation wrote it.
TEST(ResumeOptions, ThePrintedCommandRunAsPrintedCompletesTheSweep) {
  const TempDir dir;
  const std::string sweep = dir.write("keep.toml", kSweep).string();
  std::filesystem::create_directories(dir.path() / "data");
  const std::string data = (dir.path() / "data").string();
  const std::string out = (dir.path() / "keep.h5").string();
  std::string command;
  {
    BackgroundProcess run(on_ranks(MEMSWEEP_MPIEXEC, 3,
                                   memsweep_argv({"run", sweep, "-o", out, "--data-dir", data, "--max-train-examples",
                                                  "20000", "--threads", "1", "--flush-interval", "0.2"})),
                          dir.path(), kEnvironment);
    ASSERT_TRUE(run.wait_for([&] { return finished_lines(run.err()) >= 2; }, std::chrono::seconds(180))) << run.err();
    run.signal(SIGUSR1);
    ASSERT_EQ(run.wait(), kStopped) << run.err();
    command = printed_command(run.err());
    ASSERT_FALSE(command.empty()) << run.err();
  }
  EXPECT_THAT(command, HasSubstr("mpirun -np 3"));
  EXPECT_THAT(command, HasSubstr("--max-train-examples 20000"));
  EXPECT_THAT(command, HasSubstr("--threads 1"));
  // The sweep's data are synthetic: it reads no dataset, so its resume
  // needs no data folder, although this run was given one (issue 43).
  EXPECT_THAT(command, ::testing::Not(HasSubstr("--data-dir")));
  // summary prints the same command for the unfinished file.
  const CommandResult summary = run_memsweep({"summary", out});
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("continue with: " + command));

  std::set<std::string> done_before;
  {
    const TsvTable trials = h5py_table(out, "trials");
    for (const std::size_t row : trials.where("status", "ok")) done_before.insert(trials.at(row, "trial_id"));
    ASSERT_LT(done_before.size(), 8u);
  }

  // As printed, from another folder: the command holds every path it needs.
  const TempDir elsewhere;
  const CommandResult resumed = run_command({"/bin/sh", "-c", command}, elsewhere.path().string(), kEnvironment);
  ASSERT_EQ(resumed.exit_status, kOk) << command << "\n" << resumed.err;

  const TsvTable trials = h5py_table(out, "trials");
  std::set<std::string> ok;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    if (trials.at(row, "status") == "ok") ok.insert(id);
    // Rows of trials that were done before the stop are run 0's; the rest,
    // written by the resume (its workers' rows included), are run 1's.
    const bool resumed_row = !done_before.contains(id) && trials.at(row, "status") == "ok";
    EXPECT_EQ(trials.at(row, "run"), resumed_row ? "1" : "0") << id << " " << trials.at(row, "status");
  }
  EXPECT_EQ(ok.size(), 8u);
  EXPECT_THAT(run_memsweep({"summary", out}).out, ::testing::Not(HasSubstr("continue with")));
  const TsvTable runs = h5py_table(out, "runs");
  ASSERT_EQ(runs.rows.size(), 2u);
  for (std::size_t run = 0; run < 2; ++run) {
    EXPECT_EQ(runs.at(run, "max_train_examples"), "20000");
    EXPECT_EQ(runs.at(run, "threads"), "1");
    EXPECT_EQ(runs.at(run, "data_dirs"), "") << "no data folder recorded for a sweep that reads no dataset";
    EXPECT_EQ(runs.at(run, "launcher"), "mpirun");
    EXPECT_EQ(runs.at(run, "ranks"), "3");
    EXPECT_EQ(runs.at(run, "changed_options"), "");
  }
}

// Eight short trials alone, to completion, with an example limit.
class FinishedSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    sweep_ = dir_.write("keep.toml", kSweep).string();
    out_ = (dir_.path() / "keep.h5").string();
    const CommandResult first =
        run_command(memsweep_argv({"run", sweep_, "-o", out_, "--max-train-examples", "2000", "--threads", "1", "-q"}),
                    dir_.path().string(), kEnvironment);
    ASSERT_EQ(first.exit_status, kOk) << first.err;
  }
  CommandResult resume(std::vector<std::string> extra) const {
    std::vector<std::string> args{"run", sweep_, "-o", out_, "--resume"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_command(memsweep_argv(args), dir_.path().string(), kEnvironment);
  }
  TempDir dir_;
  std::string sweep_;
  std::string out_;
};

// A different example limit would mix two measurement setups in one file:
// refused, naming both values, and the file is left as it was.
TEST_F(FinishedSweep, AChangedExampleLimitIsRefusedUnlessAllowed) {
  const std::string before = slurp(out_);
  const CommandResult refused = resume({"--max-train-examples", "1000"});
  EXPECT_EQ(refused.exit_status, kBadInput) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("--max-train-examples 1000, but run 0 measured with 2000"));
  EXPECT_THAT(refused.err, HasSubstr("--allow-changed-options"));
  EXPECT_EQ(slurp(out_), before) << "a refused resume must not touch the file";

  const CommandResult threads = resume({"--threads", "2"});
  EXPECT_EQ(threads.exit_status, kBadInput) << threads.err;
  EXPECT_THAT(threads.err, HasSubstr("--threads 2, but run 0 measured with 1"));

  const CommandResult allowed = resume({"--max-train-examples", "1000", "--allow-changed-options"});
  ASSERT_EQ(allowed.exit_status, kOk) << allowed.err;
  const TsvTable runs = h5py_table(out_, "runs");
  ASSERT_EQ(runs.rows.size(), 2u);
  EXPECT_EQ(runs.at(1, "max_train_examples"), "1000");
  EXPECT_EQ(runs.at(1, "changed_options"), "--max-train-examples 2000 (run 0) -> 1000");
}

// Given nothing, a resume takes the stored options (and says so).
TEST_F(FinishedSweep, AResumeGivenNothingReusesTheStoredOptions) {
  const CommandResult again = resume({});
  ASSERT_EQ(again.exit_status, kOk) << again.err;
  EXPECT_THAT(again.err, HasSubstr("as run 0 did:"));
  EXPECT_THAT(again.err, HasSubstr("--max-train-examples 2000"));
  const TsvTable runs = h5py_table(out_, "runs");
  ASSERT_EQ(runs.rows.size(), 2u);
  EXPECT_EQ(runs.at(1, "max_train_examples"), "2000");
  EXPECT_EQ(runs.at(1, "threads"), "1");
}

// The user's case: trials failed for a reason since fixed (here a file a
// program needs); --retry-failed runs exactly those again, once, and
// summary shows how many attempts each took.
TEST(ResumeRetry, RetryFailedRerunsExactlyTheFailedTrialsOnce) {
  const TempDir dir;
  const std::filesystem::path flag = dir.path() / "fixed";
  const std::string sweep = dir.write("flaky.toml", fmt::format(R"([sweep]
name = "flaky"
[defaults]
dataset = "synthetic"
program = ["/bin/sh", "-c", "test {{batch_size}} -lt 64 || test -e {}"]
[grid]
batch_size = [16, 32, 64, 128]
)",
                                                                flag.string()))
                                .string();
  const std::string out = (dir.path() / "flaky.h5").string();
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"run", sweep, "-o", out};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_command(memsweep_argv(args), dir.path().string(), kEnvironment);
  };
  const CommandResult first = run({});
  ASSERT_EQ(first.exit_status, kOk) << first.err;
  std::map<std::string, std::string> first_status;
  {
    const TsvTable trials = h5py_table(out, "trials");
    ASSERT_EQ(trials.rows.size(), 4u);
    for (std::size_t row = 0; row < 4; ++row) first_status[trials.at(row, "trial_id")] = trials.at(row, "status");
    EXPECT_EQ(trials.where("status", "failed").size(), 2u);
  }

  // A plain resume treats failed as done.
  const CommandResult plain = run({"--resume"});
  ASSERT_EQ(plain.exit_status, kOk) << plain.err;
  EXPECT_THAT(plain.err, HasSubstr("4 of 4 trials done, 0 to run"));
  EXPECT_THAT(run({"--retry-failed"}).err, HasSubstr("needs --resume"));

  std::ofstream(flag) << "fixed\n";
  const CommandResult retried = run({"--resume", "--retry-failed"});
  ASSERT_EQ(retried.exit_status, kOk) << retried.err;
  EXPECT_THAT(retried.err, HasSubstr("2 to run (2 failed again)"));
  const TsvTable trials = h5py_table(out, "trials");
  ASSERT_EQ(trials.rows.size(), 6u);
  for (std::size_t row = 4; row < 6; ++row) {
    EXPECT_EQ(first_status.at(trials.at(row, "trial_id")), "failed") << "only failed trials run again";
    EXPECT_EQ(trials.at(row, "status"), "ok");
    EXPECT_EQ(trials.at(row, "attempt"), "1");
    EXPECT_EQ(trials.at(row, "run"), "2");
  }
  // Once: their latest attempt is ok now, so the same command runs nothing.
  EXPECT_THAT(run({"--resume", "--retry-failed"}).err, HasSubstr("4 of 4 trials done, 0 to run"));

  const CommandResult summary = run_memsweep({"summary", out});
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("attempts"));
  EXPECT_THAT(summary.out, HasSubstr("4 ok")) << "a retried trial's ok stands for it, not its failed attempt";
  EXPECT_THAT(summary.out, ::testing::Not(HasSubstr("not ok")));
}

TEST(ResumeRetry, UnknownStatusIsBadInput) {
  const TempDir dir;
  const std::string sweep = dir.write("s.toml", kSweep).string();
  const CommandResult result =
      run_memsweep({"run", sweep, "-o", (dir.path() / "s.h5").string(), "--resume", "--retry", "failed,ok"});
  EXPECT_EQ(result.exit_status, kBadInput);
  EXPECT_THAT(result.err, HasSubstr("--retry: expected statuses separated by commas"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "s.h5"));
}

// tests/run/old-files holds a file the memsweep of 7c5d06c wrote (schema
// 5, before searches) and was stopped in. This memsweep writes a later one: a
// resume refuses the file, saying which version wrote it and what to do,
// and leaves it byte for byte as it was; summary still reads it.
TEST(ResumeOptions, AFileOfTheSchemaBeforeIsRefusedByResumeAndLeftAsItWas) {
  const TempDir dir;
  const std::filesystem::path old_files = std::filesystem::path(MEMSWEEP_SOURCE_DIR) / "tests/run/old-files";
  const std::filesystem::path out = dir.path() / "old.h5";
  std::filesystem::copy_file(old_files / "old.toml", dir.path() / "old.toml");
  std::filesystem::copy_file(old_files / "old.h5", out);
  const std::string before = slurp(out);

  const CommandResult resumed =
      run_command(memsweep_argv({"run", "old.toml", "-o", out.string(), "--resume"}), dir.path().string());
  EXPECT_EQ(resumed.exit_status, kBadInput);
  // Which version this memsweep writes is the store tests' business (test_schema_versions.cpp).
  EXPECT_THAT(resumed.err, ::testing::ContainsRegex("schema version 5, and this memsweep writes version [0-9]+:"));
  EXPECT_THAT(resumed.err, HasSubstr("write to a new file"));
  EXPECT_EQ(slurp(out), before) << "a refused resume leaves the file as it was";

  const CommandResult summary = run_memsweep({"summary", out.string()});
  EXPECT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_EQ(h5py_table(out, "trials").rows.size(), 4U);
}

}  // namespace
}  // namespace memsweep::testing
