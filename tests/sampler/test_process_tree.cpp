// The process-tree probe (sampler/process_tree.hpp) under the real sampler:
// a child and its grandchild, each holding a known block, summed on every
// sample while the sampler's PSS thread reads the same tree (TSan runs this).

#include "sampler/process_tree.hpp"
#include "sampler/sampler_support.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace memsweep::testing {
namespace {

using std::chrono::milliseconds;
constexpr std::int64_t kMiB = 1 << 20;

std::int64_t own_rss_bytes() {
  long long size = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  if (std::fscanf(statm, "%lld %lld", &size, &resident) != 2) resident = -1;
  std::fclose(statm);
  return resident * ::sysconf(_SC_PAGESIZE);
}

// Touches `mib` MiB, sends its own RSS then on `ready`, and waits to be
// killed. Its own reading is the reference: a sanitizer's shadow memory
// makes a process hold more than its block.
[[noreturn]] void hold(int mib, int ready) {
  char* block = static_cast<char*>(std::malloc(static_cast<std::size_t>(mib) * kMiB));
  if (block != nullptr) std::memset(block, 1, static_cast<std::size_t>(mib) * kMiB);
  const std::int64_t rss = own_rss_bytes();
  [[maybe_unused]] const ssize_t sent = ::write(ready, &rss, sizeof(rss));
  for (;;) ::pause();
}

// A child holding 40 MiB whose own child holds 60 MiB, in a process group
// of their own; killed (and the child reaped) when it goes out of scope.
class SmallTree {
 public:
  SmallTree() {
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("pipe");
    child_ = ::fork();
    if (child_ == 0) {
      ::setpgid(0, 0);
      if (::fork() == 0) hold(60, ready[1]);
      hold(40, ready[1]);
    }
    ::setpgid(child_, child_);
    for (std::int64_t& rss : rss_) {
      if (::read(ready[0], &rss, sizeof(rss)) != static_cast<ssize_t>(sizeof(rss))) rss = -1;
    }
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~SmallTree() {
    ::kill(-child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  int root() const { return child_; }
  // What the two said they held once their blocks were touched.
  std::int64_t total_rss() const { return rss_[0] + rss_[1]; }
  std::int64_t largest_rss() const { return std::max(rss_[0], rss_[1]); }

 private:
  pid_t child_ = -1;
  std::int64_t rss_[2] = {-1, -1};
};

TEST(ProcessTreeProbe, SumsEveryProcessWhileThePssThreadReadsTheTree) {
  const SmallTree tree;
  ASSERT_GE(tree.total_rss(), 100 * kMiB) << "40 MiB and 60 MiB held at once";
  SamplerOptions options;
  options.interval = milliseconds(5);
  options.pss_interval = milliseconds(3);
  Sampler sampler(options, make_proc_memory_probe(), nullptr);
  sampler.set_target(tree.root(), make_process_tree_probe(tree.root()));
  sampler.begin_region(RegionBaseline{0, false});
  // PSS reads are spaced by their cost (smaps_rollup walks the page tables,
  // slower still in a sanitizer's build): a few of them, within a bound.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    std::this_thread::sleep_for(milliseconds(100));
  } while (sampler.stats().pss_reads < 3 && std::chrono::steady_clock::now() < give_up);
  const RegionSummary region = sampler.end_region();
  const SamplerStats stats = sampler.stats();

  EXPECT_GE(region.samples, 10U);
  // Each sample sums both processes, once each.
  const double expected = static_cast<double>(tree.total_rss());
  EXPECT_NEAR(static_cast<double>(region.max_sampled_rss_bytes), expected, 0.05 * expected);
  EXPECT_GE(stats.pss_reads, 3U);
  EXPECT_EQ(stats.pss_read_failures, 0U);
  // PSS splits what the two share (the parent's pages before the fork); it
  // never counts more than the RSS, and their blocks are their own.
  EXPECT_GE(region.pss_peak_bytes, 95 * kMiB);
  EXPECT_LE(region.pss_peak_bytes, region.max_sampled_rss_bytes);

  // The same tree, read directly: its two members and their peaks.
  const auto probe = make_process_tree_probe(tree.root());
  ProcessMemory memory;
  ASSERT_TRUE(probe->read_process(memory));
  EXPECT_EQ(probe->members().size(), 2U);
  std::int64_t largest = 0;
  ASSERT_TRUE(probe->read_peak_rss(largest));
  EXPECT_GE(largest, tree.largest_rss());
  EXPECT_LE(largest, tree.largest_rss() + 4 * kMiB);
  const ProcessTreeStats totals = probe->stats();
  EXPECT_EQ(totals.processes_seen, 2);
  EXPECT_GE(totals.peak_sum, tree.total_rss());
}

// The runner's check wants the peak and the RSS at one moment: one search
// of /proc for new processes, not one per read, with the same figures as
// the two reads made apart.
TEST(ProcessTreeProbe, APeakAndProcessReadSearchesTheTreeOnce) {
  const SmallTree tree;
  const auto probe = make_process_tree_probe(tree.root());
  const std::int64_t scans_before = probe->stats().scans;
  const PeakAndProcess both = probe->read_peak_and_process();
  EXPECT_EQ(probe->stats().scans, scans_before + 1);
  ASSERT_TRUE(both.peak_bytes.has_value());
  ASSERT_TRUE(both.process.has_value());
  EXPECT_EQ(probe->members().size(), 2U);
  EXPECT_GE(both.process->rss_bytes, tree.total_rss() - 4 * kMiB);
  EXPECT_GE(*both.peak_bytes, tree.largest_rss());

  std::int64_t peak = 0;
  ProcessMemory memory;
  ASSERT_TRUE(probe->read_peak_rss(peak));
  ASSERT_TRUE(probe->read_process(memory));
  EXPECT_EQ(probe->stats().scans, scans_before + 3) << "each separate read searches once";
  EXPECT_EQ(peak, *both.peak_bytes);
}

// RSS from one process's statm, read here as the reference.
std::int64_t statm_rss_bytes(pid_t pid) {
  long long size = 0, resident = 0;
  FILE* statm = std::fopen(("/proc/" + std::to_string(pid) + "/statm").c_str(), "r");
  if (statm == nullptr) return -1;
  if (std::fscanf(statm, "%lld %lld", &size, &resident) != 2) resident = -1;
  std::fclose(statm);
  return resident * ::sysconf(_SC_PAGESIZE);
}

// A process holding 48 MiB whose child shares its memory (clone with
// CLONE_VM, as vfork and posix_spawn make one) until the test lets it exec
// (shared_memory_program.cpp). The child's statm reads the whole shared
// memory: summed as a process of its own it doubled a sample (a CI run
// recorded a 102 MiB program at 205 MiB: LeakSanitizer's tracer at the
// program's exit).
TEST(ProcessTreeProbe, AChildInItsParentsMemoryIsCountedOnceAndOnItsOwnAfterItsExec) {
  int to_program[2];
  int from_program[2];
  ASSERT_EQ(::pipe(to_program), 0);
  ASSERT_EQ(::pipe(from_program), 0);
  const pid_t parent = ::fork();
  if (parent == 0) {
    ::setpgid(0, 0);
    ::dup2(to_program[0], STDIN_FILENO);
    ::dup2(from_program[1], STDOUT_FILENO);
    ::execl(MEMSWEEP_SHARED_MEMORY_PROGRAM, "shared_memory_program", "48", nullptr);
    ::_exit(127);
  }
  ::close(to_program[0]);
  ::close(from_program[1]);
  struct Reap {
    pid_t pid;
    int go;
    ~Reap() {
      ::close(go);
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{parent, to_program[1]};
  char line[32] = {};
  std::size_t got = 0;
  while (got < sizeof line - 1 && std::memchr(line, '\n', got) == nullptr) {
    const ssize_t more = ::read(from_program[0], line + got, sizeof line - 1 - got);
    if (more <= 0) break;
    got += static_cast<std::size_t>(more);
  }
  ::close(from_program[0]);
  const pid_t child = static_cast<pid_t>(std::atoi(line));
  ASSERT_GT(child, 0) << "the program made no child: \"" << line << '"';

  const auto probe = make_process_tree_probe(parent);
  ProcessMemory memory;
  ASSERT_TRUE(probe->read_process(memory));
  ASSERT_EQ(probe->members().size(), 2U) << "the child is found";
  const std::int64_t own = statm_rss_bytes(parent);
  ASSERT_GE(own, 48 * kMiB);
  EXPECT_GE(statm_rss_bytes(child), own - kMiB) << "the child's statm reads the memory it shares";
  EXPECT_NEAR(static_cast<double>(memory.rss_bytes), static_cast<double>(own), 0.05 * static_cast<double>(own))
      << "one memory, summed once";
  std::int64_t pss = 0;
  ASSERT_TRUE(probe->read_pss(pss));
  EXPECT_LE(pss, own + 2 * kMiB);
  std::int64_t peak = 0;
  ASSERT_TRUE(probe->read_peak_rss(peak));
  EXPECT_LE(probe->stats().peak_sum, peak) << "the child's peak is its parent's: not summed twice";

  // After its exec the child has a memory of its own, counted.
  const char byte = 1;
  ASSERT_EQ(::write(reap.go, &byte, 1), 1);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::int64_t sleep_rss = -1;
  for (;;) {
    char exe[64] = {};
    const ssize_t length = ::readlink(("/proc/" + std::to_string(child) + "/exe").c_str(), exe, sizeof exe - 1);
    if (length > 0 && std::string(exe, static_cast<std::size_t>(length)).ends_with("sleep")) {
      sleep_rss = statm_rss_bytes(child);
      if (sleep_rss > 0) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "the child never exec'd";
    std::this_thread::sleep_for(milliseconds(5));
  }
  ASSERT_TRUE(probe->read_process(memory));
  const std::int64_t expected = statm_rss_bytes(parent) + statm_rss_bytes(child);
  EXPECT_NEAR(static_cast<double>(memory.rss_bytes), static_cast<double>(expected), 0.5 * kMiB)
      << "the parent's memory and sleep's own " << sleep_rss << " B";
  EXPECT_LT(memory.rss_bytes, own + 16 * kMiB);
}

TEST(ProcessTreeProbe, AProcessThatIsGoneReadsAsNothing) {
  pid_t gone = ::fork();
  if (gone == 0) std::_Exit(0);
  ::waitpid(gone, nullptr, 0);
  const auto probe = make_process_tree_probe(gone);
  ProcessMemory memory;
  EXPECT_FALSE(probe->read_process(memory));
  EXPECT_TRUE(probe->members().empty());
  std::int64_t pss = 0;
  EXPECT_FALSE(probe->read_pss(pss));
}

TEST(ProcessTreeProbe, ACgroupListLongerThanAnyBufferIsReadWhole) {
  // A trial's cgroup.procs of 3001 lines (about 25 KB): every line is a
  // member found, none lost, and no pid cut in half at a buffer's end. The
  // pids past pid_max cannot exist: each is found, and read as gone.
  const TempDir dir;
  long long pid_max = 0;
  std::FILE* limit = std::fopen("/proc/sys/kernel/pid_max", "r");
  ASSERT_NE(limit, nullptr);
  ASSERT_EQ(std::fscanf(limit, "%lld", &pid_max), 1);
  std::fclose(limit);
  const std::string procs = (dir.path() / "cgroup.procs").string();
  std::FILE* list = std::fopen(procs.c_str(), "w");
  ASSERT_NE(list, nullptr);
  std::fprintf(list, "%d\n", static_cast<int>(::getpid()));
  constexpr int kAbsent = 3000;
  for (int i = 1; i <= kAbsent; ++i) std::fprintf(list, "%lld\n", pid_max + i);
  std::fclose(list);
  const auto probe = make_process_tree_probe(::getpid(), procs);
  ProcessMemory memory;
  EXPECT_TRUE(probe->read_process(memory));
  EXPECT_EQ(probe->stats().processes_seen, 1 + kAbsent);
  const std::vector<int> alive = probe->members();
  EXPECT_EQ(alive, std::vector<int>{static_cast<int>(::getpid())});
}

}  // namespace
}  // namespace memsweep::testing
