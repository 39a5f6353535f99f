// Every trial in its own process, end to end under mpirun: a trial that the
// kernel's OOM killer ends (a real memory cgroup with a limit, as Slurm's
// ConstrainRAMSpace sets one), passes its budget, hangs or crashes is that
// trial's result, and the sweep goes on and exits 0 without a resume; two
// ranks share one decoded copy of their dataset.

#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/file_text.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr std::int64_t kMiB = 1 << 20;

bool write_file(const fs::path& file, const std::string& text) {
  std::ofstream out(file);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// The value of "Key:   123 kB" in a /proc file, in bytes; -1 when absent.
std::int64_t proc_kib(const std::string& text, const std::string& key) {
  const std::size_t at = text.find("\n" + key + ":");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + key.size() + 2)) * 1024;
}

// The trials' ids in the sweep's order, as `memsweep plan` lists them.
std::vector<std::string> plan_ids(const std::string& sweep) {
  const CommandResult plan = run_memsweep({"plan", sweep});
  EXPECT_EQ(plan.exit_status, kOk) << plan.err;
  std::vector<std::string> ids;
  std::istringstream lines(plan.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string first = line.substr(0, line.find(' '));
    if (first.size() == 12 && first.find_first_not_of("0123456789abcdef") == std::string::npos) ids.push_back(first);
  }
  return ids;
}

std::vector<std::string> memsweep_on_ranks_argv(int ranks, const std::vector<std::string>& args) {
  return on_ranks(MEMSWEEP_MPIEXEC, ranks, memsweep_argv(args));
}

// ---- a memory cgroup with a limit, made by the test ------------------------------

// A memory cgroup of the test's own, under whichever hierarchy this machine
// has (the v2 unified one with its memory controller, or v1's memory
// controller), with a limit; commands run inside it. As root; in CI a
// machine where neither works fails the test.
class LimitedCgroup {
 public:
  explicit LimitedCgroup(std::int64_t limit_bytes) {
    const std::string name = fmt::format("memsweep-test-{}", ::getpid());
    const std::string self = slurp("/proc/self/cgroup");
    if (slurp("/sys/fs/cgroup/cgroup.controllers").find("memory") != std::string::npos) {
      // v2: a group under the root, whose subtree_control enables memory.
      path_ = fs::path("/sys/fs/cgroup") / name;
      if (!make(path_) || !write_file(path_ / "memory.max", std::to_string(limit_bytes))) return;
      write_file(path_ / "memory.swap.max", "0");
      version_ = 2;
      return;
    }
    // v1: under this process's own memory group.
    std::istringstream lines(self);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t first = line.find(':');
      const std::size_t second = line.find(':', first + 1);
      if (first == std::string::npos || second == std::string::npos) continue;
      const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
      if (controllers.find(",memory,") == std::string::npos) continue;
      path_ = fs::path("/sys/fs/cgroup/memory" + line.substr(second + 1)) / name;
    }
    if (path_.empty()) {
      problem_ = "no memory controller in /proc/self/cgroup: " + self;
      return;
    }
    if (!make(path_) || !write_file(path_ / "memory.limit_in_bytes", std::to_string(limit_bytes))) return;
    version_ = 1;
  }
  ~LimitedCgroup() {
    if (path_.empty() || !fs::exists(path_)) return;
    std::istringstream procs(slurp(path_ / "cgroup.procs"));
    for (pid_t pid = 0; procs >> pid;) ::kill(pid, SIGKILL);
    for (int attempt = 0; attempt < 100 && ::rmdir(path_.c_str()) != 0; ++attempt)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  LimitedCgroup(const LimitedCgroup&) = delete;
  LimitedCgroup& operator=(const LimitedCgroup&) = delete;

  bool usable() const { return version_ != 0; }
  const std::string& problem() const { return problem_; }
  int version() const { return version_; }
  // `argv` run inside the group (a shell moves itself in, then execs).
  std::vector<std::string> inside(const std::vector<std::string>& argv) const {
    std::vector<std::string> wrapped{"/bin/sh", "-c", "echo $$ > \"$0\" && exec \"$@\"",
                                     (path_ / "cgroup.procs").string()};
    wrapped.insert(wrapped.end(), argv.begin(), argv.end());
    return wrapped;
  }
  // OOM kills of processes in the group itself (v1 counts its own; v2 its
  // whole subtree).
  std::optional<std::int64_t> oom_kills() const {
    const std::string text = "\n" + slurp(path_ / (version_ == 2 ? "memory.events" : "memory.oom_control"));
    const std::size_t at = text.find("\noom_kill ");
    if (at == std::string::npos) return std::nullopt;
    return std::stoll(text.substr(at + 10));
  }

 private:
  bool make(const fs::path& path) {
    if (::mkdir(path.c_str(), 0755) == 0) return true;
    problem_ = fmt::format("cannot create the memory cgroup {}: {}", path.string(), std::strerror(errno));
    path_.clear();
    return false;
  }

  fs::path path_;
  int version_ = 0;
  std::string problem_;
};

