// Issue 43: memsweep run on disks that fill for real (a tmpfs per test).
// Early (64 to 96 KiB: before the first trial ends) the run crashed after
// its one-line message, in HDF5's clean-up at exit (exit status 139 alone,
// a backtrace under mpirun). In a direct chunk write of /samples (which
// goes to the disk at once) the message was HDF5's own text, and rows of
// zeros were left in /samples. Now: exit status 2, the one line, a file
// h5py and h5dump read with no row never written, and a resume completes.
//
// Where a fill lands depends on the moment: in a direct chunk write in
// about 1 of 12 fills here. MEMSWEEP_TEST_STORE_HOOK makes the writer fill
// the disk just before its Nth direct chunk write (src/store/disk_fill_hook.hpp),
// so that the chunk write meets the full disk every time (and starts a page
// past the file's end: a small chunk would fit in the last page's slack).

#include "faults/small_disk.hpp"
#include "run/results_file.hpp"
#include "support/exit_statuses.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 16 trials of 0.2 to 0.5 s sampled every millisecond (as the fault tests'
// fill sweep): a new file takes about 100 KB, more than these disks hold
// once its first trial's samples come.
constexpr const char* kEarlySweep = R"(
[sweep]
name = "early"
[sampler]
interval_ms = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 2000, test_size = 100 }
epochs = 150
batch_size = 8
hidden = [32]
[grid]
learning_rate = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16]
)";
constexpr std::size_t kEarlyTrials = 16;

// Four trials of 1.5 to 3 s sampled every millisecond: with
// --flush-interval 0.5 each worker sends whole chunks of /samples (0.5 s of
// rows, some 20 KB compressed: more than the room left in the file's last
// page, which a chunk of 0.2 s could fit in), stored as they are.
constexpr const char* kChunkSweep = R"(
[sweep]
name = "chunks"
[sampler]
interval_ms = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 2000, test_size = 100 }
epochs = 900
batch_size = 8
hidden = [32]
[grid]
learning_rate = [0.01, 0.02, 0.03, 0.04]
)";
constexpr std::size_t kChunkTrials = 4;

std::vector<std::string> on_three_ranks(const std::vector<std::string>& args) {
  return on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv(args));
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// memsweep's lines of stderr (mpirun adds its own on a non-zero status).
std::vector<std::string> memsweep_lines(const std::string& err) {
  std::vector<std::string> lines;
  for (const std::string& line : lines_of(err))
    if (line.starts_with("memsweep")) lines.push_back(line);
  return lines;
}

// What a crash prints: Open MPI's handler, or glibc's, or HDF5's stack.
void expect_no_crash_report(const std::string& err) {
  for (const char* sign : {"Segmentation fault", "received signal", "Signal:", "H5F__close_cb", "HDF5-DIAG", "H5_term"})
    EXPECT_THAT(err, Not(HasSubstr(sign)));
}

void expect_disk_full_line(const std::string& line, const std::string& out) {
  EXPECT_THAT(line, ::testing::StartsWith("memsweep: error: " + out + ": "));
  EXPECT_THAT(line, HasSubstr("No space left on device (errno 28)"));
  EXPECT_THAT(line, HasSubstr("--resume"));
  EXPECT_THAT(line, Not(HasSubstr("time =")));
}

// Each table's rows and how many have an empty trial id, as h5py reads the
// file itself (no reader's rule applied).
std::map<std::string, std::pair<long, long>> raw_rows(const std::string& file) {
  constexpr char kScript[] = R"(
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    for name in ("trials", "samples", "epochs", "messages"):
        ids = f[name].fields("trial_id")[()]
        print(name, len(ids), int((ids == b"").sum()))
)";
  const CommandResult read = run_command({"/usr/bin/python3", "-c", kScript, file});
  EXPECT_EQ(read.exit_status, kOk) << read.err;
  std::map<std::string, std::pair<long, long>> tables;
  std::istringstream lines(read.out);
  std::string name;
  long rows = 0;
  long blank = 0;
  while (lines >> name >> rows >> blank) tables[name] = {rows, blank};
  EXPECT_EQ(tables.size(), 4U) << read.out;
  return tables;
}

// Readable as it is, by h5py and h5dump, with no row never written.
void expect_readable_without_blank_rows(const std::string& file) {
  for (const auto& [table, counts] : raw_rows(file))
    EXPECT_EQ(counts.second, 0) << "/" << table << ": " << counts.second << " of " << counts.first
                                << " rows have an empty trial id";
  const CommandResult dumped = run_command({MEMSWEEP_H5DUMP, "-H", file});
  EXPECT_EQ(dumped.exit_status, kOk) << dumped.err;
  const CommandResult summary = run_memsweep({"summary", file});
  EXPECT_EQ(summary.exit_status, kOk) << summary.err;
}

