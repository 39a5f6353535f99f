#pragma once
// The network a trial trains, as layers: pure description shared by the
// sweep file's checks, the trainer and the memory estimate.

#include "memsweep/dataset_spec.hpp"

#include <string>
#include <vector>

namespace memsweep {

// A convolution block: 3x3 convolution (stride 1, padding 1, so the image
// keeps its size) → ReLU → optionally a 2x2 max-pool of stride 2.
struct ConvBlock {
  int out_channels = 0;
  bool pool = true;
  bool operator==(const ConvBlock&) const = default;
};

struct ModelSpec {
  ImageShape input;
  int classes = 10;
  std::vector<ConvBlock> conv;  // empty for an MLP
  std::vector<int> hidden;      // fully connected hidden widths, each followed by ReLU
};

// The AlexNet-like preset (model = "alexnet"), scaled to 32x32 inputs as in
// the CIFAR-10 variants of the literature: five 3x3 convolutions of 64, 192,
// 384, 256 and 256 channels, pooled after the first, second and fifth. The
// fully connected part is the trial's `hidden` list (AlexNet's own is
// [4096, 4096]; scaled, [1024, 1024]).
const std::vector<ConvBlock>& alexnet_conv_blocks();

// The image after the convolution blocks (each pool halves height and width,
// rounding down); a side of 0 means the blocks do not fit the input.
ImageShape conv_output_shape(const ModelSpec& model);

// "784-128-10" for an MLP, "c16p-c32p|128|10" style for a CNN: for tables.
std::string describe_layers(const ModelSpec& model);

}  // namespace memsweep
