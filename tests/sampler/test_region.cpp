// Before and after a measured region, with a scripted probe.

#include "sampler/region.hpp"
#include "sampler/sampler_support.hpp"

#include <gtest/gtest.h>

namespace memsweep::testing {
namespace {

TEST(PrepareRegion, TrimsThenResetsThePeakThenTakesTheBaseline) {
  FakeProbe probe;
  probe.rss = 120 * kMiB;
  probe.peak = 900 * kMiB;
  const RegionBaseline baseline = prepare_region(probe);
  EXPECT_EQ(probe.trims.load(), 1);
  EXPECT_EQ(probe.resets.load(), 1);
  EXPECT_TRUE(baseline.peak_reset);
  EXPECT_EQ(baseline.rss_bytes, 120 * kMiB);
  EXPECT_EQ(probe.peak.load(), 120 * kMiB);
}

sampler::detail::RegionTotals some_totals() {
  sampler::detail::RegionTotals totals;
  totals.samples = 4;
  totals.rss_count = 4;
  totals.rss_sum = 4 * 150.0 * kMiB;
  totals.rss_max = 180 * kMiB;
  totals.sys_used_count = 2;
  totals.sys_used_sum = 2 * 500.0 * kMiB;
  totals.pss_count = 2;
  totals.pss_sum = 2 * 90.0 * kMiB;
  totals.pss_max = 95 * kMiB;
  totals.counter_names = {"perf::PAGE-FAULTS"};
  totals.counter_totals = {1234};
  totals.counter_running = {0.5F};
  return totals;
}

TEST(SummarizeRegion, ComputesTheTrialFigures) {
  FakeProbe probe;
  probe.peak = 200 * kMiB;
  const RegionBaseline baseline{100 * kMiB, true};
  const RegionSummary summary = sampler::detail::summarize_region(baseline, probe, some_totals());
  EXPECT_EQ(summary.baseline_rss_bytes, 100 * kMiB);
  EXPECT_EQ(summary.peak_rss_bytes, 200 * kMiB);
  EXPECT_TRUE(summary.peak_since_baseline);
  EXPECT_EQ(summary.footprint_bytes, 100 * kMiB);
  EXPECT_DOUBLE_EQ(summary.mean_rss_bytes, 150.0 * kMiB);
  EXPECT_DOUBLE_EQ(summary.sys_used_mean_bytes, 500.0 * kMiB);
  EXPECT_DOUBLE_EQ(summary.pss_mean_bytes, 90.0 * kMiB);
  EXPECT_EQ(summary.pss_peak_bytes, 95 * kMiB);
  EXPECT_EQ(summary.samples, 4U);
  EXPECT_EQ(summary.counter_totals, std::vector<std::int64_t>{1234});
  EXPECT_FLOAT_EQ(summary.counter_min_running, 0.5F);
}

TEST(SummarizeRegion, WithoutTheKernelPeakUsesTheLargestSampleAndSaysSo) {
  FakeProbe probe;
  probe.fail_peak = true;
  const RegionSummary summary = sampler::detail::summarize_region({100 * kMiB, true}, probe, some_totals());
  EXPECT_EQ(summary.peak_rss_bytes, 180 * kMiB);
  EXPECT_FALSE(summary.peak_since_baseline);
  EXPECT_EQ(summary.footprint_bytes, 80 * kMiB);
}

TEST(SummarizeRegion, PeakNotResetIsFlagged) {
  FakeProbe probe;
  const RegionSummary summary = sampler::detail::summarize_region({100 * kMiB, false}, probe, some_totals());
  EXPECT_FALSE(summary.peak_since_baseline);
}

TEST(SummarizeRegion, NoSamplesMeansUnknownMeans) {
  FakeProbe probe;
  const RegionSummary summary =
      sampler::detail::summarize_region({100 * kMiB, true}, probe, sampler::detail::RegionTotals{});
  EXPECT_LT(summary.mean_rss_bytes, 0);
  EXPECT_LT(summary.sys_used_mean_bytes, 0);
  EXPECT_LT(summary.pss_mean_bytes, 0);
}

}  // namespace
}  // namespace memsweep::testing
