#include "common/duration_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

namespace memsweep {

std::string format_duration(double seconds) {
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) return "-";
  const long long total = std::llround(seconds);
  const long long hours = total / 3600;
  const long long minutes = total / 60 % 60;
  if (hours > 0) return fmt::format("{}h{:02}m", hours, minutes);
  if (minutes > 0) return fmt::format("{}m{:02}s", minutes, total % 60);
  return fmt::format("{}s", total);
}

std::optional<double> parse_duration(std::string_view text) {
  // Units from longest name to shortest, so "ms" is not read as "m".
  constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
  if (text.empty()) return std::nullopt;
  double total = 0.0;
  double last_unit = INFINITY;  // each unit smaller than the one before
  bool bare_number = true;
  while (!text.empty()) {
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || !std::isfinite(value) || value < 0.0) return std::nullopt;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    if (text.empty()) {
      if (!bare_number) return std::nullopt;  // "1h30": the 30 of what?
      total = value;
      break;
    }
    bare_number = false;
    const auto unit =
        std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return text.starts_with(u.first); });
    if (unit == std::end(kUnits) || !(unit->second < last_unit)) return std::nullopt;
    total += value * unit->second;
    last_unit = unit->second;
    text.remove_prefix(unit->first.size());
  }
  if (!(total > 0.0) || !std::isfinite(total)) return std::nullopt;
  return total;
}

}  // namespace memsweep
