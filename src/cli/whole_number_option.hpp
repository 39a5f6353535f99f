#pragma once
// A whole-number option checked as written. CLI11 converts an unsigned
// option with strtoull, which caps a number past 64 bits at 2^64-1 and
// reads "-1" as 2^64-1, without a word: `--max-train-examples
// 18446744073709551616` (or -1) ran as if no limit had been given (issue
// 28). The validator reads the text itself, before CLI11 converts it.

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>

namespace memsweep {

// Decimal, from `min` to `max`; the message quotes the value as given.
inline CLI::Validator whole_number_from(std::int64_t min, std::int64_t max) {
  const std::string expected = fmt::format("expected a whole number from {} to {}", min, max);
  return CLI::Validator(
      [min, max, expected](std::string& text) -> std::string {
        std::int64_t number = 0;
        const char* const last = text.data() + text.size();
        const auto [end, error] = std::from_chars(text.data(), last, number);
        if (end != last || end == text.data() || (error != std::errc() && error != std::errc::result_out_of_range))
          return fmt::format("{}, got \"{}\"", expected, text);
        if (error == std::errc::result_out_of_range || number < min || number > max)
          return fmt::format("{} is out of range; {}", text, expected);
        return std::string();
      },
      fmt::format("INT in [{} - {}]", min, max));
}

}  // namespace memsweep
