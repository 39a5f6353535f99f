#pragma once
// Before and after a measured region: what the sampler accumulated on its
// ticks, turned into the region's summary (docs/sampler.md, "Measured regions (trials)").

#include "memsweep/sampler.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::sampler::detail {

// Accumulated by the sampling threads over every sample, dropped or not.
struct RegionTotals {
  std::uint64_t samples = 0;
  std::uint64_t rss_count = 0;
  double rss_sum = 0;
  std::int64_t rss_max = -1;
  std::uint64_t sys_used_count = 0;
  double sys_used_sum = 0;
  std::uint64_t pss_count = 0;
  double pss_sum = 0;
  std::int64_t pss_max = -1;
  std::uint64_t dropped_samples = 0;
  std::uint64_t missed_ticks = 0;
  std::vector<std::string> counter_names;
  std::vector<std::int64_t> counter_totals;
  std::vector<float> counter_running;
};

RegionSummary summarize_region(const RegionBaseline& baseline, MemoryProbe& probe, const RegionTotals& totals);

}  // namespace memsweep::sampler::detail
