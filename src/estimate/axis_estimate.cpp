// The estimate as a line along a search's axis: what the model strategy
// uses for its slope before two probes have fit (docs/search.md).

#include "memsweep/estimate.hpp"

#include <algorithm>

namespace memsweep {

std::optional<AxisEstimate> estimate_along_axis(const TrialSpec& configuration, const SearchSpec& search,
                                                ExampleCounts counts) {
  if (configuration.program) return std::nullopt;
  // Far enough apart that the slope is not the last partial batch's noise;
  // near the low end, where the model strategy starts.
  const std::int64_t low = search.low;
  const std::int64_t high = std::min(search.high, std::max(low + 1, low * 8));
  if (high <= low) return std::nullopt;
  const auto footprint = [&](std::int64_t value) -> std::optional<double> {
    const TrialSpec trial =
        search_trial(configuration, search, SearchPoint{.value = value, .limit_bytes = 1, .full = true});
    const MemoryEstimate estimate = estimate_trial(trial, counts);
    if (estimate.at_least) return std::nullopt;
    return static_cast<double>(estimate.total());
  };
  const std::optional<double> at_low = footprint(low);
  const std::optional<double> at_high = footprint(high);
  if (!at_low || !at_high) return std::nullopt;
  const double slope = (*at_high - *at_low) / static_cast<double>(high - low);
  return AxisEstimate{.intercept = *at_low - slope * static_cast<double>(low), .slope = slope};
}

}  // namespace memsweep
