#include "sampler/region.hpp"

#include <algorithm>

namespace memsweep {

// Trim before the reset, so that the kernel's peak starts from the memory
// the region really begins with.
RegionBaseline prepare_region(MemoryProbe& probe) {
  RegionBaseline baseline;
  probe.release_free_memory();
  baseline.peak_reset = probe.reset_peak_rss();
  ProcessMemory memory;
  if (probe.read_process(memory)) baseline.rss_bytes = memory.rss_bytes;
  return baseline;
}

namespace sampler::detail {

RegionSummary summarize_region(const RegionBaseline& baseline, MemoryProbe& probe, const RegionTotals& totals) {
  RegionSummary summary{.baseline_rss_bytes = baseline.rss_bytes,
                        .max_sampled_rss_bytes = totals.rss_max,
                        .samples = totals.samples,
                        .dropped_samples = totals.dropped_samples,
                        .missed_ticks = totals.missed_ticks};
  if (totals.rss_count > 0) summary.mean_rss_bytes = totals.rss_sum / static_cast<double>(totals.rss_count);
  if (totals.sys_used_count > 0)
    summary.sys_used_mean_bytes = totals.sys_used_sum / static_cast<double>(totals.sys_used_count);
  if (totals.pss_count > 0) {
    summary.pss_mean_bytes = totals.pss_sum / static_cast<double>(totals.pss_count);
    summary.pss_peak_bytes = totals.pss_max;
  }
  // The kernel's high-water mark sees peaks between samples; the largest
  // sample stands in when it cannot be read.
  std::int64_t kernel_peak = -1;
  const bool have_kernel_peak = probe.read_peak_rss(kernel_peak);
  summary.peak_rss_bytes = std::max(have_kernel_peak ? kernel_peak : -1, totals.rss_max);
  summary.peak_since_baseline = have_kernel_peak && baseline.peak_reset;
  if (summary.peak_rss_bytes >= 0 && baseline.rss_bytes >= 0)
    summary.footprint_bytes = summary.peak_rss_bytes - baseline.rss_bytes;
  summary.counter_names = totals.counter_names;
  summary.counter_totals = totals.counter_totals;
  for (const float running : totals.counter_running)
    summary.counter_min_running = std::min(summary.counter_min_running, running);
  return summary;
}

}  // namespace sampler::detail
}  // namespace memsweep
