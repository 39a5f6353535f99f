#pragma once
// A sweep file's [search] table: every configuration the rest of the file
// defines becomes one search per memory limit along one integer axis, for
// the largest value that trains within the limit (docs/search.md).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// model: fit peak = a + b·x and probe where it meets the limit; bisect:
// geometric midpoints of the range; doubling ("double" in the file): from
// the low end, doubling until a probe does not fit, then bisecting.
enum class SearchStrategy { model, bisect, doubling };

std::string_view strategy_name(SearchStrategy strategy);  // "model", "bisect", "double"
std::optional<SearchStrategy> parse_strategy(std::string_view name);
inline constexpr std::string_view kStrategyNames = "model, bisect, double";

// Configurations × limits a sweep may search: rank 0 keeps each search's
// probes, and makes each configuration's estimate, when the sweep starts.
inline constexpr std::size_t kMaxSearches = 10'000;

// The axes a search may move along: integer fields of a trial.
namespace search_axis {
inline constexpr std::string_view kBatchSize = "batch_size";
inline constexpr std::string_view kEpochs = "epochs";
inline constexpr std::string_view kWidth = "width";           // every hidden layer's width
inline constexpr std::string_view kParamsPrefix = "params.";  // params.NAME: a program's own integer
}  // namespace search_axis

// Which memory a search's limits are of: the host's (the trial's memory
// cgroup, the default) or its GPU's ("gpu": docs/search.md, "GPU limits").
enum class SearchDevice { host, gpu };
std::string_view search_device_name(SearchDevice device);  // "host", "gpu"

struct SearchSpec {
  std::string axis;
  std::int64_t low = 1;   // the range's ends, both considered
  std::int64_t high = 1;  // low <= high
  // Bytes of memory per trial; one search per limit, in the file's order.
  // A GPU search's limit 0 is "device": its whole device
  // (TrialSpec::kWholeDevice), which the trials' rows tell the size of.
  std::vector<std::uint64_t> limits;
  SearchDevice device = SearchDevice::host;
  double resolution = 0.02;  // done when does-not-fit − fits <= max(1, resolution × fits)
  int max_trials = 12;       // per configuration and limit, verifications included
  int probe_epochs = 1;      // a probe trains min(this, the configuration's epochs)
  bool verify = true;        // the answer trained in full (its own epochs) before it is one
  SearchStrategy strategy = SearchStrategy::model;
  std::string place;  // "sweep.toml:12: [search]", for messages
  int line = 0;       // of [search] in the file
};

}  // namespace memsweep
