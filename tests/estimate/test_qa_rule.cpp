// The Q&A rule (../shared/paper/README.md §3): its worked example, component
// by component, and the counts it takes from our models.

#include "memsweep/estimate.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace memsweep {
namespace {

namespace part = estimate_part;

// The thread's "MB" is 2^20 bytes: 228,875,808 B is 218.27 MiB, 228.88 MB.
constexpr double kMiB = 1024.0 * 1024.0;

double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / kMiB; }
// As the thread prints them: two decimals.
double printed(double value) { return std::round(value * 100.0) / 100.0; }

const RuleCounts kWorkedExample{19'072'984, 532'752, 9'000, 128};

TEST(QaRuleWorkedExample, ParametersTimesThree) {
  const MemoryEstimate estimate = rule_estimate(kWorkedExample);
  EXPECT_EQ(estimate.part(part::kRuleParameters).bytes, 19'072'984u * 3 * 4);
  EXPECT_DOUBLE_EQ(printed(mib(estimate.part(part::kRuleParameters).bytes)), 218.27);
}

TEST(QaRuleWorkedExample, ActivationsPerImageWithGradients) {
  EXPECT_EQ(rule_bytes_per_example(kWorkedExample), 532'752u * 2 * 4);
  EXPECT_DOUBLE_EQ(printed(mib(rule_bytes_per_example(kWorkedExample))), 4.06);
  const MemoryEstimate estimate = rule_estimate(kWorkedExample);
  EXPECT_EQ(estimate.part(part::kRuleActivations).bytes, 532'752u * 2 * 4 * 128);
}

TEST(QaRuleWorkedExample, InputBatch) {
  const MemoryEstimate estimate = rule_estimate(kWorkedExample);
  EXPECT_EQ(estimate.part(part::kRuleInput).bytes, 128u * 9'000 * 4);
  EXPECT_DOUBLE_EQ(printed(mib(estimate.part(part::kRuleInput).bytes)), 4.39);
}

TEST(QaRuleWorkedExample, Total) {
  const MemoryEstimate estimate = rule_estimate(kWorkedExample);
  ASSERT_EQ(estimate.parts.size(), 3u);
  EXPECT_EQ(estimate.total(), 779'021'856u);
  // The thread's 742.34 multiplies the per-image figure after rounding it
  // to 4.06: 218.27 + 4.06 x 128 + 4.39. Unrounded, the same rule gives
  // 742.93 MiB; the 0.59 MiB between them is that rounding, not the rule.
  EXPECT_DOUBLE_EQ(printed(mib(estimate.total())), 742.93);
  const double thread_total = printed(mib(estimate.part(part::kRuleParameters).bytes)) +
                              printed(mib(rule_bytes_per_example(kWorkedExample))) * 128 +
                              printed(mib(estimate.part(part::kRuleInput).bytes));
  EXPECT_DOUBLE_EQ(printed(thread_total), 742.34);
}

TEST(QaRuleCounts, MlpCountsWeightsBiasesAndLayerOutputs) {
  const ModelSpec model{{1, 28, 28}, 10, {}, {128, 64}};
  const RuleCounts counts = rule_counts(model, 32);
  EXPECT_EQ(counts.parameters, (784u * 128 + 128) + (128 * 64 + 64) + (64 * 10 + 10));
  // Hidden outputs and the logits; the input has its own term.
  EXPECT_EQ(counts.activations_per_example, 128u + 64 + 10);
  EXPECT_EQ(counts.input_per_example, 784u);
  EXPECT_EQ(counts.batch, 32u);
  EXPECT_EQ(largest_weight_tensor(model), 784u * 128);
}

TEST(QaRuleCounts, CnnCountsConvolutionAndPoolOutputs) {
  const ModelSpec model{{1, 28, 28}, 10, {{8, true}, {16, true}}, {64}};
  const RuleCounts counts = rule_counts(model, 4);
  // 3x3 kernels: conv1 8x1x9 + 8, conv2 16x8x9 + 16; fc 16*7*7 -> 64; output 64 -> 10.
  EXPECT_EQ(counts.parameters, (8u * 9 + 8) + (16u * 8 * 9 + 16) + (784u * 64 + 64) + (64u * 10 + 10));
  // conv1 8x28x28, pool1 8x14x14, conv2 16x14x14, pool2 16x7x7, fc 64, output 10.
  EXPECT_EQ(counts.activations_per_example, 6272u + 1568 + 3136 + 784 + 64 + 10);
  EXPECT_EQ(counts.input_per_example, 784u);
  EXPECT_EQ(largest_weight_tensor(model), 784u * 64);
}

TEST(QaRuleCounts, UnpooledBlockKeepsItsSize) {
  const ModelSpec model{{3, 8, 8}, 2, {{4, false}}, {}};
  EXPECT_EQ(activations_per_example(model), 4u * 8 * 8 + 2);
  EXPECT_EQ(parameter_count(model), (4u * 3 * 9 + 4) + (4u * 64 * 2 + 2));
}

TEST(QaRuleCounts, FromATrialUsesItsDatasetAndBatch) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::cifar10;
  trial.hidden = {100};
  trial.batch_size = 7;
  const RuleCounts counts = rule_counts(trial);
  EXPECT_EQ(counts.parameters, 3072u * 100 + 100 + 100 * 10 + 10);
  EXPECT_EQ(counts.input_per_example, 3072u);
  EXPECT_EQ(counts.batch, 7u);
}

}  // namespace
}  // namespace memsweep
