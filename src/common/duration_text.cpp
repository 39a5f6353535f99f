#include "common/duration_text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>

namespace memsweep {

std::string format_duration(double seconds) {
  if (!(seconds >= 0.0) || !std::isfinite(seconds)) return "-";
  // llround of 2^63 s or more has no long long to give (it wrapped to a
  // negative count); a duration past 10^12 s is only its size.
  if (seconds >= 1e12) return fmt::format("{:.3g}s", seconds);
  const long long total = std::llround(seconds);
  const long long hours = total / 3600;
  const long long minutes = total / 60 % 60;
  if (hours > 0) return fmt::format("{}h{:02}m", hours, minutes);
  if (minutes > 0) return fmt::format("{}m{:02}s", minutes, total % 60);
  return fmt::format("{}s", total);
}

namespace {

// A number at the start of `text`, and where it ends. One too large for a
// double reads as infinity (a well-formed duration, too long); one too
// small, as 0 (not positive).
std::optional<std::pair<double, const char*>> leading_number(std::string_view text) {
  double value = 0.0;
  const char* const last = text.data() + text.size();
  const auto [end, error] = std::from_chars(text.data(), last, value);
  if (error == std::errc::result_out_of_range)
    value = std::strtod(std::string(text.data(), end).c_str(), nullptr);
  else if (error != std::errc())
    return std::nullopt;
  return std::pair{value, end};
}

// The seconds `text` says, with no upper bound (possibly infinite), or
// nullopt when it is not a positive duration.
std::optional<double> unbounded_duration(std::string_view text) {
  // Units from longest name to shortest, so "ms" is not read as "m".
  constexpr std::pair<std::string_view, double> kDurationUnits[] = {
      {"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
  if (text.empty()) return std::nullopt;
  double total = 0.0;
  double last_unit = INFINITY;  // each unit smaller than the one before
  bool bare_number = true;
  while (!text.empty()) {
    const auto number = leading_number(text);
    // "inf" and "nan" as written are not durations; 1e400 is, too long.
    if (!number || std::isnan(number->first) || number->first < 0.0 ||
        (std::isinf(number->first) && std::isalpha(static_cast<unsigned char>(text.front()))))
      return std::nullopt;
    const auto [value, end] = *number;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    if (text.empty()) {
      if (!bare_number) return std::nullopt;  // "1h30": the 30 of what?
      total = value;
      break;
    }
    bare_number = false;
    const auto unit = std::find_if(std::begin(kDurationUnits), std::end(kDurationUnits),
                                   [&](const auto& u) { return text.starts_with(u.first); });
    if (unit == std::end(kDurationUnits) || !(unit->second < last_unit)) return std::nullopt;
    total += value * unit->second;
    last_unit = unit->second;
    text.remove_prefix(unit->first.size());
  }
  if (!(total > 0.0)) return std::nullopt;
  return total;
}

}  // namespace

std::optional<double> parse_duration(std::string_view text) {
  const std::optional<double> seconds = unbounded_duration(text);
  if (!seconds || *seconds > kMaxDurationSeconds) return std::nullopt;
  return seconds;
}

bool is_too_long_duration(std::string_view text) {
  const std::optional<double> seconds = unbounded_duration(text);
  return seconds && *seconds > kMaxDurationSeconds;
}

std::chrono::milliseconds limit_milliseconds(double seconds) {
  if (!(seconds > 0.0)) return std::chrono::milliseconds(1);
  const double milliseconds = std::ceil(std::min(seconds, kMaxDurationSeconds) * 1000.0);
  return std::chrono::milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(milliseconds)));
}

}  // namespace memsweep
