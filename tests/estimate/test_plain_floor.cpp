// The plain-layout floor against the full (oneDNN) estimate on shapes that
// train, and what a shape beyond any machine gets instead of the full
// estimate: the floor, marked, with sums that do not wrap past 2^64.

#include "memsweep/estimate.hpp"
#include "memsweep/trainer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace memsweep {
namespace {

namespace part = estimate_part;

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

TrialSpec synthetic_trial(ImageShape shape, ModelKind model, std::vector<int> channels, std::vector<int> hidden,
                          int batch, OptimizerKind optimizer) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;
  trial.dataset.synthetic.shape = shape;
  trial.model = model;
  trial.channels = std::move(channels);
  trial.hidden = std::move(hidden);
  trial.batch_size = batch;
  trial.optimizer.kind = optimizer;
  return trial;
}

struct NormalShape {
  const char* name;
  TrialSpec trial;
  ExampleCounts counts;
};

std::vector<NormalShape> normal_shapes() {
  return {
      // 60000 / 10000 rows in batches of 32: an evaluation-only network of 16 rows too.
      {"mlp_mnist_sized",
       synthetic_trial({1, 28, 28}, ModelKind::mlp, {}, {128}, 32, OptimizerKind::sgd),
       {60000, 10000}},
      {"mlp_deep_adam",
       synthetic_trial({1, 28, 28}, ModelKind::mlp, {}, {285, 389, 61}, 8, OptimizerKind::adam),
       {1001, 300}},
      {"cnn_16_32",
       synthetic_trial({3, 32, 32}, ModelKind::cnn, {16, 32}, {128}, 64, OptimizerKind::momentum),
       {50000, 10000}},
      {"cnn_odd_channels",
       synthetic_trial({1, 28, 28}, ModelKind::cnn, {5, 7}, {32}, 8, OptimizerKind::sgd),
       {800, 203}},
      {"alexnet_cifar_sized",
       synthetic_trial({3, 32, 32}, ModelKind::alexnet, {}, {256}, 16, OptimizerKind::sgd),
       {4000, 1000}},
  };
}

class FloorOfNormalShapes : public ::testing::TestWithParam<NormalShape> {};

TEST_P(FloorOfNormalShapes, EveryPartIsAtMostTheFullEstimates) {
  const NormalShape& shape = GetParam();
  const TrainerConfig config = trainer_config(training_spec(shape.trial), shape.counts.train, shape.counts.test);
  const MemoryEstimate floor = plain_floor_estimate(config);
  const MemoryEstimate full = estimate_trial(shape.trial, shape.counts);
  EXPECT_FALSE(full.at_least) << "a shape that trains gets oneDNN's estimate";
  for (const EstimatePart& p : floor.parts) {
    const bool none = p.name == part::kOptimizerState && shape.trial.optimizer.kind == OptimizerKind::sgd;
    EXPECT_EQ(p.bytes == 0, none) << p.name;
    EXPECT_LE(p.bytes, full.part(p.name).bytes) << p.name;
  }
  EXPECT_LE(floor.total(), full.total());
}

// Under reuse and recompute the floor is a floor too: the arena holds at
// least the first step's images and output of the largest batch.
TEST_P(FloorOfNormalShapes, EveryPartIsAtMostTheFullEstimatesUnderEveryPlan) {
  const NormalShape& shape = GetParam();
  for (const MemoryPlan plan : {MemoryPlan::reuse, MemoryPlan::recompute}) {
    TrainerConfig config = trainer_config(training_spec(shape.trial), shape.counts.train, shape.counts.test);
    config.memory_plan = plan;
    const MemoryEstimate floor = plain_floor_estimate(config);
    const MemoryEstimate full = estimate_trainer(config);
    EXPECT_GT(floor.part(part::kStepArena).bytes, 0u);
    for (const EstimatePart& p : floor.parts) EXPECT_LE(p.bytes, full.part(p.name).bytes) << p.name;
    EXPECT_LE(floor.total(), full.total()) << memory_plan_name(plan);
  }
}