#define REQUIRE_CGROUP(group)                                                                                    \
  do {                                                                                                           \
    if (!(group).usable()) MEMSWEEP_SKIP_OR_FAIL_IN_CI("this test needs a memory cgroup: " + (group).problem()); \
  } while (false)

// Four trials that fit easily and one that needs about 5.6 GB (three hidden
// layers of 13,000 units with Adam: parameters, gradients and two moments),
// more than three times the group's limit.
constexpr std::int64_t kGroupLimit = 1536 * kMiB;
constexpr const char* kOomSweep = R"(
[sweep]
name = "oom"
[sampler]
interval_ms = 2
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 3000, test_size = 200 }
learning_rate = 0.02
batch_size = 32
epochs = 2
[[trial]]
hidden = [64]
[[trial]]
hidden = [96]
[[trial]]
hidden = [13000, 13000, 13000]
optimizer = "adam"
[[trial]]
hidden = [128]
[[trial]]
hidden = [160]
)";
constexpr const char* kVictimHidden = "[13000 13000 13000]";

struct SweepRun {
  int status = -1;
  std::string err;
  TsvTable trials;
};

SweepRun run_in(const LimitedCgroup& group, const TempDir& dir, const std::vector<std::string>& extra,
                const std::map<std::string, std::string>& environment = kEnvironment) {
  const std::string sweep = dir.write("oom.toml", kOomSweep).string();
  const std::string out = (dir.path() / "oom.h5").string();
  std::vector<std::string> args{"run", sweep, "-o", out, "--force"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::map<std::string, std::string> env = environment;
  env["MEMSWEEP_SHM"] = (dir.path() / "shm").string();
  fs::create_directories(dir.path() / "shm");
  const CommandResult run = run_command(group.inside(memsweep_on_ranks_argv(3, args)), dir.path().string(), env);
  SweepRun result{run.exit_status, run.err, {}};
  if (fs::exists(out)) result.trials = h5py_table(out, "trials");
  return result;
}

std::size_t victim_row(const TsvTable& trials) {
  for (std::size_t row = 0; row < trials.rows.size(); ++row)
    if (trials.at(row, "hidden").find("13000") != std::string::npos) return row;
  ADD_FAILURE() << "no row for the " << kVictimHidden << " trial";
  return 0;
}

TEST(TrialProcesses, TheOomKillerEndsOnlyTheTrialThatRanOutOfMemory) {
  const LimitedCgroup group(kGroupLimit);
  REQUIRE_CGROUP(group);
  const TempDir dir;
  const SweepRun run = run_in(group, dir, {});
  std::cout << run.err << std::flush;
  ASSERT_EQ(run.status, kOk) << "the sweep goes on past the trial the OOM killer ended\n" << run.err;
  ASSERT_EQ(run.trials.rows.size(), 5U) << "every trial has its row in the first run, no resume";
  const std::size_t victim = victim_row(run.trials);
  EXPECT_GE(run.trials.number(victim, "predicted_bytes"), 3.0 * kGroupLimit) << "it needs 3x the limit";
  EXPECT_EQ(run.trials.at(victim, "status"), "killed") << run.trials.at(victim, "message");
  EXPECT_EQ(run.trials.at(victim, "end_cause"), "oom");
  EXPECT_EQ(run.trials.at(victim, "oom_killed"), "1");
  EXPECT_EQ(run.trials.at(victim, "end_signal"), std::to_string(SIGKILL));
  EXPECT_THAT(run.trials.at(victim, "message"), HasSubstr("the kernel's OOM killer"));
  // The memory it reached before the kill: its own peak, or its cgroup's.
  const double peak = std::max(run.trials.number(victim, "rss_peak"), run.trials.number(victim, "cgroup_peak"));
  EXPECT_GE(peak, 0.8 * kGroupLimit) << "peak " << peak / kMiB << " MiB of a " << kGroupLimit / kMiB << " MiB limit";
  for (std::size_t row = 0; row < run.trials.rows.size(); ++row) {
    if (row == victim) continue;
    EXPECT_EQ(run.trials.at(row, "status"), "ok") << run.trials.at(row, "message");
    EXPECT_EQ(run.trials.at(row, "end_cause"), "exited");
  }
  std::cout << fmt::format("OOM victim: {} (peak {:.0f} MiB, cgroup v{} limit {} MiB, isolation {})\n",
                           run.trials.at(victim, "message"), peak / kMiB, group.version(), kGroupLimit / kMiB,
                           run.trials.at(victim, "isolation"));
}

// With a budget, the same sweep ends the large trial before it starts (its
// prediction does not fit), and a trial whose memory grows past the budget
// while it runs (the test hook adds 2 GiB to a small one) is stopped at the
// budget: over_budget, and the group's own limit is never reached.
TEST(TrialProcesses, TheBudgetStopsTrialsBeforeTheJobsLimitIsReached) {
  const LimitedCgroup group(kGroupLimit);
  REQUIRE_CGROUP(group);
  const TempDir dir;
  const std::vector<std::string> ids = plan_ids(dir.write("probe.toml", kOomSweep).string());
  ASSERT_EQ(ids.size(), 5U);
  const std::string grower = ids[3];  // hidden = [128]

  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_TEST_TRIAL_HOOK"] = grower + ":allocate=2GiB";
  const std::optional<std::int64_t> kills_before = group.oom_kills();
  const SweepRun run = run_in(group, dir, {"--mem-budget", "768MiB"}, environment);
  std::cout << run.err << std::flush;
  ASSERT_EQ(run.status, kOk) << run.err;
  ASSERT_EQ(run.trials.rows.size(), 5U);
  const std::size_t victim = victim_row(run.trials);
  EXPECT_EQ(run.trials.at(victim, "status"), "over_budget");
  EXPECT_THAT(run.trials.at(victim, "message"), HasSubstr("not run: predicted"));
  for (std::size_t row = 0; row < run.trials.rows.size(); ++row) {
    const std::string status = run.trials.at(row, "status");
    if (run.trials.at(row, "trial_id") == grower) {
      EXPECT_EQ(status, "over_budget") << run.trials.at(row, "message");
      EXPECT_EQ(run.trials.at(row, "end_cause"), "budget");
      std::cout << "grown past the budget: " << run.trials.at(row, "message") << " (oom_killed "
                << run.trials.at(row, "oom_killed") << ", isolation " << run.trials.at(row, "isolation") << ")\n";
    } else if (row != victim) {
      EXPECT_EQ(status, "ok") << run.trials.at(row, "message");
    }
    EXPECT_NE(status, "killed") << "nothing is left to the job's limit";
  }
  if (kills_before) {
    EXPECT_EQ(group.oom_kills(), kills_before) << "the job's own limit never struck";
  }
}

// A trial that stops making progress (the test hook) ends at its time limit,
// and the sweep goes on with the others.
TEST(TrialProcesses, AHangingTrialEndsAtItsTimeLimitAndTheSweepGoesOn) {
  const TempDir dir;
  const std::string sweep = dir.write("hang.toml", R"(
[sweep]
name = "hang"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 500, test_size = 100 }
epochs = 2
batch_size = 16
[[trial]]
hidden = [16]
[[trial]]
hidden = [24]
timeout = "2s"
[[trial]]
hidden = [32]
)")
                                .string();
  const std::vector<std::string> ids = plan_ids(sweep);
  ASSERT_EQ(ids.size(), 3U);
  const std::string hangs = ids[1];
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_TEST_TRIAL_HOOK"] = hangs + ":hang";
  environment["MEMSWEEP_SHM"] = dir.path().string();
  const std::string out = (dir.path() / "hang.h5").string();
  const CommandResult run = run_command(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out}), "", environment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable trials = h5py_table(out, "trials");
  ASSERT_EQ(trials.rows.size(), 3U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (trials.at(row, "trial_id") != hangs) {
      EXPECT_EQ(trials.at(row, "status"), "ok") << trials.at(row, "message");
      continue;
    }
    EXPECT_EQ(trials.at(row, "status"), "timeout");
    EXPECT_EQ(trials.at(row, "end_cause"), "timeout");
    EXPECT_THAT(trials.at(row, "message"), HasSubstr("no result within its time limit of 2 s"));
    EXPECT_GE(trials.number(row, "wall_seconds"), 2.0);
    EXPECT_LT(trials.number(row, "wall_seconds"), 10.0);
  }
  EXPECT_THAT(run.err, HasSubstr("timeout"));
}

