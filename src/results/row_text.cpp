#include "results/row_text.hpp"

#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <vector>

namespace memsweep::results {

std::string mib(double bytes) { return mib_text(bytes); }
std::string mib(std::int64_t bytes) { return mib_text(static_cast<double>(bytes)); }

std::string learning_rate_text(const TrialRow& row) {
  return std::isnan(row.learning_rate) ? std::string() : fmt::format("{:.6g}", row.learning_rate);
}
std::string count_text(std::int32_t count) { return count > 0 ? std::to_string(count) : std::string(); }

std::string hidden_text(const TrialRow& row) {
  if (row.depth == kBlankDepth) return {};
  std::vector<int> widths;
  for (int layer = 0; layer < row.depth && layer < kMaxHiddenLayers; ++layer) widths.push_back(row.hidden[layer]);
  return widths.empty() ? "-" : fmt::format("{}", fmt::join(widths, "-"));
}

std::string channels_text(const TrialRow& row) {
  if (get_fixed(row.model).empty()) return {};
  if (get_fixed(row.model) != model_name(ModelKind::cnn)) return "-";
  std::vector<int> channels;
  for (const std::int32_t count : row.channels)
    if (count > 0) channels.push_back(count);
  return channels.empty() ? "-" : fmt::format("{}", fmt::join(channels, "-"));
}

std::string trainer_of(const TrialRow& row) {
  const std::string trainer = get_fixed(row.trainer);
  return trainer.empty() ? std::string(kBuiltinTrainer) : trainer;
}

std::string memory_plan_text(const TrialRow& row) {
  const std::string plan = get_fixed(row.memory_plan);
  return row.recompute_every > 0 ? fmt::format("{}:{}", plan, row.recompute_every) : plan;
}

std::string params_of(const TrialRow& row) {
  const std::string params = get_fixed(row.params);
  return params == "{}" ? std::string() : params;
}

}  // namespace memsweep::results
