#pragma once
// The memory a trial should need, worked out before it runs (docs/estimate.md).
//
// Two modes:
// - full: what the trainer will hold, part by part, from oneDNN's own memory
//   and primitive descriptors for the layouts the trainer will use (padding,
//   reorder copies, scratchpad, pooling workspaces included); nothing is
//   allocated and no kernel is generated;
// - the Q&A rule (../shared/paper/README.md §3): parameters × 3 × 4 B,
//   activations × 2 × batch × 4 B, input × batch × 4 B, from plain counts.
// The dataset a rank holds is a part of its own, outside the trial's
// peak − baseline (the sweep loads it before the trial's baseline).

#include "memsweep/config.hpp"
#include "memsweep/dataset.hpp"
#include "memsweep/dataset_spec.hpp"
#include "memsweep/estimate_parts.hpp"
#include "memsweep/model_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

struct TrainerConfig;
struct TrainerMemory;

// One named part of an estimate: how many bytes, and where the figure comes from.
struct EstimatePart {
  std::string name;
  std::uint64_t bytes = 0;
  std::string note;
};

struct MemoryEstimate {
  std::vector<EstimatePart> parts;
  // The parts are floors (plain layouts, no scratchpad), not oneDNN's
  // figures: the trial needs more than total(), which is beyond
  // kEstimateLimitBytes (see estimate_trial).
  bool at_least = false;

  // The sum of the parts; a sum past 2^64 - 1 stays there instead of wrapping.
  std::uint64_t total() const;
  // The part called `name`; throws std::out_of_range when there is none.
  const EstimatePart& part(std::string_view name) const;
};

// ---- the dataset a rank holds ---------------------------------------------

// How many examples each split holds.
struct ExampleCounts {
  std::size_t train = 0;
  std::size_t test = 0;
  auto operator<=>(const ExampleCounts&) const = default;
};

// The published sizes: MNIST and Fashion-MNIST 60000 / 10000, CIFAR-10
// 50000 / 10000; a synthetic dataset's own train_size / test_size.
ExampleCounts canonical_example_counts(const DatasetSpec& spec);
// What a loaded dataset holds (e.g. 4000 / 1000 for the shared CIFAR-10 subset).
ExampleCounts example_counts(const Dataset& data);

// float32 images and int32 labels of both splits, as the loaders keep them.
std::uint64_t resident_dataset_bytes(const ImageShape& shape, ExampleCounts counts);
EstimatePart resident_dataset_part(const DatasetSpec& spec, ExampleCounts counts);

// ---- the full estimate ------------------------------------------------------

// No machine has a pebibyte of memory. A trial whose plain tensors alone
// exceed it gets its floor (plain_floor_estimate) instead of the full
// estimate: oneDNN is not asked about shapes whose sizes it computes in
// 64-bit integers that such tensors overflow, and the figure would only say
// "too large" anyway.
inline constexpr std::uint64_t kEstimateLimitBytes = std::uint64_t{1} << 50;

// What the trainer of `config` holds at the least, counted without oneDNN:
// every tensor in its plain layout (no blocked padding, no 64-byte
// alignment, no reorder copies, no scratchpad, no pooling workspace), for
// every batch size the trainer prepares. Each part is at most the full
// estimate's part of that name; sums saturate at 2^64 - 1. Under reuse and
// recompute the transient buffers are one part, the step arena, whose
// floor is what is live at the first step of the largest batch: its images
// and the first layer's output (or the input's reordered copy), plain. Its cost does
// not depend on the sizes: a few operations per layer and batch size.
MemoryEstimate plain_floor_estimate(const TrainerConfig& config);

// The parts of what a trainer holds, in the order a table shows them: under
// keep every kind of transient buffer on its own, under reuse and recompute
// (step_arena set) the step arena instead.
MemoryEstimate estimate_from_trainer_memory(const TrainerMemory& memory);

// What a trainer built from `config` allocates, its memory plan included;
// the floor (at_least set) when the floor alone exceeds kEstimateLimitBytes.
MemoryEstimate estimate_trainer(const TrainerConfig& config);

// What `trial` allocates when it trains on a dataset of `counts` examples:
// the trainer of trainer_config(trial, counts.train, counts.test) (main
// batch, the train split's last partial batch, the test split's batches).
// This is the prediction of the trial's peak − baseline; the dataset is not in it.
// When the floor alone exceeds kEstimateLimitBytes, the floor (at_least set).
MemoryEstimate estimate_trial(const TrialSpec& trial, ExampleCounts counts);

// The estimate along a [search]'s axis for a built-in trial: footprint ≈
// intercept + slope × value, through the estimates at the range's low end
// and a value above it. nullopt for a program's trial (memsweep cannot
// build its network) or where the estimate is only a floor.
struct AxisEstimate {
  double intercept = 0.0;  // bytes
  double slope = 0.0;      // bytes per unit of the axis
};
std::optional<AxisEstimate> estimate_along_axis(const TrialSpec& configuration, const SearchSpec& search,
                                                ExampleCounts counts);

// estimate_trial for many trials, computed once per distinct shape (layers,
// batch sizes, optimizer kind, memory plan and recompute_every): a sweep has many trials of one shape, and
// each estimate builds oneDNN primitive descriptors.
class EstimateCache {
 public:
  const MemoryEstimate& estimate(const TrialSpec& trial, ExampleCounts counts);
  std::size_t distinct_shapes() const { return estimates_.size(); }
  // Of those, how many are beyond kEstimateLimitBytes (at_least estimates).
  std::size_t beyond_limit_shapes() const { return beyond_limit_; }

 private:
  std::map<std::string, MemoryEstimate> estimates_;
  std::size_t beyond_limit_ = 0;
};

// ---- the Q&A rule -------------------------------------------------------------

inline constexpr std::uint64_t kRuleParameterCopies = 3;   // values, gradients, momentum-style state
inline constexpr std::uint64_t kRuleActivationCopies = 2;  // values and their gradients
inline constexpr std::uint64_t kRuleBytesPerValue = 4;     // float32

struct RuleCounts {
  std::uint64_t parameters = 0;               // weights and biases
  std::uint64_t activations_per_example = 0;  // layer outputs, input excluded
  std::uint64_t input_per_example = 0;        // floats of one input
  std::uint64_t batch = 0;
};

// Weights and biases of the model, exactly (no padding).
std::uint64_t parameter_count(const ModelSpec& model);
// Values of the model's largest weight tensor, in its plain layout.
std::uint64_t largest_weight_tensor(const ModelSpec& model);
// Outputs of every layer for one example: each convolution's and each
// pool's output, each hidden layer and the output layer (the logits). The
// input is not an activation: the rule has a term of its own for it.
std::uint64_t activations_per_example(const ModelSpec& model);

// Floating-point operations of one example's forward pass: 2 per
// multiply-add of each convolution and each fully connected layer (output
// layer included). ReLU, pooling, biases and the loss are left out: a few
// operations per activation, small beside the multiply-adds. For the ETA's
// cost model (eta.hpp), not for memory.
std::uint64_t forward_flops_per_example(const ModelSpec& model);

RuleCounts rule_counts(const ModelSpec& model, std::uint64_t batch);
RuleCounts rule_counts(const TrialSpec& trial);

// Activations and their gradients of one example: activations × 2 × 4 B.
std::uint64_t rule_bytes_per_example(const RuleCounts& counts);

// Three parts: parameters × 3 × 4 B, activations × 2 × batch × 4 B,
// batch × input × 4 B.
MemoryEstimate rule_estimate(const RuleCounts& counts);

}  // namespace memsweep
