#include "trainer/optimizer.hpp"

#include <cmath>
#include <cstddef>

namespace memsweep::trainer::detail {
namespace {

// Compiled for AVX-512, AVX2 and plain x86-64, picked at load time for the
// CPU at hand: the build stays portable and a cluster's nodes still get
// their widest vectors on these memory-bound loops. Not under
// ThreadSanitizer: the loader runs the clones' resolver (an ifunc) before
// TSan's runtime is up, and the instrumented resolver then crashes any
// program that links this file (a test that only pulled it in by link order
// did, at start-up).
#if defined(__SANITIZE_THREAD__)
#define MEMSWEEP_VECTOR_CLONES
#else
#define MEMSWEEP_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

MEMSWEEP_VECTOR_CLONES void sgd(float* __restrict w, const float* __restrict g, std::ptrdiff_t n, float lr) {
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < n; ++i) w[i] -= lr * g[i];
}

// PyTorch's form: v = mu v + g; w -= lr v.
MEMSWEEP_VECTOR_CLONES void momentum(float* __restrict w, const float* __restrict g, float* __restrict v,
                                     std::ptrdiff_t n, float lr, float mu) {
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    v[i] = mu * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

MEMSWEEP_VECTOR_CLONES void adam(float* __restrict w, const float* __restrict g, float* __restrict m,
                                 float* __restrict v, std::ptrdiff_t n, float beta1, float beta2, float epsilon,
                                 float step_size, float v_correction) {
#pragma omp simd
  for (std::ptrdiff_t i = 0; i < n; ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
    w[i] -= step_size * m[i] / (std::sqrt(v[i]) * v_correction + epsilon);
  }
}

}  // namespace

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
  const float lr = learning_rate_;
  switch (spec_.kind) {
    case OptimizerKind::sgd: sgd(values.data(), gradients.data(), n, lr); break;
    case OptimizerKind::momentum:
      momentum(values.data(), gradients.data(), first_state.data(), n, lr, static_cast<float>(spec_.momentum));
      break;
    case OptimizerKind::adam: {
      const auto step_size =
          static_cast<float>(learning_rate_ / (1.0 - std::pow(spec_.beta1, static_cast<double>(steps_))));
      const auto v_correction =
          static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(spec_.beta2, static_cast<double>(steps_))));
      adam(values.data(), gradients.data(), first_state.data(), second_state.data(), n, static_cast<float>(spec_.beta1),
           static_cast<float>(spec_.beta2), static_cast<float>(spec_.epsilon), step_size, v_correction);
      break;
    }
  }
}

}  // namespace memsweep::trainer::detail