constexpr const char* kLongerSweep = R"(
[sweep]
name = "longer"
[sampler]
interval_ms = 5
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 24000, test_size = 500 }
learning_rate = 0.02
batch_size = 16
epochs = 3
[grid]
hidden = [[256, 256], [320, 256], [384, 256], [448, 256]]
)";

// A trial process killed by SIGSEGV from outside (as a crash would end it):
// that trial fails with the signal, and the sweep goes on.
TEST(TrialProcesses, ACrashedTrialFailsWithItsSignalAndTheSweepGoesOn) {
  const TempDir dir;
  const std::string sweep = dir.write("longer.toml", kLongerSweep).string();
  const std::string out = (dir.path() / "crash.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_SHM"] = dir.path().string();
  // Under AddressSanitizer the trial process would catch the SIGSEGV itself.
  const char* asan = std::getenv("ASAN_OPTIONS");
  environment["ASAN_OPTIONS"] = std::string(asan != nullptr ? std::string(asan) + ":" : "") + "handle_segv=0";
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out}), dir.path(), environment);
  std::map<pid_t, std::string> running;
  ASSERT_TRUE(
      run.wait_for([&] { return !(running = trial_processes_below(run.pid())).empty(); }, std::chrono::seconds(60)))
      << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into its training
  const auto [victim_pid, victim_id] = *running.begin();
  ASSERT_EQ(::kill(victim_pid, SIGSEGV), 0);
  ASSERT_EQ(run.wait(), kOk) << run.err();
  const TsvTable trials = h5py_table(out, "trials");
  ASSERT_EQ(trials.rows.size(), 4U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (trials.at(row, "trial_id") != victim_id) {
      EXPECT_EQ(trials.at(row, "status"), "ok") << trials.at(row, "message");
      continue;
    }
    EXPECT_EQ(trials.at(row, "status"), "failed");
    EXPECT_EQ(trials.at(row, "end_cause"), "crash");
    EXPECT_EQ(trials.at(row, "end_signal"), std::to_string(SIGSEGV));
    EXPECT_EQ(trials.at(row, "pid"), std::to_string(victim_pid));
    EXPECT_THAT(trials.at(row, "message"), HasSubstr("crashed: SIGSEGV"));
  }
}

