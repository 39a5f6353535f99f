#pragma once
// The memory budget of a trial (--mem-budget and the trial's own), as pure
// decisions: which budget applies, whether a trial may start, and what the
// row says when a budget ends it. The runner does the reading.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::runner::detail {

// The smaller of the two; nullopt when neither is set.
std::optional<std::uint64_t> effective_budget(std::optional<std::uint64_t> rank_budget,
                                              std::optional<std::uint64_t> trial_budget);

// The message of a trial that must not start because its prediction on top
// of the baseline would pass the budget; nullopt when it fits.
std::optional<std::string> over_budget_before_start(std::uint64_t predicted_bytes, std::uint64_t baseline_bytes,
                                                    std::uint64_t budget_bytes);

// True when the process's RSS has passed the budget.
inline bool passes_budget(std::int64_t rss_bytes, std::uint64_t budget_bytes) {
  return rss_bytes >= 0 && static_cast<std::uint64_t>(rss_bytes) > budget_bytes;
}

// The message of a trial stopped while running: the RSS seen, the budget,
// and when (trial_messages.hpp's when_text: "at 1.23 s in epoch 2").
std::string over_budget_while_running(std::int64_t rss_bytes, std::uint64_t budget_bytes, std::string_view when);

}  // namespace memsweep::runner::detail
