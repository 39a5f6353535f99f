#pragma once
// Softmax cross-entropy on the softmax primitive's output.

#include <cstddef>
#include <cstdint>

namespace memsweep::trainer::detail {

// Mean over the rows of −log p[label]; when `logits_gradient` is given, also
// writes the loss's gradient with respect to the logits, (p − onehot) / rows.
// A probability of 0 is clamped to the smallest normal float, so the loss is
// finite unless the network produced NaN or infinity: then it is NaN.
double softmax_cross_entropy(const float* probabilities, const std::int32_t* labels, std::size_t rows, int classes,
                             float* logits_gradient);

// Rows whose largest probability is at their label.
std::size_t count_correct(const float* probabilities, const std::int32_t* labels, std::size_t rows, int classes);

}  // namespace memsweep::trainer::detail
