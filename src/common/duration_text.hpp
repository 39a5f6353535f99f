#pragma once
// Durations as the progress lines and `memsweep watch` write them, and as
// users write time limits.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep {

// Whole seconds (rounded): "45s", "3m20s", "1h05m"; "-" for a negative
// (unknown) or non-finite duration.
std::string format_duration(double seconds);

// The longest time limit memsweep takes: 3650 days, about ten years. Longer
// than any trial, and far inside what a steady clock's int64 nanoseconds
// hold from now (about 292 years): a limit near that wrapped round to a
// negative deadline and stopped every trial at once. Who means "no limit"
// says none, or leaves the limit out.
inline constexpr double kMaxDurationSeconds = 3650.0 * 86400.0;
inline constexpr std::string_view kMaxDurationText = "3650d (about 10 years)";

// A duration as a person writes a limit: a number of seconds ("90", "2.5"),
// or numbers with units, largest first: "500ms", "90s", "30m", "1h30m",
// "1.5h", "2d". nullopt when it is not one, not positive, or longer than
// kMaxDurationSeconds.
std::optional<double> parse_duration(std::string_view text);
inline constexpr std::string_view kDurationHelp =
    "a duration: seconds (90), or with units ms, s, m, h, d (\"90s\", \"30m\", \"1h30m\")";

// Whether `text` is written as a duration but longer than
// kMaxDurationSeconds (so the message can say that, not "not a duration").
bool is_too_long_duration(std::string_view text);

// A limit of `seconds` as the runner counts it: whole milliseconds rounded
// up (a positive limit never becomes 0, which would stop a trial at once),
// at most kMaxDurationSeconds, and 1 ms for NaN or anything below. Safe for
// any double, such as a limit read back from a damaged results file.
std::chrono::milliseconds limit_milliseconds(double seconds);

}  // namespace memsweep
