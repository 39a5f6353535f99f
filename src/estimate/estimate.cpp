// The full estimate: the trainer's own prediction of what it will hold,
// named part by part, and a cache of it per distinct shape.

#include "memsweep/estimate.hpp"

#include "estimate/saturating.hpp"
#include "memsweep/trainer.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace memsweep {

std::uint64_t MemoryEstimate::total() const {
  std::uint64_t sum = 0;
  for (const EstimatePart& p : parts) sum = estimate::detail::saturating_add(sum, p.bytes);
  return sum;
}

const EstimatePart& MemoryEstimate::part(std::string_view name) const {
  for (const EstimatePart& p : parts)
    if (p.name == name) return p;
  throw std::out_of_range(fmt::format("the estimate has no part \"{}\"", name));
}

MemoryEstimate estimate_from_trainer_memory(const TrainerMemory& m) {
  namespace part = estimate_part;
  const auto make = [](std::string_view name, std::size_t bytes, std::string_view note) {
    return EstimatePart{std::string(name), static_cast<std::uint64_t>(bytes), std::string(note)};
  };
  MemoryEstimate estimate{{
      make(part::kParameters, m.parameters,
           "weights and biases in the layouts oneDNN chose (blocked layouts pad), 64-byte aligned"),
      make(part::kGradients, m.gradients, "one buffer shaped like the parameters"),
      make(part::kOptimizerState, m.optimizer_state, "copies of the parameters: SGD 0, momentum 1, Adam 2"),
  }};
  if (m.step_arena > 0) {
    // reuse and recompute: the planner's own arena size, not a second model of it.
    estimate.parts.push_back(make(part::kStepArena, m.step_arena,
                                  "activations, their gradients, pooling workspaces, layout copies and the batch "
                                  "images in one arena placed by lifetime (the trainer's planner); the largest "
                                  "batch size's plan, which every other shares"));
    estimate.parts.push_back(make(part::kInputBatch, m.input_batch, "the labels of each batch size"));
  } else {
    estimate.parts.push_back(make(part::kActivations, m.activations,
                                  "forward outputs (and layout copies) of every batch size the trainer prepares, "
                                  "softmax included"));
    estimate.parts.push_back(make(part::kPoolingWorkspace, m.workspace,
                                  "max-pooling's workspace (where each max came from), oneDNN's size"));
    estimate.parts.push_back(
        make(part::kActivationGradients, m.activation_gradients, "gradients of the forward outputs, per batch size"));
    estimate.parts.push_back(
        make(part::kInputBatch, m.input_batch, "images and labels of each batch size, and a reordered input copy"));
    estimate.parts.push_back(make(part::kReorderedWeights, m.reordered_weights,
                                  "weights and weight gradients in another primitive's layout"));
  }
  estimate.parts.push_back(
      make(part::kScratchpad, m.scratchpad, "one buffer, the largest scratchpad any primitive reports"));
  return estimate;
}

// The floor first: a shape beyond any machine is not worth oneDNN's time,
// and its padded sizes may not even fit the 64-bit sizes oneDNN computes.
MemoryEstimate estimate_trainer(const TrainerConfig& config) {
  MemoryEstimate floor = plain_floor_estimate(config);
  if (floor.total() > kEstimateLimitBytes) {
    floor.at_least = true;
    return floor;
  }
  return estimate_from_trainer_memory(predict_trainer_memory(config));
}

MemoryEstimate estimate_trial(const TrialSpec& trial, ExampleCounts counts) {
  return estimate_trainer(trainer_config(training_spec(trial), counts.train, counts.test));
}

const MemoryEstimate& EstimateCache::estimate(const TrialSpec& trial, ExampleCounts counts) {
  const TrainerConfig config = trainer_config(training_spec(trial), counts.train, counts.test);
  // Everything the prediction depends on: the layers (describe_layers names
  // the input shape, every block with its pool, every width and the
  // classes), the batch sizes the trainer prepares, the optimizer kind and
  // the memory plan (with its segment length).
  const std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}", describe_layers(config.model), fmt::join(config.train_batch_sizes, ","),
                  fmt::join(config.eval_batch_sizes, ","), optimizer_name(config.optimizer.kind),
                  memory_plan_name(config.memory_plan), config.recompute_every);
  const auto found = estimates_.find(key);
  if (found != estimates_.end()) return found->second;
  const MemoryEstimate& estimate = estimates_.emplace(key, estimate_trainer(config)).first->second;
  if (estimate.at_least) ++beyond_limit_;
  return estimate;
}

}  // namespace memsweep
