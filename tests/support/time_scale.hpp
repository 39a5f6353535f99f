#pragma once
// Timed tests (trial durations, stop deadlines, makespans) multiply their
// times by MEMSWEEP_TEST_TIME_SCALE (default 1). A sanitizer build runs the
// scheduler's own work several times slower while a sleeping trial still
// sleeps as long, so at scale 1 that fixed cost eats the margins the tests
// check; ci/sanitize.sh sets a larger scale. The properties checked (who
// ran what, what was interrupted, ratios of makespans) do not change.

#include <chrono>
#include <cstdlib>
#include <iostream>

namespace memsweep::testing {

inline double time_scale() {
  static const double scale = [] {
    const char* text = std::getenv("MEMSWEEP_TEST_TIME_SCALE");
    if (text == nullptr || *text == '\0') return 1.0;
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    if (*end != '\0' || !(value >= 1.0 && value <= 100.0)) {
      std::cerr << "MEMSWEEP_TEST_TIME_SCALE=" << text << ": expected a number from 1 to 100\n";
      std::exit(2);
    }
    return value;
  }();
  return scale;
}

inline std::chrono::milliseconds scaled(std::chrono::milliseconds time) {
  return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(time.count() * time_scale()));
}

inline double scaled_seconds(double seconds) { return seconds * time_scale(); }

}  // namespace memsweep::testing