// Two ranks on one node training on the same dataset map one copy of it:
// each trial process's shared memory counts the whole copy (Rss), each pays
// half of it (Pss). While the sweep runs, the folder holds that one copy;
// when it ends, nothing.
// A folder of the test's own in /dev/shm: the shared copy is then memory
// (Shmem), as on a cluster node, not a disk file's page cache.
class SharedMemoryFolder {
 public:
  SharedMemoryFolder() : path_(fmt::format("/dev/shm/memsweep-test-{}", ::getpid())) { fs::create_directories(path_); }
  ~SharedMemoryFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  SharedMemoryFolder(const SharedMemoryFolder&) = delete;
  SharedMemoryFolder& operator=(const SharedMemoryFolder&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

TEST(TrialProcesses, TwoRanksShareOneDecodedCopyOfTheirDataset) {
  const TempDir dir;
  const SharedMemoryFolder shm;
  const fs::path& shared = shm.path();
  const std::string sweep = dir.write("longer.toml", kLongerSweep).string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_SHM"] = shared.string();
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", (dir.path() / "s.h5").string()}), dir.path(),
                        environment);
  std::map<pid_t, std::string> running;
  ASSERT_TRUE(
      run.wait_for([&] { return (running = trial_processes_below(run.pid())).size() == 2; }, std::chrono::seconds(60)))
      << "two trial processes at once\n"
      << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<std::string> copies;
  for (const auto& entry : fs::directory_iterator(shared))
    if (entry.path().extension() == ".dataset") copies.push_back(entry.path().filename().string());
  EXPECT_EQ(copies.size(), 1U) << "one decoded copy on the node";
  const std::int64_t dataset_bytes = 24500LL * 28 * 28 * 4;  // the images as float32
  for (const auto& [pid, id] : running) {
    const std::string status = "\n" + slurp(fmt::format("/proc/{}/status", pid));
    const std::string rollup = "\n" + slurp(fmt::format("/proc/{}/smaps_rollup", pid));
    const std::int64_t rss_shmem = proc_kib(status, "RssShmem");
    const std::int64_t pss_shmem = proc_kib(rollup, "Pss_Shmem");
    std::cout << fmt::format("trial process {} ({}): RssShmem {:.1f} MiB, Pss_Shmem {:.1f} MiB\n", pid, id,
                             static_cast<double>(rss_shmem) / kMiB, static_cast<double>(pss_shmem) / kMiB);
    EXPECT_GE(rss_shmem, dataset_bytes) << "the whole copy is mapped and resident";
    EXPECT_NEAR(static_cast<double>(pss_shmem), rss_shmem / 2.0, rss_shmem * 0.1) << "and shared by two";
  }
  ASSERT_EQ(run.wait(), kOk) << run.err();
  for (const auto& entry : fs::directory_iterator(shared))
    EXPECT_NE(entry.path().extension(), ".dataset") << "left behind: " << entry.path();
}

}  // namespace
}  // namespace memsweep::testing
