#pragma once
// `memsweep estimate --calibrate`: measures what a fresh trial process takes
// beyond its buffers on this machine (trial_process_cost.hpp), by running
// calibration_trials() through a trial runner, each `repeats` times.

#include "memsweep/sweep.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace memsweep {

// One calibration trial, measured.
struct CalibrationTrial {
  TrialSpec trial;
  TrialProcessShape shape;
  std::uint64_t estimate_bytes = 0;      // its buffers (estimate_trial)
  std::vector<std::int64_t> footprints;  // peak - baseline of each run
  double median_footprint_bytes = 0.0;
};

struct Calibration {
  TrialProcessCost cost;
  std::vector<CalibrationTrial> trials;
};

// Runs each calibration trial `repeats` times (repeats >= 1) with `runner`
// and fits the cost to each trial's median footprint less its estimate.
// `threads`, `cpu` and `host` describe the machine in the cost's record.
// Throws std::runtime_error naming the trial when one does not end ok.
Calibration calibrate_trial_process(TrialRunner& runner, int repeats, int threads, const std::string& cpu,
                                    const std::string& host);

}  // namespace memsweep
