#pragma once
// A trial row's fields as the summary's tables show them, shared by the
// dataset tables (src/summary/summary_text.cpp) and the search's capacity
// table (src/search/capacity_table.cpp).

#include "memsweep/results.hpp"

#include <cstdint>
#include <string>

namespace memsweep::results {

// One decimal MiB (the paper's "MB" is psutil's bytes / 2^20; the per-process
// columns use the same unit); "-" for a figure not measured.
std::string mib(double bytes);
std::string mib(std::int64_t bytes);
// A program's built-in fields that its file neither sets nor names are
// blank in the row (kBlankDepth): empty cells, not the built-in defaults.
std::string learning_rate_text(const TrialRow& row);
std::string count_text(std::int32_t count);
// "64-32": the hidden widths; "-" for none.
std::string hidden_text(const TrialRow& row);
// A CNN's convolution channels, "16-32"; "-" for other models.
std::string channels_text(const TrialRow& row);
// Files before program trials have no trainer: memsweep's own trained them.
std::string trainer_of(const TrialRow& row);
// "reuse", "recompute", "recompute:4" (4 layers per segment); "" for a
// program trial that does not show the field.
std::string memory_plan_text(const TrialRow& row);
// The row's params, "" for none.
std::string params_of(const TrialRow& row);

}  // namespace memsweep::results
