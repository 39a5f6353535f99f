// `memsweep run -o PATH --force`: what --force may replace (a memsweep
// results file, damaged or not, or an empty file) and what it refuses with
// one line and exit status 2, leaving the path as it was (a device node, a
// FIFO, a link, a folder, the sweep file, any other file); and two runs that
// replace one file at once: one wins, the other is refused.

#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";  // Debian's, which has python3-h5py

// A sweep of two trials; `name` tells the runs' files apart. `size`: the
// synthetic images' side and training examples, which set how long it runs.
struct SweepSize {
  int side = 8;
  int train_size = 256;
  int hidden = 16;
  int epochs = 1;
};
std::string small_sweep(const std::string& name, const SweepSize& size = {}) {
  return fmt::format(R"([sweep]
name = "{}"
seed = 1

[defaults]
dataset = "synthetic"
synthetic = {{ shape = [1, {}, {}], classes = 4, train_size = {}, test_size = 64 }}
model = "mlp"
hidden = [{}]
optimizer = "sgd"
learning_rate = 0.05
epochs = {}

[grid]
batch_size = [32, 64]
)",
                     name, size.side, size.side, size.train_size, size.hidden, size.epochs);
}
constexpr std::size_t kSmallSweepTrials = 2;

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

// What a path is, without following a link: type, mode, size, target,
// modification time and, for a regular file, a hash of its bytes (a
// failure then prints a line, not a binary file).
std::string snapshot(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return "absent";
  std::string text = fmt::format("mode {:o} size {} rdev {} mtime {}.{}", info.st_mode, info.st_size, info.st_rdev,
                                 info.st_mtim.tv_sec, info.st_mtim.tv_nsec);
  if (S_ISLNK(info.st_mode)) text += " -> " + std::filesystem::read_symlink(path).string();
  if (S_ISREG(info.st_mode)) text += fmt::format(" bytes {:x}", std::hash<std::string>{}(read_bytes(path)));
  return text;
}

std::set<std::string> names_in(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename());
  return names;
}

CommandResult run_sweep(const TempDir& dir, const std::string& sweep, const std::string& output, bool force) {
  std::vector<std::string> args{"run", sweep, "-o", output, "-q"};
  if (force) args.push_back("--force");
  return run_command(memsweep_argv(args), dir.path().string(), kEnvironment);
}

void python(const std::string& script) {
  const CommandResult result = run_command({kPython, "-c", script});
  ASSERT_EQ(result.exit_status, 0) << result.err;
}

// A results file of this sweep, written by memsweep; its path.
std::filesystem::path results_file(const TempDir& dir, const std::string& name) {
  const CommandResult run = run_sweep(dir, "sweep.toml", name, false);
  EXPECT_EQ(run.exit_status, kOk) << run.err;
  return dir.path() / name;
}

// ---- what --force replaces, and what it refuses --------------------------------

struct Target {
  const char* name;
  // Makes the thing at `target` in `dir` (whose sweep.toml is the sweep);
  // returns false to skip (a device node needs root).
  bool (*make)(const TempDir& dir, const std::filesystem::path& target);
  const char* words;  // what the one line says; empty: --force replaces it
};

void PrintTo(const Target& target, std::ostream* out) { *out << target.name; }

class ForceOutput : public ::testing::TestWithParam<Target> {};

TEST_P(ForceOutput, ReplacesOnlyAResultsFileOrAnEmptyFile) {
  const TempDir dir;
  dir.write("sweep.toml", small_sweep("force"));
  const std::filesystem::path target = dir.path() / "out";
  if (!GetParam().make(dir, target)) {
    // CI runs as root, where every kind can be made: there a failure to make
    // one is the test's own fault, not the machine's.
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("cannot make " + std::string(GetParam().name) + " here (mknod needs root)");
  }
  const std::string before = snapshot(target);
  const std::set<std::string> names_before = names_in(dir.path());

  const CommandResult run = run_sweep(dir, "sweep.toml", target.filename(), true);
  const std::string words = GetParam().words;
  if (words.empty()) {
    ASSERT_EQ(run.exit_status, kOk) << run.err;
    EXPECT_EQ(h5py_attributes(target).at("sweep_name"), "force");
    EXPECT_EQ(h5py_table(target, "trials").rows.size(), kSmallSweepTrials);
    EXPECT_EQ(h5py_table(target, "runs").rows.size(), 1U);
    return;
  }
  EXPECT_EQ(run.exit_status, kBadInput) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_THAT(run.err, ::testing::StartsWith("memsweep: error: "));
  EXPECT_THAT(run.err, HasSubstr("out"));
  EXPECT_THAT(run.err, HasSubstr(words));
  EXPECT_EQ(snapshot(target), before) << "a refused --force changed what it refused";
  EXPECT_EQ(names_in(dir.path()), names_before) << "a refused run left a file behind";
}

