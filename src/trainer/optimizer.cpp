#include "trainer/optimizer.hpp"

#include <cmath>
#include <cstddef>

namespace memsweep::trainer_detail {

Optimizer::Optimizer(const OptimizerSpec& spec, double learning_rate)
    : spec_(spec), learning_rate_(static_cast<float>(learning_rate)) {}

int Optimizer::state_copies() const {
  switch (spec_.kind) {
    case OptimizerKind::sgd: return 0;
    case OptimizerKind::momentum: return 1;
    case OptimizerKind::adam: return 2;
  }
  return 0;
}

// Vectorised but not threaded: the trainer calls this once per layer, right
// after the layer's gradients are ready, and an OpenMP team per call would
// cost more than it saves on these memory-bound loops (and libgomp allocates
// when it switches between teams; a step must allocate nothing).
void Optimizer::update(std::span<float> values, std::span<const float> gradients, std::span<float> first_state,
                       std::span<float> second_state) {
  const auto n = static_cast<std::ptrdiff_t>(values.size());
  float* __restrict w = values.data();
  const float* __restrict g = gradients.data();
  const float lr = learning_rate_;
  switch (spec_.kind) {
    case OptimizerKind::sgd: {
#pragma omp simd
      for (std::ptrdiff_t i = 0; i < n; ++i) w[i] -= lr * g[i];
      break;
    }
    case OptimizerKind::momentum: {
      // PyTorch's form: v = mu v + g; w -= lr v.
      float* __restrict v = first_state.data();
      const auto mu = static_cast<float>(spec_.momentum);
#pragma omp simd
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        v[i] = mu * v[i] + g[i];
        w[i] -= lr * v[i];
      }
      break;
    }
    case OptimizerKind::adam: {
      float* __restrict m = first_state.data();
      float* __restrict v = second_state.data();
      const auto beta1 = static_cast<float>(spec_.beta1);
      const auto beta2 = static_cast<float>(spec_.beta2);
      const auto epsilon = static_cast<float>(spec_.epsilon);
      const auto step_size =
          static_cast<float>(learning_rate_ / (1.0 - std::pow(spec_.beta1, static_cast<double>(steps_))));
      const auto v_correction =
          static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(spec_.beta2, static_cast<double>(steps_))));
#pragma omp simd
      for (std::ptrdiff_t i = 0; i < n; ++i) {
        m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
        v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
        w[i] -= step_size * m[i] / (std::sqrt(v[i]) * v_correction + epsilon);
      }
      break;
    }
  }
}

}  // namespace memsweep::trainer_detail
