// The process-tree probe (sampler/process_tree.hpp) under the real sampler:
// a child and its grandchild, each holding a known block, summed on every
// sample while the sampler's PSS thread reads the same tree (TSan runs this).

#include "sampler/process_tree.hpp"
#include "sampler/sampler_support.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace memsweep::testing {
namespace {

using std::chrono::milliseconds;
constexpr std::int64_t kMiB = 1 << 20;

// Touches `mib` MiB, says so on `ready`, and waits to be killed.
[[noreturn]] void hold(int mib, int ready) {
  char* block = static_cast<char*>(std::malloc(static_cast<std::size_t>(mib) * kMiB));
  if (block != nullptr) std::memset(block, 1, static_cast<std::size_t>(mib) * kMiB);
  const char byte = 1;
  [[maybe_unused]] const ssize_t sent = ::write(ready, &byte, 1);
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
    char bytes[2];
    std::size_t got = 0;
    while (got < 2) {
      const ssize_t n = ::read(ready[0], bytes + got, 2 - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    ::close(ready[0]);
    ::close(ready[1]);
  }
  ~SmallTree() {
    ::kill(-child_, SIGKILL);
    ::waitpid(child_, nullptr, 0);
  }
  int root() const { return child_; }

 private:
  pid_t child_ = -1;
};

TEST(ProcessTreeProbe, SumsEveryProcessWhileThePssThreadReadsTheTree) {
  const SmallTree tree;
  SamplerOptions options;
  options.interval = milliseconds(5);
  options.pss_interval = milliseconds(3);
  Sampler sampler(options, make_proc_memory_probe(), nullptr);
  sampler.set_target(tree.root(), make_process_tree_probe(tree.root()));
  sampler.begin_region(RegionBaseline{0, false});
  std::this_thread::sleep_for(milliseconds(300));
  const RegionSummary region = sampler.end_region();
  const SamplerStats stats = sampler.stats();

  EXPECT_GE(region.samples, 20U);
  EXPECT_GE(region.max_sampled_rss_bytes, 100 * kMiB) << "40 MiB and 60 MiB held at once";
  EXPECT_LT(region.max_sampled_rss_bytes, 120 * kMiB);
  // PSS reads are spaced by their cost (smaps_rollup walks the page tables).
  EXPECT_GE(stats.pss_reads, 2U);
  EXPECT_EQ(stats.pss_read_failures, 0U);
  // PSS splits what the two share (the parent's pages before the fork); it
  // never counts more than the RSS.
  EXPECT_GE(region.pss_peak_bytes, 95 * kMiB);
  EXPECT_LE(region.pss_peak_bytes, region.max_sampled_rss_bytes);

  // The same tree, read directly: its two members and their peaks.
  const auto probe = make_process_tree_probe(tree.root());
  ProcessMemory memory;
  ASSERT_TRUE(probe->read_process(memory));
  EXPECT_EQ(probe->members().size(), 2U);
  std::int64_t largest = 0;
  ASSERT_TRUE(probe->read_peak_rss(largest));
  EXPECT_GE(largest, 60 * kMiB);
  EXPECT_LT(largest, 80 * kMiB);
  const ProcessTreeStats totals = probe->stats();
  EXPECT_EQ(totals.processes_seen, 2);
  EXPECT_GE(totals.peak_sum, 100 * kMiB);
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

}  // namespace
}  // namespace memsweep::testing
