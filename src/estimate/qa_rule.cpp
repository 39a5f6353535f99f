// The Q&A rule of ../shared/paper/README.md §3: a count of values times 4
// bytes, with fixed multipliers, and no framework at all.

#include "memsweep/estimate.hpp"

#include "estimate/saturating.hpp"

#include <fmt/format.h>

namespace memsweep {

using estimate::detail::saturating_mul;

RuleCounts rule_counts(const ModelSpec& model, std::uint64_t batch) {
  return RuleCounts{parameter_count(model), activations_per_example(model), model.input.pixels(), batch};
}

RuleCounts rule_counts(const TrialSpec& trial) {
  return rule_counts(model_spec(trial), static_cast<std::uint64_t>(trial.batch_size));
}

std::uint64_t rule_bytes_per_example(const RuleCounts& counts) {
  return saturating_mul(counts.activations_per_example, kRuleActivationCopies * kRuleBytesPerValue);
}

MemoryEstimate rule_estimate(const RuleCounts& counts) {
  namespace part = estimate_part;
  return MemoryEstimate{{
      {std::string(part::kRuleParameters), saturating_mul(counts.parameters, kRuleParameterCopies * kRuleBytesPerValue),
       fmt::format("{} parameters x 3 (values, gradients, momentum-style state) x 4 B", counts.parameters)},
      {std::string(part::kRuleActivations), saturating_mul(rule_bytes_per_example(counts), counts.batch),
       fmt::format("{} activations per example x 2 (values, gradients) x 4 B x batch {}",
                   counts.activations_per_example, counts.batch)},
      {std::string(part::kRuleInput),
       saturating_mul(counts.batch, saturating_mul(counts.input_per_example, kRuleBytesPerValue)),
       fmt::format("batch {} x {} input values x 4 B", counts.batch, counts.input_per_example)},
  }};
}

}  // namespace memsweep