bool make_character_device(const TempDir&, const std::filesystem::path& target) {
  // A copy of /dev/null (1, 3): what `-o /dev/null --force` would destroy as root.
  return ::mknod(target.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0;
}

bool make_fifo(const TempDir&, const std::filesystem::path& target) { return ::mkfifo(target.c_str(), 0644) == 0; }

bool make_folder(const TempDir&, const std::filesystem::path& target) {
  std::filesystem::create_directory(target);
  return true;
}

bool make_link_to_results(const TempDir& dir, const std::filesystem::path& target) {
  std::filesystem::create_symlink(results_file(dir, "real.h5").filename(), target);
  return true;
}

bool make_dangling_link(const TempDir&, const std::filesystem::path& target) {
  std::filesystem::create_symlink("nowhere.h5", target);
  return true;
}

bool make_text_file(const TempDir& dir, const std::filesystem::path& target) {
  dir.write(target.filename().string(), "notes, not results\n");
  return true;
}

bool make_foreign_hdf5(const TempDir&, const std::filesystem::path& target) {
  python(
      fmt::format("import h5py\nwith h5py.File('{}', 'w') as f:\n  f['x'] = [1, 2, 3]\n  f.attrs['format'] = 'netcdf'",
                  target.string()));
  return true;
}

// HDF5's signature, then bytes that are nothing HDF5 can read.
bool make_damaged_foreign_hdf5(const TempDir& dir, const std::filesystem::path& target) {
  dir.write(target.filename().string(), std::string("\x89HDF\r\n\x1a\n", 8) + std::string(4000, '\x5a'));
  return true;
}

bool make_empty_file(const TempDir& dir, const std::filesystem::path& target) {
  dir.write(target.filename().string(), "");
  return true;
}

bool make_results_file(const TempDir& dir, const std::filesystem::path& target) {
  const CommandResult run = run_sweep(dir, "sweep.toml", target.filename(), false);
  return run.exit_status == kOk;
}

// A crashed run's file that HDF5 cannot open: cut short in its metadata.
bool make_truncated_results_file(const TempDir& dir, const std::filesystem::path& target) {
  if (!make_results_file(dir, target)) return false;
  std::filesystem::resize_file(target, 3000);
  return true;
}

INSTANTIATE_TEST_SUITE_P(
    Targets, ForceOutput,
    ::testing::Values(Target{"character_device", make_character_device, "a character device, not a results file"},
                      Target{"fifo", make_fifo, "a FIFO (named pipe), not a results file"},
                      Target{"folder", make_folder, "is a directory"},
                      Target{"link_to_results_file", make_link_to_results, "a symbolic link (to real.h5)"},
                      Target{"dangling_link", make_dangling_link,
                             "a symbolic link to nowhere.h5, which does not exist"},
                      Target{"text_file", make_text_file, "not HDF5 (no HDF5 signature), not a results file"},
                      Target{"hdf5_of_another_program", make_foreign_hdf5, "an HDF5 file of another program"},
                      Target{"damaged_hdf5_of_another_program", make_damaged_foreign_hdf5, "shows no sign of memsweep"},
                      Target{"empty_file", make_empty_file, ""}, Target{"results_file", make_results_file, ""},
                      Target{"truncated_results_file", make_truncated_results_file, ""}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ForceOutput, RefusesTheSweepFileItself) {
  const TempDir dir;
  const std::filesystem::path sweep = dir.write("sweep.toml", small_sweep("force"));
  const std::string before = snapshot(sweep);
  for (const bool force : {true, false}) {
    const CommandResult run = run_sweep(dir, "sweep.toml", "./sweep.toml", force);
    EXPECT_EQ(run.exit_status, kBadInput) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_THAT(run.err, HasSubstr("-o ./sweep.toml: is the sweep file itself"));
  }
  EXPECT_EQ(snapshot(sweep), before);
  EXPECT_EQ(names_in(dir.path()), std::set<std::string>{"sweep.toml"});
}

// ---- two runs replacing one file ------------------------------------------------

// memsweep's writer's lock (src/store/writer_lock.cpp): an open-file-
// description lock on byte 2^40 of the file.
class HeldWriterLock {
 public:
  explicit HeldWriterLock(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDWR | O_CLOEXEC)) {
    struct flock request {};
    request.l_type = F_WRLCK;
    request.l_whence = SEEK_SET;
    request.l_start = off_t{1} << 40;
    request.l_len = 1;
    locked_ = fd_ >= 0 && ::fcntl(fd_, F_OFD_SETLK, &request) == 0;
  }
  ~HeldWriterLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  HeldWriterLock(const HeldWriterLock&) = delete;
  HeldWriterLock& operator=(const HeldWriterLock&) = delete;
  bool locked() const { return locked_; }

 private:
  int fd_;
  bool locked_ = false;
};

// The moment of the race, held still: another run holds the writer's lock
// on the file (while it builds its replacement, or writes it).
TEST(ForceOutput, IsRefusedWhileAnotherRunHoldsTheFile) {
  const TempDir dir;
  dir.write("sweep.toml", small_sweep("force"));
  const std::filesystem::path target = results_file(dir, "out.h5");
  const std::string before = snapshot(target);
  {
    const HeldWriterLock other_run(target);
    ASSERT_TRUE(other_run.locked());
    const CommandResult run = run_sweep(dir, "sweep.toml", "out.h5", true);
    EXPECT_EQ(run.exit_status, kBadInput) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
    EXPECT_THAT(run.err,
                HasSubstr(fmt::format("out.h5: another memsweep run (process {}) is writing this file", ::getpid())));
    EXPECT_EQ(snapshot(target), before);
    EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"sweep.toml", "out.h5"}));
  }
  // The lock went with its holder: nothing stale blocks the next run.
  const CommandResult run = run_sweep(dir, "sweep.toml", "out.h5", true);
  EXPECT_EQ(run.exit_status, kOk) << run.err;
}

