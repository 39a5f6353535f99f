#include "trainer/thread_choice.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>

namespace memsweep::trainer::detail {

double step_flops(const ModelSpec& model, std::size_t rows, bool with_backward) {
  // Multiply-adds per example: forward (all layers), backward data (all but
  // the first, whose input needs no gradient), backward weights (all).
  double forward = 0.0, first = 0.0;
  const auto layer = [&](double macs) {
    if (forward == 0.0) first = macs;
    forward += macs;
  };
  ImageShape shape = model.input;
  for (const ConvBlock& block : model.conv) {
    // 3x3, stride 1, padding 1: every output pixel sums channels x 9 products.
    layer(static_cast<double>(block.out_channels) * shape.channels * 9.0 * shape.height * shape.width);
    shape.channels = block.out_channels;
    if (block.pool) {
      shape.height /= 2;
      shape.width /= 2;
    }
  }
  double in = static_cast<double>(shape.pixels());
  for (const int width : model.hidden) {
    layer(in * width);
    in = width;
  }
  layer(in * model.classes);
  const double macs = with_backward ? forward + (forward - first) + forward : forward;
  return 2.0 * macs * static_cast<double>(rows);
}

int threads_for_work(double flops, int available) {
  if (available <= 1 || !(flops > 0.0)) return 1;
  const double fitting = std::floor(flops / kMinFlopsPerThread);
  return static_cast<int>(std::clamp(fitting, 1.0, static_cast<double>(available)));
}

int plan_threads(const TrainerConfig& config, std::size_t rows, bool with_backward, int given) {
  if (config.step_threads == StepThreads::all) return std::max(given, 1);
  return threads_for_work(step_flops(config.model, rows, with_backward), given);
}

int threads_given() { return omp_get_max_threads(); }

ScopedThreadCount::ScopedThreadCount(int threads) : previous_(omp_get_max_threads()) {
  // Only when it changes: the count is an ICV of the calling thread, cheap to
  // set, but a step should do nothing it does not need.
  if (threads != previous_) omp_set_num_threads(threads);
}

ScopedThreadCount::~ScopedThreadCount() {
  if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
}

}  // namespace memsweep::trainer::detail
