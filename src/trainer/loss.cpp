#include "trainer/loss.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace memsweep::trainer::detail {
namespace {

void check_label(std::int32_t label, std::size_t row, int classes) {
  if (label < 0 || label >= classes)
    throw std::invalid_argument("label " + std::to_string(label) + " of row " + std::to_string(row) +
                                " is outside 0.." + std::to_string(classes - 1));
}

}  // namespace

double softmax_cross_entropy(const float* probabilities, const std::int32_t* labels, std::size_t rows, int classes,
                             float* logits_gradient) {
  const auto width = static_cast<std::size_t>(classes);
  const float scale = 1.0f / static_cast<float>(rows);
  double total = 0.0;
  for (std::size_t row = 0; row < rows; ++row) {
    const float* p = probabilities + row * width;
    check_label(labels[row], row, classes);
    const auto label = static_cast<std::size_t>(labels[row]);
    total -= std::log(std::max(p[label], std::numeric_limits<float>::min()));
    if (std::isnan(p[label])) total = std::numeric_limits<double>::quiet_NaN();
    if (logits_gradient == nullptr) continue;
    float* g = logits_gradient + row * width;
    for (std::size_t c = 0; c < width; ++c) g[c] = p[c] * scale;
    g[label] -= scale;
  }
  return total / static_cast<double>(rows);
}

std::size_t count_correct(const float* probabilities, const std::int32_t* labels, std::size_t rows, int classes) {
  const auto width = static_cast<std::size_t>(classes);
  std::size_t correct = 0;
  for (std::size_t row = 0; row < rows; ++row) {
    const float* p = probabilities + row * width;
    check_label(labels[row], row, classes);
    const auto best = static_cast<std::size_t>(std::max_element(p, p + width) - p);
    if (best == static_cast<std::size_t>(labels[row])) ++correct;
  }
  return correct;
}

}  // namespace memsweep::trainer::detail
