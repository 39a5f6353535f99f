#include "memsweep/summary_metrics.hpp"

#include "common/text_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace memsweep {
namespace {

// The params JSON of a long program definition is cut here: the section is
// one line per attempt (export has them whole).
constexpr std::size_t kParamsShown = 48;

std::string cut(std::string text, std::size_t bytes) {
  if (text.size() <= bytes) return text;
  std::size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // a UTF-8 boundary
  text.resize(end);
  return text + "...";
}

std::string value_text(double value) { return fmt::format("{:.6g}", value); }

}  // namespace

std::vector<FinalMetrics> final_metrics(const std::vector<MetricRow>& rows) {
  // In file order; a later row of the same metric replaces the earlier one.
  using Key = std::pair<std::string, std::int32_t>;
  std::map<Key, std::map<std::string, double>> last;
  std::map<Key, std::int32_t> epochs;
  std::vector<Key> order;
  for (const MetricRow& row : rows) {
    const Key key{get_fixed(row.trial_id), row.attempt};
    if (last.find(key) == last.end()) order.push_back(key);
    last[key][get_fixed(row.name)] = row.value;
    epochs[key] = std::max(epochs[key], row.epoch);
  }
  std::vector<FinalMetrics> finals;
  for (const Key& key : order) {
    FinalMetrics final{key.first, key.second, epochs[key], {}, {}};
    for (const auto& [name, value] : last[key]) {
      final.names.push_back(name);
      final.values.push_back(value);
    }
    finals.push_back(std::move(final));
  }
  return finals;
}

std::string metrics_section(const std::vector<MetricsInput>& files) {
  const bool several = files.size() > 1;
  std::set<std::string> names;
  std::vector<std::tuple<const MetricsInput*, FinalMetrics>> shown;
  for (const MetricsInput& file : files)
    for (FinalMetrics& final : final_metrics(file.metrics)) {
      names.insert(final.names.begin(), final.names.end());
      shown.emplace_back(&file, std::move(final));
    }
  if (shown.empty()) return {};
  TableRow header;
  if (several) header.emplace_back("file");
  for (const char* column : {"trial", "attempt", "trainer", "status", "params", "epoch"}) header.emplace_back(column);
  header.insert(header.end(), names.begin(), names.end());
  std::vector<TableRow> table{header};
  for (const auto& [file, final] : shown) {
    const auto trial = std::find_if(file->trials.begin(), file->trials.end(), [&](const TrialRow& row) {
      return get_fixed(row.trial_id) == final.trial_id && row.attempt == final.attempt;
    });
    const bool known = trial != file->trials.end();
    TableRow row;
    if (several) row.push_back(file->path);
    row.push_back(final.trial_id);
    row.push_back(std::to_string(final.attempt));
    // A row without its trial: the attempt was still running (a live file) or was lost.
    row.push_back(known ? get_fixed(trial->trainer) : "-");
    row.push_back(known ? get_fixed(trial->status) : "running or lost");
    row.push_back(known ? cut(get_fixed(trial->params), kParamsShown) : "-");
    row.push_back(final.last_epoch > 0 ? std::to_string(final.last_epoch) : "-");
    for (const std::string& name : names) {
      const auto at = std::find(final.names.begin(), final.names.end(), name);
      row.push_back(
          at == final.names.end() ? "-" : value_text(final.values[static_cast<std::size_t>(at - final.names.begin())]));
    }
    table.push_back(std::move(row));
  }
  return fmt::format(
      "\nProgram metrics: the last value each program printed (per epoch: memsweep export --table metrics)\n{}",
      render_table(table));
}

}  // namespace memsweep