// Plain layouts (nc) cannot be padded: an MLP's floor is its full estimate
// but for the parameters' 64-byte lines and blocked layouts and the scratchpad.
TEST_P(FloorOfNormalShapes, AgreesWithTheFullEstimateWhereLayoutsArePlain) {
  const NormalShape& shape = GetParam();
  const TrainerConfig config = trainer_config(training_spec(shape.trial), shape.counts.train, shape.counts.test);
  const MemoryEstimate floor = plain_floor_estimate(config);
  const MemoryEstimate full = estimate_trial(shape.trial, shape.counts);
  if (shape.trial.model == ModelKind::mlp) {
    for (const std::string_view name : {part::kActivations, part::kActivationGradients, part::kInputBatch})
      EXPECT_EQ(floor.part(name).bytes, full.part(name).bytes) << name;
    // oneDNN may block an inner product's weights by up to 32 on each side:
    // 13 % more for 784-285-389-61-10.
    EXPECT_LE(full.part(part::kParameters).bytes, floor.part(part::kParameters).bytes * 6 / 5);
  } else {
    // Convolutions keep blocked (16-channel) layouts and reorder copies;
    // with 16 and 32 channels, and AlexNet's multiples of 64, no padding.
    const bool padded = shape.trial.model == ModelKind::cnn && shape.trial.channels.front() % 16 != 0;
    const std::uint64_t most = padded ? 16 : 3;
    EXPECT_LE(full.part(part::kActivations).bytes, most * floor.part(part::kActivations).bytes);
    EXPECT_LE(full.part(part::kParameters).bytes, (padded ? 16 : 2) * floor.part(part::kParameters).bytes);
  }
}

std::string shape_name(const ::testing::TestParamInfo<NormalShape>& shape) { return shape.param.name; }

INSTANTIATE_TEST_SUITE_P(Shapes, FloorOfNormalShapes, ::testing::ValuesIn(normal_shapes()), shape_name);

// Near the sweep file's maxima: a 64x4096x4096 input, a million channels,
// a million-wide hidden layer, batch 2^20.
TrialSpec largest_legal_cnn() {
  return synthetic_trial({64, 4096, 4096}, ModelKind::cnn, {1'000'000, 1'000'000}, {1'000'000}, kMaxBatchSize,
                         OptimizerKind::adam);
}

TEST(BeyondAnyMachine, GetsTheFloorMarkedAtLeast) {
  // 2^30 inputs x 10^6 weights: 4.3 PB of values alone.
  TrialSpec trial = synthetic_trial({64, 4096, 4096}, ModelKind::mlp, {}, {1'000'000}, 1024, OptimizerKind::sgd);
  const MemoryEstimate estimate = estimate_trial(trial, {60000, 10000});
  ASSERT_TRUE(estimate.at_least);
  EXPECT_GT(estimate.total(), kEstimateLimitBytes);
  EXPECT_LT(estimate.total(), kSaturated);
  const std::uint64_t weights = (1ULL << 30) * 1'000'000 + 1'000'000 + 1'000'000ULL * 10 + 10;
  EXPECT_EQ(estimate.part(part::kParameters).bytes, weights * sizeof(float));
  EXPECT_THROW((void)estimate.part(part::kScratchpad), std::out_of_range) << "oneDNN was not asked";

  EstimateCache cache;
  EXPECT_TRUE(cache.estimate(trial, {60000, 10000}).at_least);
  trial.batch_size = 1;
  (void)cache.estimate(trial, {60000, 10000});
  EXPECT_EQ(cache.beyond_limit_shapes(), 2u);
  (void)cache.estimate(synthetic_trial({1, 28, 28}, ModelKind::mlp, {}, {16}, 4, OptimizerKind::sgd), {100, 10});
  EXPECT_EQ(cache.distinct_shapes(), 3u);
  EXPECT_EQ(cache.beyond_limit_shapes(), 2u);
}

TEST(BeyondAnyMachine, SumsPast64BitsSaturateInsteadOfWrapping) {
  const TrialSpec trial = largest_legal_cnn();
  const MemoryEstimate estimate = estimate_trial(trial, {10'000'000, 10'000'000});
  ASSERT_TRUE(estimate.at_least);
  // The first convolution's output: 2^20 rows x 10^6 x 4096 x 4096 floats.
  EXPECT_EQ(estimate.part(part::kActivations).bytes, kSaturated);
  // The hidden layer has 10^6 x (10^6 x 1024 x 1024) weights: 4.2e18 bytes.
  EXPECT_GT(estimate.part(part::kParameters).bytes, 4'000'000'000'000'000'000ULL);
  EXPECT_EQ(estimate.total(), kSaturated);

  const ModelSpec model = model_spec(trial);
  EXPECT_EQ(forward_flops_per_example(model), kSaturated) << "the second convolution: 3.8e19 multiply-adds";
  EXPECT_EQ(rule_estimate(rule_counts(model, kMaxBatchSize)).total(), kSaturated);
}

}  // namespace
}  // namespace memsweep
