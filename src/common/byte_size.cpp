#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <utility>

namespace memsweep {
namespace {

constexpr std::array<std::pair<std::string_view, double>, 10> kUnits{{
    {"b", 1.0},
    {"kib", 0x1p10},
    {"mib", 0x1p20},
    {"gib", 0x1p30},
    {"tib", 0x1p40},
    {"kb", 1e3},
    {"mb", 1e6},
    {"gb", 1e9},
    {"tb", 1e12},
    {"", 1.0},
}};

std::string lowercase_trimmed(std::string_view text) {
  std::string out;
  for (const char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  const std::string s = lowercase_trimmed(text);
  double number = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc{} || end == s.data()) return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    const double bytes = std::round(number * factor);
    if (!(bytes >= 1.0) || bytes > 0x1p63) return std::nullopt;
    return static_cast<std::uint64_t>(bytes);
  }
  return std::nullopt;
}

ScaledBytes scale_byte_size(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kNames.size()) {
    value /= 1024.0;
    ++unit;
  }
  return {value, kNames[unit]};
}

std::string format_byte_size(std::uint64_t bytes) {
  const ScaledBytes scaled = scale_byte_size(bytes);
  return scaled.unit == "B" ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", scaled.value, scaled.unit);
}

}  // namespace memsweep
