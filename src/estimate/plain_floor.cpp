// The floor of the full estimate, from counts alone: what the trainer holds
// if every tensor were in its plain layout. Cheap whatever the sizes, so it
// screens shapes before oneDNN is asked about them (estimate.cpp).

#include "memsweep/estimate.hpp"

#include "estimate/saturating.hpp"
#include "memsweep/trainer.hpp"
#include "trainer/optimizer.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep {

using estimate::detail::saturating_add;
using estimate::detail::saturating_mul;

MemoryEstimate plain_floor_estimate(const TrainerConfig& config) {
  namespace part = estimate_part;
  constexpr std::uint64_t kFloat = sizeof(float);
  constexpr std::uint64_t kLabel = sizeof(std::int32_t);
  const ModelSpec& model = config.model;
  const std::uint64_t parameters = saturating_mul(parameter_count(model), kFloat);
  const auto copies =
      static_cast<std::uint64_t>(trainer::detail::Optimizer(config.optimizer, config.learning_rate).state_copies());
  // Every layer's output (the logits included) and its gradient when the
  // network trains; the softmax's probabilities are one more output.
  const std::uint64_t outputs = activations_per_example(model);
  const std::uint64_t pixels = model.input.pixels();
  std::uint64_t activations = 0, gradients = 0, input = 0;
  for (const auto& [rows, trains] : prepared_batch_sizes(config)) {
    activations = saturating_add(activations,
                                 saturating_mul(rows, saturating_mul(saturating_add(outputs, model.classes), kFloat)));
    if (trains) gradients = saturating_add(gradients, saturating_mul(rows, saturating_mul(outputs, kFloat)));
    input = saturating_add(input, saturating_mul(rows, saturating_add(saturating_mul(pixels, kFloat), kLabel)));
  }
  const std::string plain = "at least: plain layouts, without oneDNN's padding and alignment";
  MemoryEstimate floor{{
      {std::string(part::kParameters), parameters,
       fmt::format("{} weights and biases; {}", parameter_count(model), plain)},
      {std::string(part::kGradients), parameters, "one buffer shaped like the parameters"},
      {std::string(part::kOptimizerState), saturating_mul(copies, parameters),
       "copies of the parameters: SGD 0, momentum 1, Adam 2"},
  }};
  if (config.memory_plan != MemoryPlan::keep) {
    // At the first step the batch's images are live, and so is what that
    // step writes: the first layer's output, or (convolutions) the input's
    // reordered copy, no smaller than the input. Every plan shares the arena.
    const std::uint64_t first_output =
        !model.conv.empty()
            ? std::min<std::uint64_t>(pixels, static_cast<std::uint64_t>(model.conv.front().out_channels) *
                                                  static_cast<std::uint64_t>(model.input.height) *
                                                  static_cast<std::uint64_t>(model.input.width))
            : static_cast<std::uint64_t>(model.hidden.empty() ? model.classes : model.hidden.front());
    std::uint64_t arena = 0, labels = 0;
    for (const auto& [rows, trains] : prepared_batch_sizes(config)) {
      arena = std::max(arena, saturating_mul(rows, saturating_mul(saturating_add(pixels, first_output), kFloat)));
      labels = saturating_add(labels, saturating_mul(rows, kLabel));
    }
    floor.parts.push_back({std::string(part::kStepArena), arena,
                           fmt::format("the first step's images and output of the largest batch; {}", plain)});
    floor.parts.push_back({std::string(part::kInputBatch), labels, "the labels of each batch size"});
    return floor;
  }
  floor.parts.push_back(
      {std::string(part::kActivations), activations,
       fmt::format("{} outputs per example, softmax included, for every batch size the trainer prepares; {}",
                   saturating_add(outputs, model.classes), plain)});
  floor.parts.push_back({std::string(part::kActivationGradients), gradients,
                         "gradients of the forward outputs, per training batch size"});
  floor.parts.push_back(
      {std::string(part::kInputBatch), input, "images and labels of each batch size; no reordered copy counted"});
  return floor;
}

}  // namespace memsweep
