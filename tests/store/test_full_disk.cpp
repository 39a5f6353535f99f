// Issue 43: the writer on a disk that is really full (a tmpfs the test
// mounts and fills). Each writer runs in a forked child that ends as
// memsweep's main does: the error printed as one line, then exit(2), with
// every exit handler run, HDF5's clean-up included (until issue 43 it
// crashed there: SIGSEGV in H5F__close_cb after a close that failed). The
// parent, which never opened the file, then reads it as a user would.

#include "faults/small_disk.hpp"
#include "memsweep/sample_chunk.hpp"
#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"
#include "store/result_store_internals.hpp"
#include "store/store_fixtures.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using testing::example_header;
using testing::example_id;
using testing::example_samples;
using testing::example_trial;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::uint64_t kChunk = 1024;

// Rows that do not compress (a hash of their index in every counter): a
// chunk of them takes many pages, so that it cannot fit in the room left
// at the end of the file's last page.
std::vector<SampleRow> noisy_samples(std::string_view trial_id, std::size_t count) {
  std::vector<SampleRow> rows = example_samples(trial_id, 0, count);
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  for (SampleRow& row : rows) {
    for (std::int64_t& counter : row.counters) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      counter = static_cast<std::int64_t>(state >> 1);
    }
  }
  return rows;
}

store::StoreLayout layout_with(std::uint64_t chunk_rows) {
  store::StoreLayout layout;
  layout.samples.chunk_rows = chunk_rows;
  return layout;
}

struct ChildEnd {
  bool exited = false;  // false: killed by a signal
  int status = -1;      // the exit status, or the signal
  std::string err;      // what it wrote to stderr
};

// Runs `body` in a forked child whose stderr goes to `err_file`. A
// StoreError from it is printed as main prints it, and the child exits 2;
// 0 when it returns, 1 for anything else. exit(), not _exit(): the exit
// handlers are what is tested.
ChildEnd run_like_main(const std::filesystem::path& err_file, const std::function<void()>& body) {
  std::fflush(nullptr);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* err = std::freopen(err_file.c_str(), "w", stderr);
    if (err == nullptr) ::_exit(3);
    int status = 0;
    try {
      body();
    } catch (const InputError& error) {
      std::fprintf(stderr, "memsweep: error: %s\n", error.what());
      status = 2;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "memsweep: internal error: %s\n", error.what());
      status = 1;
    }
    std::exit(status);
  }
  ChildEnd end;
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return end;
  end.exited = WIFEXITED(status);
  end.status = end.exited ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? WTERMSIG(status) : -1);
  std::ifstream in(err_file);
  std::ostringstream text;
  text << in.rdbuf();
  end.err = text.str();
  return end;
}

struct CommandOutput {
  int status = -1;
  std::string out;
};

CommandOutput shell(const std::string& command) {
  CommandOutput result;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  std::size_t read = 0;
  while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), read);
  const int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

struct RawRows {
  long rows = 0;
  long blank = 0;  // with an empty trial id: never written
};

// Each table's rows as h5py reads the file itself, no reader's rule applied.
std::map<std::string, RawRows> raw_rows(const std::filesystem::path& file) {
  const CommandOutput read = shell(fmt::format(R"(/usr/bin/python3 -c '
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    for name in ("trials", "samples", "epochs", "messages"):
        ids = f[name].fields("trial_id")[()]
        print(name, len(ids), int((ids == b"").sum()))
' '{}')",
                                               file.string()));
  EXPECT_EQ(read.status, 0) << read.out;
  std::map<std::string, RawRows> tables;
  std::istringstream lines(read.out);
  std::string name;
  RawRows counts;
  while (lines >> name >> counts.rows >> counts.blank) tables[name] = counts;
  EXPECT_EQ(tables.size(), 4U) << read.out;
  return tables;
}

// The one line a full disk gives, naming the file, the system error and
// how to continue; none of HDF5's own text.
void expect_one_line_disk_full_error(const ChildEnd& end, const std::filesystem::path& file) {
  EXPECT_TRUE(end.exited) << "killed by signal " << end.status << ":\n" << end.err;
  EXPECT_EQ(end.status, 2) << end.err;
  ASSERT_FALSE(end.err.empty());
  EXPECT_EQ(end.err.find('\n'), end.err.size() - 1) << "more than one line:\n" << end.err;
  EXPECT_THAT(end.err, ::testing::StartsWith("memsweep: error: " + file.string() + ": "));
  EXPECT_THAT(end.err, HasSubstr("No space left on device (errno 28)"));
  EXPECT_THAT(end.err, HasSubstr("--resume"));
  EXPECT_THAT(end.err, Not(HasSubstr("time =")));
  EXPECT_THAT(end.err, Not(HasSubstr("H5")));
}

