#include "memsweep/model_spec.hpp"

#include <fmt/format.h>

namespace memsweep {

const std::vector<ConvBlock>& alexnet_conv_blocks() {
  static const std::vector<ConvBlock> kBlocks{{64, true}, {192, true}, {384, false}, {256, false}, {256, true}};
  return kBlocks;
}

ImageShape conv_output_shape(const ModelSpec& model) {
  ImageShape shape = model.input;
  for (const ConvBlock& block : model.conv) {
    shape.channels = block.out_channels;
    if (block.pool) {
      shape.height /= 2;
      shape.width /= 2;
    }
  }
  return shape;
}

std::string describe_layers(const ModelSpec& model) {
  std::string text;
  if (model.conv.empty()) {
    text = fmt::format("{}", model.input.pixels());
  } else {
    text = fmt::format("{}x{}x{}", model.input.channels, model.input.height, model.input.width);
    for (const ConvBlock& block : model.conv) text += fmt::format("-c{}{}", block.out_channels, block.pool ? "p" : "");
  }
  for (const int width : model.hidden) text += fmt::format("-{}", width);
  return text + fmt::format("-{}", model.classes);
}

}  // namespace memsweep
