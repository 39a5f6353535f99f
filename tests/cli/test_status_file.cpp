// $MEMSWEEP_STATUS_FILE, rank 0's own exit status for a job script
// (jobs/sweep.sbatch). Issue 43: set to the results file, `memsweep run
// -o t.h5 --force` exited 0 and left t.h5 as the two bytes "0\n"; the same
// with the sweep file or through a symbolic link; a FIFO without a reader
// blocked the end of the run for ever (SIGTERM did not end it), and a
// directory or a missing folder was skipped without a word. Now such a path
// is refused when the run starts (exit status 2, one line, nothing written),
// and the write at the end neither blocks nor follows a link: a FIFO or a
// link that appears meanwhile gets one line, not a hang.

#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kSweep[] = R"([sweep]
name = "status"
seed = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 4, 4], classes = 2, train_size = 64, test_size = 16 }
hidden = [4]
epochs = 1
batch_size = 32
[grid]
learning_rate = [0.1]
)";

// One program trial that runs for a while: time to change the status path
// under the running sweep.
constexpr char kSlowSweep[] = R"([sweep]
name = "slow"
[programs.nap]
command = ["sleep", "4"]
[[trial]]
program = "nap"
)";

std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t lines_in(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::set<std::string> entries(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename());
  return names;
}

CommandResult run_with_status_file(const std::vector<std::string>& args, const std::string& status,
                                   const std::filesystem::path& folder) {
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_STATUS_FILE"] = status;
  return run_command(memsweep_argv(args), folder.string(), environment);
}

// The refusal: status 2, one line naming the variable and what is wrong.
void expect_refused(const CommandResult& result, const std::string& says) {
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_EQ(lines_in(result.err), 1u) << result.err;
  EXPECT_THAT(result.err, StartsWith("memsweep: error: MEMSWEEP_STATUS_FILE=")) << result.err;
  EXPECT_THAT(result.err, HasSubstr(says)) << result.err;
}

class StatusFile : public ::testing::Test {
 protected:
  void SetUp() override { sweep_ = dir_.write("status.toml", kSweep).string(); }
  std::filesystem::path at(const std::string& name) const { return dir_.path() / name; }

  TempDir dir_;
  std::string sweep_;
};

// The issue's case: the results file itself, kept whole.
TEST_F(StatusFile, TheResultsFileIsRefusedAndKeptWhole) {
  const std::string results = at("t.h5").string();
  const CommandResult made = run_command(memsweep_argv({"run", sweep_, "-o", results, "-q"}), "", kEnvironment);
  ASSERT_EQ(made.exit_status, kOk) << made.err;
  const std::string before = slurp(results);
  ASSERT_GT(before.size(), 1000u);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", sweep_, "-o", results, "--force", "-q"},
        std::vector<std::string>{"run", sweep_, "-o", results, "--resume", "-q"}}) {
    expect_refused(run_with_status_file(args, results, dir_.path()), "is the results file");
    EXPECT_EQ(slurp(results), before) << "the results file changed";
  }
  // Spelled another way: the same file.
  expect_refused(run_with_status_file({"run", sweep_, "-o", results, "--force", "-q"}, "./t.h5", dir_.path()),
                 "is the results file");
  EXPECT_EQ(slurp(results), before);
}

// A results file still to be created, named as the status file too: the
// run would create it, then write "0\n" over it.
TEST_F(StatusFile, AResultsFileToBeCreatedIsRefusedAndNotCreated) {
  const std::set<std::string> before = entries(dir_.path());
  expect_refused(run_with_status_file({"run", sweep_, "-o", "new.h5", "-q"}, at("new.h5").string(), dir_.path()),
                 "is the results file");
  EXPECT_EQ(entries(dir_.path()), before);
}

TEST_F(StatusFile, TheSweepFileIsRefusedAndKeptAsItWas) {
  expect_refused(run_with_status_file({"run", sweep_, "-o", "out.h5", "-q"}, sweep_, dir_.path()), "is the sweep file");
  EXPECT_EQ(slurp(sweep_), kSweep);
  EXPECT_FALSE(std::filesystem::exists(at("out.h5")));
}

// A link, even to a file memsweep could write: its target is not written.
TEST_F(StatusFile, ASymbolicLinkIsRefusedAndItsTargetKept) {
  dir_.write("notes.txt", "keep me\n");
  std::filesystem::create_symlink("notes.txt", at("status-link"));
  std::filesystem::create_symlink("t.h5", at("to-results"));
  expect_refused(run_with_status_file({"run", sweep_, "-o", "out.h5", "-q"}, at("status-link").string(), dir_.path()),
                 "a symbolic link");
  EXPECT_EQ(slurp(at("notes.txt")), "keep me\n");
  expect_refused(run_with_status_file({"run", sweep_, "-o", "t.h5", "-q"}, at("to-results").string(), dir_.path()),
                 "a symbolic link");
  EXPECT_FALSE(std::filesystem::exists(at("out.h5")));
  EXPECT_FALSE(std::filesystem::exists(at("t.h5")));
}