class FullDisk : public ::testing::Test {
 protected:
  void mount(int kib) {
    disk_.emplace(dir_.path() / "disk", kib);
    if (!disk_->mounted())
      MEMSWEEP_SKIP_OR_FAIL_IN_CI("cannot mount a tmpfs (this test needs root): " + disk_->problem());
  }

  const testing::TempDir dir_;
  std::optional<testing::SmallDisk> disk_;
  const std::filesystem::path file_ = dir_.path() / "disk" / "r.h5";
  const std::filesystem::path err_ = dir_.path() / "stderr.txt";
};

TEST(HdfExitCleanUp, IsMemsweepsOwnInEveryProgramThatLinksTheStore) {
  // Replaced before main: else a close that failed would crash at exit.
  EXPECT_TRUE(store::exit_clean_up_is_memsweeps());
}

// The reported case: a disk that fills while a worker's chunk of samples
// is stored as it is (HDF5's direct chunk write, which goes to the disk at
// once). Rows wait in memory when it happens (another attempt's samples, an
// epoch): the file must keep the last flush, not those tables' new sizes.
TEST_F(FullDisk, InADirectChunkWriteOneLineExitTwoAndTheFileAsItsLastFlush) {
  mount(1024);
  if (HasFatalFailure() || IsSkipped()) return;
  const ChildEnd end = run_like_main(err_, [&] {
    ResultStore store = store::ResultStoreInternals::create(file_, example_header(), false, {}, layout_with(kChunk));
    const std::vector<SampleRow> first = example_samples(example_id(0), 0, 2 * kChunk);
    store.append_samples(first);
    store.append_trial(example_trial(0));  // flushed: the file's last good state
    // Waiting: another attempt's rows (less than a chunk) and an epoch.
    store.append_samples(example_samples(example_id(1), 0, 50));
    store.append_epoch(testing::example_epoch(1));
    disk_->fill();
    const std::vector<SampleRow> chunk = noisy_samples(example_id(2), kChunk);
    store.append_compressed_samples(compress_sample_chunk(chunk, store.sample_chunk_format()));
    std::fprintf(stderr, "the chunk was stored on a full disk\n");
  });
  expect_one_line_disk_full_error(end, file_);
  EXPECT_THAT(end.err, HasSubstr(fmt::format("cannot write a chunk of {} rows to table /samples", kChunk)));

  // Read as it is, on the full disk; then with room again, resumed.
  const auto tables = raw_rows(file_);
  for (const auto& [table, counts] : tables)
    EXPECT_EQ(counts.blank, 0) << "/" << table << ": " << counts.blank << " of " << counts.rows
                               << " rows have an empty trial id";
  EXPECT_EQ(tables.at("samples").rows, static_cast<long>(2 * kChunk)) << "the rows of the last flush";
  EXPECT_EQ(tables.at("trials").rows, 1);
  EXPECT_EQ(tables.at("epochs").rows, 0);
  const CommandOutput dumped = shell(fmt::format("h5dump -H '{}'", file_.string()));
  EXPECT_EQ(dumped.status, 0) << dumped.out;

  disk_->unfill();
  const ChildEnd resumed = run_like_main(err_, [&] {
    ResultStore store = ResultStore::open_for_resume(file_, testing::example_run("resume"), {});
    store.append_samples(example_samples(example_id(1), 0, kChunk + 7));
    store.append_trial(example_trial(1));
    store.close();
  });
  EXPECT_TRUE(resumed.exited && resumed.status == 0) << resumed.status << ": " << resumed.err;
  const ResultReader reader(file_);
  EXPECT_EQ(reader.trials().size(), 2U);
  EXPECT_EQ(reader.sample_count(), 3 * kChunk + 7);
}

// A disk that fills before the first trial ends (64 KiB: the new file
// alone takes most of it): the flush fails, then the close, and the
// process still ends with its one line and status 2.
TEST_F(FullDisk, SoonAfterTheFileIsMadeOneLineAndExitTwo) {
  mount(64);
  if (HasFatalFailure() || IsSkipped()) return;
  const ChildEnd end = run_like_main(err_, [&] {
    ResultStore store = store::ResultStoreInternals::create(file_, example_header(), false, {}, layout_with(kChunk));
    for (int trial = 0; trial < 1000; ++trial) {
      store.append_samples(example_samples(example_id(trial), 0, 3 * kChunk));
      for (int epoch = 0; epoch < 50; ++epoch) store.append_epoch(testing::example_epoch(trial));
      store.append_trial(example_trial(trial));
    }
    std::fprintf(stderr, "1000 trials on a 64 KiB disk\n");
  });
  expect_one_line_disk_full_error(end, file_);
  if (std::filesystem::exists(file_)) {
    for (const auto& [table, counts] : raw_rows(file_))
      EXPECT_EQ(counts.blank, 0) << "/" << table << ": " << counts.blank << " of " << counts.rows
                                 << " rows have an empty trial id";
  }
}

}  // namespace
}  // namespace memsweep