// A run killed while it held the lock leaves no lock behind.
TEST(ForceOutput, AKilledHoldersLockDoesNotBlock) {
  const TempDir dir;
  dir.write("sweep.toml", small_sweep("force"));
  const std::filesystem::path target = results_file(dir, "out.h5");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    const HeldWriterLock lock(target);
    const char locked = lock.locked() ? 'y' : 'n';
    (void)!::write(ready[1], &locked, 1);
    ::pause();
    ::_exit(0);
  }
  char locked = 0;
  ASSERT_EQ(::read(ready[0], &locked, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_EQ(locked, 'y');
  EXPECT_EQ(run_sweep(dir, "sweep.toml", "out.h5", true).exit_status, kBadInput);
  ::kill(holder, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(holder, &status, 0), holder);
  const CommandResult run = run_sweep(dir, "sweep.toml", "out.h5", true);
  EXPECT_EQ(run.exit_status, kOk) << run.err;
}

// The race itself: two runs started together, over an existing results file
// and over a name that is free. Before the fix both ended with status 0 in
// most rounds, one of them having written a file that was then replaced.
TEST(ForceOutput, OfTwoRunsAtOnceOneWinsAndTheOtherIsRefused) {
  constexpr int kRounds = 4;
  // Long enough that the second run starts while the first still writes, on
  // a loaded machine too: about 2 s here.
  constexpr SweepSize kTwoSeconds{.side = 28, .train_size = 4000, .hidden = 128, .epochs = 12};
  const TempDir dir;
  dir.write("alpha.toml", small_sweep("alpha", kTwoSeconds));
  dir.write("beta.toml", small_sweep("beta", kTwoSeconds));
  dir.write("old.toml", small_sweep("old"));
  const std::filesystem::path target = dir.path() / "out.h5";
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(fmt::format("round {}", round));
    std::filesystem::remove(target);
    const bool over_a_file = round % 2 == 0;
    if (over_a_file) {
      ASSERT_EQ(run_sweep(dir, "old.toml", "out.h5", false).exit_status, kOk);
    }
    const std::filesystem::path logs = dir.path() / fmt::format("logs{}", round);
    std::filesystem::create_directories(logs / "alpha");
    std::filesystem::create_directories(logs / "beta");
    std::map<std::string, std::unique_ptr<BackgroundProcess>> runs;
    for (const std::string name : {"alpha", "beta"})
      runs[name] =
          std::make_unique<BackgroundProcess>(memsweep_argv({"run", name + ".toml", "-o", "out.h5", "--force", "-q"}),
                                              logs / name, kEnvironment, dir.path());
    std::map<std::string, int> statuses;
    for (auto& [name, run] : runs) statuses[name] = run->wait();
    const int winners = static_cast<int>(
        std::count_if(statuses.begin(), statuses.end(), [](const auto& entry) { return entry.second == kOk; }));
    ASSERT_EQ(winners, 1) << "alpha " << statuses["alpha"] << ": " << runs["alpha"]->err() << "\nbeta "
                          << statuses["beta"] << ": " << runs["beta"]->err();
    const std::string winner = statuses["alpha"] == kOk ? "alpha" : "beta";
    const std::string loser = winner == "alpha" ? "beta" : "alpha";
    EXPECT_EQ(statuses[loser], kBadInput);
    EXPECT_THAT(runs[loser]->err(), HasSubstr("another memsweep run"));
    EXPECT_THAT(runs[loser]->err(), HasSubstr("is writing this file"));
    EXPECT_EQ(h5py_attributes(target).at("sweep_name"), winner);
    EXPECT_EQ(h5py_table(target, "runs").rows.size(), 1U);
    EXPECT_EQ(h5py_table(target, "trials").rows.size(), kSmallSweepTrials);
    std::filesystem::remove_all(logs);
  }
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"alpha.toml", "beta.toml", "old.toml", "out.h5"}))
      << "a temporary was left";
}

}  // namespace
}  // namespace memsweep::testing
