#pragma once
// What training needs of a trial: the network, the optimizer and the
// schedule. config.hpp's training_spec() makes one from a sweep's trial, so
// that the trainer needs nothing of the sweep file.

#include "memsweep/memory_plan.hpp"
#include "memsweep/model_spec.hpp"
#include "memsweep/optimizer_spec.hpp"

#include <cstdint>

namespace memsweep {

struct TrainingSpec {
  ModelSpec model;  // its input shape and classes are what the data must have
  OptimizerSpec optimizer;
  double learning_rate = 0.01;
  int batch_size = 1;
  int epochs = 1;
  std::uint64_t seed = 0;  // the initial weights and every epoch's batch order
  MemoryPlan memory_plan = MemoryPlan::keep;
  int recompute_every = kRecomputeEveryDefault;  // layers per segment, for `recompute`
};

}  // namespace memsweep
