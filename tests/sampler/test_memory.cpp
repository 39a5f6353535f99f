// Real memory, really touched: RSS and page faults follow it, trimming
// returns it, and the peak resets.

#include "sampler/sampler_support.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <memory>

namespace memsweep::testing {
namespace {

using std::chrono::milliseconds;

constexpr std::size_t kTouchBytes = 200 * kMiB;
constexpr double kTolerance = 0.10;

std::int64_t fault_count(const RegionSummary& summary, const std::string& name) {
  for (std::size_t i = 0; i < summary.counter_names.size(); ++i)
    if (summary.counter_names[i] == name) return summary.counter_totals[i];
  return -1;
}

TEST(SamplerMemory, Touching200MBRaisesRssAndPageFaults) {
  CounterSetup setup = open_counters({"perf::PAGE-FAULTS", "perf::MINOR-FAULTS"});
  ASSERT_NE(setup.source, nullptr);
  SamplerOptions options;
  options.interval = milliseconds(10);
  Sampler sampler(options, make_proc_memory_probe(), std::move(setup.source));
  sampler.begin_region();
  std::int64_t touched_rss = 0;
  {
    TouchedPages pages(kTouchBytes);
    pages.touch();
    std::this_thread::sleep_for(milliseconds(50));  // a few samples with the memory held
    auto probe = make_proc_memory_probe();
    touched_rss = current_rss(*probe);
  }
  const RegionSummary summary = sampler.end_region();
  const auto touched = static_cast<double>(kTouchBytes);
  const double pages = touched / static_cast<double>(::sysconf(_SC_PAGESIZE));

  EXPECT_NEAR(static_cast<double>(touched_rss - summary.baseline_rss_bytes), touched, kTolerance * touched);
  EXPECT_TRUE(summary.peak_since_baseline);
  EXPECT_NEAR(static_cast<double>(summary.footprint_bytes), touched, kTolerance * touched);
  EXPECT_NEAR(static_cast<double>(summary.max_sampled_rss_bytes - summary.baseline_rss_bytes), touched,
              kTolerance * touched);
  EXPECT_GE(static_cast<double>(fault_count(summary, "perf::PAGE-FAULTS")), 0.9 * pages);
  EXPECT_GE(static_cast<double>(fault_count(summary, "perf::MINOR-FAULTS")), 0.9 * pages);
  EXPECT_LE(static_cast<double>(fault_count(summary, "perf::PAGE-FAULTS")), 1.5 * pages);
  EXPECT_GT(summary.samples, 3U);
  EXPECT_GT(summary.sys_used_mean_bytes, 0);

  // The samples themselves saw it: RSS and the fault counter rise together.
  const std::vector<Sample> samples = all_samples(sampler);
  ASSERT_FALSE(samples.empty());
  std::int64_t max_rss = 0;
  std::int64_t max_faults = 0;
  for (const Sample& sample : samples) {
    max_rss = std::max(max_rss, sample.rss_bytes);
    max_faults = std::max(max_faults, sample.counters[0]);
    EXPECT_FLOAT_EQ(sample.counter_running[0], 1.0F) << "software events are never multiplexed";
  }
  EXPECT_NEAR(static_cast<double>(max_rss - summary.baseline_rss_bytes), touched, kTolerance * touched);
  EXPECT_GE(static_cast<double>(max_faults), 0.9 * pages);
}

TEST(SamplerMemory, FreeingAndTrimmingBringsRssBack) {
  auto probe = make_proc_memory_probe();
  prepare_region(*probe);
  const std::int64_t before = current_rss(*probe);
  // Small blocks come from the heap, not from mmap: free() keeps them
  // resident until malloc_trim gives them back.
  constexpr std::size_t kBlock = 32 * 1024;
  constexpr std::size_t kBlocks = kTouchBytes / kBlock;
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.emplace_back(new char[kBlock]);
    for (std::size_t at = 0; at < kBlock; at += 4096) blocks.back()[at] = 1;
  }
  const std::int64_t held = current_rss(*probe);
  EXPECT_NEAR(static_cast<double>(held - before), static_cast<double>(kTouchBytes), kTolerance * kTouchBytes);
  blocks.clear();
  blocks.shrink_to_fit();
  const RegionBaseline baseline = prepare_region(*probe);
  EXPECT_LT(baseline.rss_bytes - before, static_cast<std::int64_t>(kTolerance * kTouchBytes))
      << "RSS after trim: " << baseline.rss_bytes << ", before: " << before;
}

TEST(SamplerMemory, PeakResetForgetsAnEarlierPeak) {
  auto probe = make_proc_memory_probe();
  std::int64_t peak = 0;
  {
    TouchedPages pages(kTouchBytes);
    pages.touch();
  }
  ASSERT_TRUE(probe->read_peak_rss(peak));
  const std::int64_t rss = current_rss(*probe);
  ASSERT_GT(peak - rss, static_cast<std::int64_t>(0.9 * kTouchBytes)) << "the unmapped pages remain in the peak";
  ASSERT_TRUE(probe->reset_peak_rss());
  ASSERT_TRUE(probe->read_peak_rss(peak));
  EXPECT_LT(peak - current_rss(*probe), static_cast<std::int64_t>(kTolerance * kTouchBytes));
}

}  // namespace
}  // namespace memsweep::testing
