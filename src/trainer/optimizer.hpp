#pragma once
// SGD, SGD with momentum and Adam as loops over the flat parameter buffers.

#include "memsweep/optimizer_spec.hpp"

#include <cstdint>
#include <span>

namespace memsweep::trainer::detail {

class Optimizer {
 public:
  Optimizer(const OptimizerSpec& spec, double learning_rate);

  // Buffers of optimizer state the size of the parameters: 0, 1 or 2.
  int state_copies() const;

  // Starts a training step (Adam's bias correction counts steps); then
  // update() is called for every part of the parameters once.
  void begin_step() { ++steps_; }
  // Updates one part of the parameters: the spans are the same range of the
  // values, gradients and state buffers (unused states may be empty).
  void update(std::span<float> values, std::span<const float> gradients, std::span<float> first_state,
              std::span<float> second_state);

 private:
  OptimizerSpec spec_;
  float learning_rate_;
  std::int64_t steps_ = 0;  // Adam's bias correction
};

}  // namespace memsweep::trainer::detail
