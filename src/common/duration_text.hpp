#pragma once
// Durations as the progress lines and `memsweep watch` write them.

#include <string>

namespace memsweep {

// Whole seconds (rounded): "45s", "3m20s", "1h05m"; "-" for a negative
// (unknown) or non-finite duration.
std::string format_duration(double seconds);

}  // namespace memsweep
