#pragma once
// Durations as the progress lines and `memsweep watch` write them.

#include <optional>
#include <string>
#include <string_view>

namespace memsweep {

// Whole seconds (rounded): "45s", "3m20s", "1h05m"; "-" for a negative
// (unknown) or non-finite duration.
std::string format_duration(double seconds);

// A duration as a person writes a limit: a number of seconds ("90", "2.5"),
// or numbers with units, largest first: "500ms", "90s", "30m", "1h30m",
// "1.5h", "2d". nullopt when it is not one, or not positive.
std::optional<double> parse_duration(std::string_view text);
inline constexpr std::string_view kDurationHelp =
    "a duration: seconds (90), or with units ms, s, m, h, d (\"90s\", \"30m\", \"1h30m\")";

}  // namespace memsweep
