#pragma once
// The parts an estimate is made of (estimate.hpp), by name, and the /trials
// column that records each part of a trial's estimate (schema 10,
// docs/results-file.md). In common because the estimate names the parts and
// the results file records them, and neither depends on the other.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace memsweep {

// Part names, shared by the CLI, the docs, the results file and the tests.
namespace estimate_part {
inline constexpr std::string_view kParameters = "parameters";
inline constexpr std::string_view kGradients = "gradients";
inline constexpr std::string_view kOptimizerState = "optimizer state";
inline constexpr std::string_view kActivations = "activations";
inline constexpr std::string_view kPoolingWorkspace = "pooling workspace";
inline constexpr std::string_view kActivationGradients = "activation gradients";
inline constexpr std::string_view kInputBatch = "input batch";
inline constexpr std::string_view kReorderedWeights = "reordered weight copies";
inline constexpr std::string_view kScratchpad = "oneDNN scratchpad";
// reuse and recompute: the step's transient buffers in one arena, placed by
// their lifetimes; it replaces activations, pooling workspace, activation
// gradients, reordered weight copies and the batch images.
inline constexpr std::string_view kStepArena = "step arena";
inline constexpr std::string_view kResidentDataset = "resident dataset";
// What a fresh trial process takes beyond its buffers (trial_process_cost.hpp).
inline constexpr std::string_view kTrialProcess = "trial process";
// The Q&A rule's parts (its input batch is kInputBatch's name).
inline constexpr std::string_view kRuleParameters = "parameters x3";
inline constexpr std::string_view kRuleActivations = "activations x2 x batch";
inline constexpr std::string_view kRuleInput = kInputBatch;
}  // namespace estimate_part

// A part and the /trials column of its bytes (-1 where the trial's estimate
// has no such part). The table's `label:<column>` attribute holds the part's name,
// so that a reader needs no copy of this table.
struct EstimatePartColumn {
  std::string_view part;
  std::string_view column;
};

inline constexpr std::array<EstimatePartColumn, 14> kEstimatePartColumns{{
    {estimate_part::kParameters, "estimate_parameters"},
    {estimate_part::kGradients, "estimate_gradients"},
    {estimate_part::kOptimizerState, "estimate_optimizer_state"},
    {estimate_part::kActivations, "estimate_activations"},
    {estimate_part::kPoolingWorkspace, "estimate_pooling_workspace"},
    {estimate_part::kActivationGradients, "estimate_activation_gradients"},
    {estimate_part::kInputBatch, "estimate_input_batch"},
    {estimate_part::kReorderedWeights, "estimate_reordered_weight_copies"},
    {estimate_part::kScratchpad, "estimate_onednn_scratchpad"},
    {estimate_part::kStepArena, "estimate_step_arena"},
    {estimate_part::kTrialProcess, "estimate_trial_process"},
    {estimate_part::kResidentDataset, "estimate_resident_dataset"},
    {estimate_part::kRuleParameters, "estimate_rule_parameters_x3"},
    {estimate_part::kRuleActivations, "estimate_rule_activations_x2_x_batch"},
}};

// The index into kEstimatePartColumns of the part called `part`; nullopt
// for a name that has no column.
constexpr std::optional<std::size_t> estimate_part_slot(std::string_view part) {
  for (std::size_t i = 0; i < kEstimatePartColumns.size(); ++i)
    if (kEstimatePartColumns[i].part == part) return i;
  return std::nullopt;
}

}  // namespace memsweep