// A FIFO is refused at once: the run neither starts nor waits for a reader.
TEST_F(StatusFile, AFifoIsRefusedAtStartWithoutBlocking) {
  ASSERT_EQ(::mkfifo(at("fifo").c_str(), 0600), 0);
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_STATUS_FILE"] = at("fifo").string();
  BackgroundProcess run(memsweep_argv({"run", sweep_, "-o", at("out.h5").string(), "-q"}), dir_.path(), environment,
                        dir_.path());
  ASSERT_TRUE(run.wait_until_ended(std::chrono::seconds(60))) << "still running: blocked on the FIFO";
  EXPECT_EQ(run.wait(), kBadInput) << run.err();
  EXPECT_THAT(run.err(), HasSubstr("a FIFO (named pipe), not a regular file"));
  EXPECT_EQ(lines_in(run.err()), 1u) << run.err();
  EXPECT_FALSE(std::filesystem::exists(at("out.h5")));
}

// A directory, a missing folder, a file that is not a status: each said,
// none skipped without a word, nothing written.
TEST_F(StatusFile, ADirectoryAMissingFolderAndAnotherFilesContentsAreRefused) {
  std::filesystem::create_directory(at("folder"));
  dir_.write("notes.txt", "the week's notes: do not overwrite\n");
  const std::vector<std::pair<std::string, std::string>> cases{
      {at("folder").string(), "a directory, not a regular file"},
      {at("missing/status").string(), "no such folder"},
      {at("notes.txt").string(), "holds something other than an exit status"},
  };
  for (const auto& [status, says] : cases) {
    SCOPED_TRACE(status);
    expect_refused(run_with_status_file({"run", sweep_, "-o", "out.h5", "-q"}, status, dir_.path()), says);
    EXPECT_FALSE(std::filesystem::exists(at("out.h5")));
  }
  EXPECT_EQ(slurp(at("notes.txt")), "the week's notes: do not overwrite\n");
  EXPECT_FALSE(std::filesystem::exists(at("missing")));
}

// What jobs/sweep.sbatch does: an empty file made by mktemp, then the status
// and the trials left. An absent file in an existing folder is created; one
// that holds an earlier status is replaced.
TEST_F(StatusFile, AnEmptyFileAnAbsentOneAndAnEarlierStatusGetTheStatus) {
  dir_.write(".memsweep-status.local.Ab12Cd", "");
  for (const char* name : {".memsweep-status.local.Ab12Cd", "created-status", "created-status"}) {
    SCOPED_TRACE(name);
    std::filesystem::remove(at("out.h5"));
    const CommandResult result =
        run_with_status_file({"run", sweep_, "-o", "out.h5", "-q"}, at(name).string(), dir_.path());
    EXPECT_EQ(result.exit_status, kOk) << result.err;
    EXPECT_EQ(slurp(at(name)), "0\nleft 0\n");
  }
  // A run refused for another reason still writes its status (2), as before.
  const CommandResult refused =
      run_with_status_file({"run", sweep_, "-o", "out.h5", "-q"}, at("created-status").string(), dir_.path());
  EXPECT_EQ(refused.exit_status, kBadInput) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("out.h5"));
  EXPECT_EQ(slurp(at("created-status")), "2\n");
}

// The path accepted at the start, and a FIFO (or a link) put there while
// the sweep runs: the end neither blocks nor follows it; one line says the
// status was not written, and the run's own status stands.
TEST_F(StatusFile, AFifoOrALinkThatAppearsDuringTheRunIsNotWrittenAndDoesNotBlock) {
  const std::string slow = dir_.write("slow.toml", kSlowSweep).string();
  dir_.write("target.txt", "untouched\n");
  for (const bool fifo : {true, false}) {
    SCOPED_TRACE(fifo ? "fifo" : "link");
    const std::filesystem::path status = at(fifo ? "status-fifo" : "status-link");
    const std::filesystem::path results = at(fifo ? "slow-fifo.h5" : "slow-link.h5");
    std::map<std::string, std::string> environment = kEnvironment;
    environment["MEMSWEEP_STATUS_FILE"] = status.string();
    BackgroundProcess run(memsweep_argv({"run", slow, "-o", results.string(), "-q"}), dir_.path(), environment,
                          dir_.path());
    ASSERT_TRUE(run.wait_for([&] { return std::filesystem::exists(results); }, std::chrono::seconds(60))) << run.err();
    if (fifo)
      ASSERT_EQ(::mkfifo(status.c_str(), 0600), 0);
    else
      std::filesystem::create_symlink("target.txt", status);
    ASSERT_TRUE(run.wait_until_ended(std::chrono::seconds(60))) << "still running: blocked on the status file";
    EXPECT_EQ(run.wait(), kOk) << run.err();
    EXPECT_THAT(run.err(), HasSubstr(fifo ? "it is now a FIFO" : "it is now a symbolic link")) << run.err();
    EXPECT_THAT(run.err(), HasSubstr("MEMSWEEP_STATUS_FILE=" + status.string() + ": exit status 0 not written"));
    EXPECT_THAT(run.err(), Not(HasSubstr("error")));
  }
  EXPECT_EQ(slurp(at("target.txt")), "untouched\n");
}

}  // namespace
}  // namespace memsweep::testing
