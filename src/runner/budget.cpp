#include "runner/budget.hpp"

#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep::runner::detail {

std::optional<std::uint64_t> effective_budget(std::optional<std::uint64_t> rank_budget,
                                              std::optional<std::uint64_t> trial_budget) {
  if (rank_budget && trial_budget) return std::min(*rank_budget, *trial_budget);
  return rank_budget ? rank_budget : trial_budget;
}

std::optional<std::string> over_budget_before_start(std::uint64_t predicted_bytes, std::uint64_t baseline_bytes,
                                                    std::uint64_t budget_bytes) {
  // Written as a subtraction so that a huge prediction cannot wrap around.
  if (baseline_bytes <= budget_bytes && predicted_bytes <= budget_bytes - baseline_bytes) return std::nullopt;
  return fmt::format("not run: predicted {} + baseline {} exceeds the budget {}", format_byte_size(predicted_bytes),
                     format_byte_size(baseline_bytes), format_byte_size(budget_bytes));
}

std::string over_budget_while_running(std::int64_t rss_bytes, std::uint64_t budget_bytes, std::string_view when) {
  return fmt::format("stopped: RSS {} passed the budget {} {}",
                     format_byte_size(static_cast<std::uint64_t>(std::max<std::int64_t>(rss_bytes, 0))),
                     format_byte_size(budget_bytes), when);
}

}  // namespace memsweep::runner::detail
