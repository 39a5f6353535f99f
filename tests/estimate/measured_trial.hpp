#pragma once
// Trains a trial in this process inside a sampler region, as a sweep's
// worker does, and sets its measured footprint beside the full estimate.

#include "memsweep/config.hpp"
#include "memsweep/dataset.hpp"
#include "memsweep/sampler.hpp"

#include <cstdint>

namespace memsweep::testing {

struct MeasuredTrial {
  std::uint64_t predicted_bytes = 0;  // the full estimate's total
  RegionSummary region;               // footprint_bytes: peak - baseline
  double ratio() const;               // measured / predicted
};

// The dataset is built before the region, as a rank loads it before its trials.
MeasuredTrial measure_trial(const TrialSpec& trial, const Dataset& data, MemoryPlan plan = MemoryPlan::keep);

// A trial of `hidden` on data of `data`'s shape (synthetic, MNIST-like or not),
// SGD, one epoch.
TrialSpec mlp_trial(const Dataset& data, std::vector<int> hidden, int batch);

// The first trial in a process also pays for oneDNN's and OpenMP's one-time
// setup; a sweep's rank pays it once. Runs a tiny trial to get it out of the way.
void warm_up_trainer(const Dataset& data);

}  // namespace memsweep::testing
