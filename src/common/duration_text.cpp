#include "common/duration_text.hpp"

#include <fmt/format.h>

#include <cmath>

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

}  // namespace memsweep