// With room again (the file moved to the test's own folder), --resume
// completes the sweep: `trials` distinct trials ok.
void expect_resume_completes(const std::vector<std::string>& argv_prefix_free_run, const std::string& file,
                             std::size_t trials) {
  const CommandResult resumed = run_command(argv_prefix_free_run, "", kEnvironment);
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  const TsvTable rows = h5py_table(file, "trials");
  std::set<std::string> ok;
  for (std::size_t row = 0; row < rows.rows.size(); ++row)
    if (rows.at(row, "status") == "ok") ok.insert(rows.at(row, "trial_id"));
  EXPECT_EQ(ok.size(), trials);
}

class FullDisks : public ::testing::Test {
 protected:
  void mount(int kib) {
    disk_.emplace(dir_.path() / "small", kib);
    if (!disk_->mounted())
      MEMSWEEP_SKIP_OR_FAIL_IN_CI("cannot mount a tmpfs (this test needs root): " + disk_->problem());
  }
  std::string moved() const {
    const std::string to = (dir_.path() / "moved.h5").string();
    std::filesystem::copy_file(out_, to);
    return to;
  }

  const TempDir dir_;
  std::optional<SmallDisk> disk_;
  const std::string early_ = dir_.write("early.toml", kEarlySweep).string();
  const std::string chunks_ = dir_.write("chunks.toml", kChunkSweep).string();
  const std::string out_ = (dir_.path() / "small" / "r.h5").string();
};

class EarlyFill : public FullDisks, public ::testing::WithParamInterface<int> {};

TEST_P(EarlyFill, ExitsTwoWithOnlyTheOneLineAndTheFileResumes) {
  mount(GetParam());
  if (HasFatalFailure() || IsSkipped()) return;
  const CommandResult run = run_command(memsweep_argv({"run", early_, "-o", out_, "-q"}), "", kEnvironment);
  std::cout << fmt::format("a {} KiB disk: exit status {}\n{}", GetParam(), run.exit_status, run.err) << std::flush;
  EXPECT_EQ(run.exit_status, kBadInput) << "(-1: killed by a signal)\n" << run.err;
  expect_no_crash_report(run.err);
  const std::vector<std::string> lines = lines_of(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  expect_disk_full_line(lines.front(), out_);
  expect_readable_without_blank_rows(out_);
  const std::string file = moved();
  expect_resume_completes(memsweep_argv({"run", early_, "-o", file, "--resume", "-q"}), file, kEarlyTrials);
}

// A new file takes about 70 KiB before its first row (schema 13): a disk
// smaller than that fails at the file's creation, not during the sweep.
INSTANTIATE_TEST_SUITE_P(Disks, EarlyFill, ::testing::Values(80, 96, 112),
                         [](const ::testing::TestParamInfo<int>& disk) { return fmt::format("KiB{}", disk.param); });

// Under mpirun: every rank exits 2 (mpirun reports it, with its own lines),
// rank 0's one line, and no backtrace from any rank.
TEST_F(FullDisks, EarlyUnderMpirunExitsTwoWithoutABacktrace) {
  mount(80);
  if (HasFatalFailure() || IsSkipped()) return;
  const CommandResult run = run_command(on_three_ranks({"run", early_, "-o", out_, "-q"}), "", kEnvironment);
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  expect_no_crash_report(run.err);
  const std::vector<std::string> lines = memsweep_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  expect_disk_full_line(lines.front(), out_);
  expect_readable_without_blank_rows(out_);
}

// The fill lands in a direct chunk write (the hook, above): the same line
// as every other write, naming the chunk write, and the same roll-back.
TEST_F(FullDisks, InADirectChunkWriteUnderMpirunTheSameLineAndRollBack) {
  mount(4096);
  if (HasFatalFailure() || IsSkipped()) return;
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_TEST_STORE_HOOK"] = "fill_disk_before_chunk=2";
  const CommandResult run =
      run_command(on_three_ranks({"run", chunks_, "-o", out_, "--flush-interval", "0.5", "-q"}), "", environment);
  std::cout << fmt::format("a direct chunk write on a full disk: exit status {}\n{}", run.exit_status, run.err)
            << std::flush;
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  expect_no_crash_report(run.err);
  const std::vector<std::string> lines = memsweep_lines(run.err);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  expect_disk_full_line(lines.front(), out_);
  EXPECT_THAT(lines.front(), HasSubstr("cannot write a chunk of")) << "the fill must land in a direct chunk write";
  expect_readable_without_blank_rows(out_);
  const std::string file = moved();
  expect_resume_completes(on_three_ranks({"run", chunks_, "-o", file, "--resume", "--flush-interval", "0.5", "-q"}),
                          file, kChunkTrials);
}

}  // namespace
}  // namespace memsweep::testing
