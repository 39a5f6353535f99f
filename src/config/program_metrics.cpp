#include "config/program_metrics.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

namespace memsweep::config::detail {
namespace {

constexpr std::string_view kMetricsHelp =
    "expected a table of metric names and regular expressions with one capture group each, e.g. metrics = "
    "{ valid_ppl = 'valid ppl +([0-9.]+)' }";

bool is_metric_name(std::string_view text) {
  const auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !text.empty() && text.size() <= kMaxMetricName && letter(text.front()) &&
         std::all_of(text.begin(), text.end(), [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

}  // namespace

std::string metric_pattern_problem(const std::string& pattern) {
  if (pattern.empty()) return "an empty pattern matches every line";
  try {
    const std::regex compiled(pattern, std::regex::ECMAScript);
    // The group's text is the value: with none there is no value, with
    // more it would be a guess which one is meant (use (?:...) for the others).
    if (compiled.mark_count() != 1)
      return fmt::format(
          "it has {} capture groups; expected exactly one, around the number (group the rest with (?:...))",
          compiled.mark_count());
  } catch (const std::regex_error& error) {
    return fmt::format("not a regular expression (ECMAScript syntax): {}", error.what());
  }
  return {};
}

std::vector<ProgramMetric> read_program_metrics(const TomlValue& value, const Place& place) {
  if (!value.is_table()) fail(place, fmt::format("{}, found {}", kMetricsHelp, describe(value)));
  std::vector<ProgramMetric> metrics;
  for (const auto& [name, pattern] : value.as_table()) {
    Place at = place_of(pattern, place.key + "." + name);
    if (at.file.empty()) at.file = place.file;
    if (!is_metric_name(name))
      fail(at, fmt::format("expected a metric name of 1 to {} letters, digits and _, not starting with a digit (a "
                           "column's name in summary and export), found \"{}\"",
                           kMaxMetricName, name));
    if (!pattern.is_string())
      fail(at, fmt::format("expected a regular expression as a string (single quotes keep backslashes as they are: "
                           "'loss +([0-9.]+)'), found {}",
                           describe(pattern)));
    const std::string& text = pattern.as_string().str;
    if (const std::string problem = metric_pattern_problem(text); !problem.empty())
      fail(at, fmt::format("in '{}': {}", text, problem));
    metrics.push_back(ProgramMetric{name, text, place_text(at)});
  }
  if (metrics.empty()) fail(place, fmt::format("{}, found an empty table", kMetricsHelp));
  return metrics;  // a std::map's order: sorted by name
}

}  // namespace memsweep::config::detail
