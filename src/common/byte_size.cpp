#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
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

// What `text` says: a size of at least one byte, perhaps too large; or
// nullopt when it is not a size.
struct Reading {
  std::uint64_t bytes = 0;  // when not too large
  bool too_large = false;
};

std::optional<Reading> read_byte_size(std::string_view text) {
  const std::string s = lowercase_trimmed(text);
  double number = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  // Too large for a double ("1e400"): a size, too large; too small: none.
  if (ec == std::errc::result_out_of_range && end != s.data())
    number = std::strtod(std::string(s.data(), end).c_str(), nullptr);
  else if (ec != std::errc{} || end == s.data())
    return std::nullopt;
  // "inf" and "nan" as written are not sizes.
  if (std::isnan(number) || (std::isinf(number) && std::isalpha(static_cast<unsigned char>(s.front()))))
    return std::nullopt;
  const std::string_view unit(end, static_cast<std::size_t>(s.data() + s.size() - end));
  const auto named = std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& u) { return u.first == unit; });
  if (named == kUnits.end()) return std::nullopt;

  // Whole numbers exactly: as a double, 2^60 + 1 bytes rounds to 2^60.
  std::uint64_t whole = 0;
  if (const auto [digits_end, error] = std::from_chars(s.data(), end, whole); digits_end == end) {
    std::uint64_t bytes = 0;
    if (error == std::errc::result_out_of_range ||
        __builtin_mul_overflow(whole, static_cast<std::uint64_t>(named->second), &bytes) || bytes > kMaxByteSize)
      return Reading{0, true};
    if (bytes == 0) return std::nullopt;
    return Reading{bytes, false};
  }
  const double bytes = std::round(number * named->second);
  if (!(bytes >= 1.0)) return std::nullopt;
  if (bytes > static_cast<double>(kMaxByteSize)) return Reading{0, true};
  return Reading{static_cast<std::uint64_t>(bytes), false};
}

}  // namespace

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  const std::optional<Reading> reading = read_byte_size(text);
  if (!reading || reading->too_large) return std::nullopt;
  return reading->bytes;
}

bool is_too_large_byte_size(std::string_view text) {
  const std::optional<Reading> reading = read_byte_size(text);
  return reading && reading->too_large;
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

std::string mib_text(double bytes) { return bytes < 0 ? "-" : fmt::format("{:.1f}", bytes / (1024.0 * 1024.0)); }

std::string format_byte_size(std::uint64_t bytes) {
  const ScaledBytes scaled = scale_byte_size(bytes);
  return scaled.unit == "B" ? fmt::format("{} B", bytes) : fmt::format("{:.2f} {}", scaled.value, scaled.unit);
}

}  // namespace memsweep
