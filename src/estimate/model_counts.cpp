// Counts of a model's values, without oneDNN: parameters, the largest
// weight tensor, layer outputs per example, forward operations per example.

#include "memsweep/estimate.hpp"

#include "estimate/saturating.hpp"

#include <algorithm>

namespace memsweep {
namespace {

using estimate::detail::saturating_add;
using estimate::detail::saturating_mul;

// 3x3 convolutions (model_spec.hpp).
constexpr std::uint64_t kKernelArea = 3 * 3;

std::uint64_t u64(int value) { return static_cast<std::uint64_t>(value); }

}  // namespace

std::uint64_t parameter_count(const ModelSpec& model) {
  std::uint64_t count = 0;
  std::uint64_t channels = u64(model.input.channels);
  for (const ConvBlock& block : model.conv) {
    count = saturating_add(count, u64(block.out_channels) * channels * kKernelArea + u64(block.out_channels));
    channels = u64(block.out_channels);
  }
  std::uint64_t inputs = conv_output_shape(model).pixels();
  for (const int width : model.hidden) {
    count = saturating_add(count, saturating_add(saturating_mul(inputs, u64(width)), u64(width)));
    inputs = u64(width);
  }
  return saturating_add(count, saturating_add(saturating_mul(inputs, u64(model.classes)), u64(model.classes)));
}

std::uint64_t largest_weight_tensor(const ModelSpec& model) {
  std::uint64_t largest = 0;
  std::uint64_t channels = u64(model.input.channels);
  for (const ConvBlock& block : model.conv) {
    largest = std::max(largest, u64(block.out_channels) * channels * kKernelArea);
    channels = u64(block.out_channels);
  }
  std::uint64_t inputs = conv_output_shape(model).pixels();
  for (const int width : model.hidden) {
    largest = std::max(largest, saturating_mul(inputs, u64(width)));
    inputs = u64(width);
  }
  return std::max(largest, saturating_mul(inputs, u64(model.classes)));
}

std::uint64_t forward_flops_per_example(const ModelSpec& model) {
  constexpr std::uint64_t kFlopsPerMultiplyAdd = 2;
  std::uint64_t multiply_adds = 0;
  ImageShape shape = model.input;
  for (const ConvBlock& block : model.conv) {
    // Padding 1 keeps height and width: every output pixel of every output
    // channel sums 3x3 x input channels products.
    const std::uint64_t area = u64(shape.height) * u64(shape.width);
    multiply_adds = saturating_add(multiply_adds,
                                   saturating_mul(area * u64(block.out_channels), u64(shape.channels) * kKernelArea));
    shape.channels = block.out_channels;
    if (block.pool) {
      shape.height /= 2;
      shape.width /= 2;
    }
  }
  std::uint64_t inputs = shape.pixels();
  for (const int width : model.hidden) {
    multiply_adds = saturating_add(multiply_adds, saturating_mul(inputs, u64(width)));
    inputs = u64(width);
  }
  multiply_adds = saturating_add(multiply_adds, saturating_mul(inputs, u64(model.classes)));
  return saturating_mul(kFlopsPerMultiplyAdd, multiply_adds);
}

std::uint64_t activations_per_example(const ModelSpec& model) {
  std::uint64_t count = 0;
  ImageShape shape = model.input;
  for (const ConvBlock& block : model.conv) {
    shape.channels = block.out_channels;
    count += shape.pixels();  // the convolution keeps height and width
    if (block.pool) {
      shape.height /= 2;
      shape.width /= 2;
      count += shape.pixels();
    }
  }
  for (const int width : model.hidden) count += u64(width);
  return count + u64(model.classes);
}

}  // namespace memsweep
