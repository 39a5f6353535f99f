// The full estimate against a count by hand, the optimizer's copies, the
// resident dataset and the cache.

#include "memsweep/estimate.hpp"
#include "memsweep/trainer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace memsweep {
namespace {

namespace part = estimate_part;

constexpr std::uint64_t kFloat = sizeof(float);
constexpr std::uint64_t kLabel = sizeof(std::int32_t);

TrialSpec mnist_shaped_mlp(std::vector<int> hidden, int batch, OptimizerKind optimizer) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;  // 1x28x28, 10 classes: MNIST's shape
  trial.hidden = std::move(hidden);
  trial.batch_size = batch;
  trial.optimizer.kind = optimizer;
  return trial;
}

// 784-128-10, batch 32. With 3200 / 640 examples every batch is full, so the
// trainer prepares one network of 32 rows (training and evaluation share it).
std::string optimizer_test_name(const ::testing::TestParamInfo<std::pair<OptimizerKind, std::uint64_t>>& info) {
  return std::string(optimizer_name(info.param.first));
}

class HandCountedMlp : public ::testing::TestWithParam<std::pair<OptimizerKind, std::uint64_t>> {};

TEST_P(HandCountedMlp, MatchesTheCountByHand) {
  const auto [optimizer, copies] = GetParam();
  const MemoryEstimate estimate = estimate_trial(mnist_shaped_mlp({128}, 32, optimizer), {3200, 640});
  constexpr std::uint64_t kRows = 32;

  // Exact: plain (nc) layouts, sizes oneDNN cannot pad.
  // fc1 outputs 128, the logits 10 and the softmax's probabilities 10.
  EXPECT_EQ(estimate.part(part::kActivations).bytes, kRows * (128 + 10 + 10) * kFloat);
  EXPECT_EQ(estimate.part(part::kActivationGradients).bytes, kRows * (128 + 10) * kFloat);
  EXPECT_EQ(estimate.part(part::kInputBatch).bytes, kRows * 784 * kFloat + kRows * kLabel);
  EXPECT_EQ(estimate.part(part::kPoolingWorkspace).bytes, 0u) << "no pooling in an MLP";
  EXPECT_EQ(estimate.part(part::kReorderedWeights).bytes, 0u) << "only convolutions reorder weights";

  // Bounded: oneDNN may keep the weights blocked (e.g. AB16b32a), padding
  // each side to a multiple of at most 32, and every tensor starts on a
  // 64-byte line (16 floats).
  constexpr std::uint64_t kExact = (784 * 128 + 128) + (128 * 10 + 10);
  const auto line = [](std::uint64_t floats) { return (floats + 15) / 16 * 16; };
  const auto pad = [](std::uint64_t n) { return (n + 31) / 32 * 32; };
  const std::uint64_t most = line(pad(128) * pad(784)) + line(128) + line(pad(10) * pad(128)) + line(10);
  const std::uint64_t parameters = estimate.part(part::kParameters).bytes;
  EXPECT_GE(parameters, kExact * kFloat);
  EXPECT_LE(parameters, most * kFloat);
  EXPECT_EQ(estimate.part(part::kGradients).bytes, parameters);
  EXPECT_EQ(estimate.part(part::kOptimizerState).bytes, copies * parameters);

  // The scratchpad is whatever the chosen implementations ask for: not
  // countable by hand, only part of the sum.
  const std::uint64_t scratchpad = estimate.part(part::kScratchpad).bytes;
  // The initial weights are drawn inside the gradient buffer: no extra part.
  EXPECT_THROW(estimate.part("weight initialisation buffer"), std::out_of_range);
  EXPECT_EQ(estimate.total(), (2 + copies) * parameters + kRows * (128 + 10 + 10) * kFloat +
                                  kRows * (128 + 10) * kFloat + kRows * (784 * kFloat + kLabel) + scratchpad);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, HandCountedMlp,
                         ::testing::Values(std::pair{OptimizerKind::sgd, 0u}, std::pair{OptimizerKind::adam, 2u}),
                         optimizer_test_name);

TEST(FullEstimate, PartialBatchesAddTheirOwnNetworks) {
  // MNIST's published sizes: 60000 = 1875 x 32 (no training remainder),
  // 10000 = 312 x 32 + 16: an evaluation-only network of 16 rows.
  const MemoryEstimate estimate = estimate_trial(mnist_shaped_mlp({128}, 32, OptimizerKind::sgd), {60000, 10000});
  EXPECT_EQ(estimate.part(part::kActivations).bytes, (32 + 16) * (128 + 10 + 10) * kFloat);
  EXPECT_EQ(estimate.part(part::kActivationGradients).bytes, 32 * (128 + 10) * kFloat) << "evaluation has none";
  EXPECT_EQ(estimate.part(part::kInputBatch).bytes, (32 + 16) * (784 * kFloat + kLabel));
}

class OptimizerCopies : public ::testing::TestWithParam<std::pair<OptimizerKind, std::uint64_t>> {};

TEST_P(OptimizerCopies, StateIsZeroOneOrTwoCopiesOfTheParameters) {
  const auto [optimizer, copies] = GetParam();
  TrialSpec cnn = mnist_shaped_mlp({32}, 8, optimizer);
  cnn.model = ModelKind::cnn;
  cnn.channels = {4, 8};
  for (const TrialSpec& trial : {mnist_shaped_mlp({64, 32}, 16, optimizer), cnn}) {
    const MemoryEstimate estimate = estimate_trial(trial, {800, 200});
    EXPECT_GT(estimate.part(part::kParameters).bytes, 0u);
    EXPECT_EQ(estimate.part(part::kOptimizerState).bytes, copies * estimate.part(part::kParameters).bytes)
        << optimizer_name(optimizer) << " " << model_name(trial.model);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, OptimizerCopies,
                         ::testing::Values(std::pair{OptimizerKind::sgd, 0u}, std::pair{OptimizerKind::momentum, 1u},
                                           std::pair{OptimizerKind::adam, 2u}),
                         optimizer_test_name);

TEST(FullEstimate, PoolingWorkspaceIsItsOwnPart) {
  TrialSpec trial = mnist_shaped_mlp({32}, 8, OptimizerKind::sgd);
  trial.model = ModelKind::cnn;
  trial.channels = {4};
  const MemoryEstimate estimate = estimate_trial(trial, {800, 200});
  // One max-pool of 8 x 4 x 14 x 14 outputs: at least a byte per output.
  EXPECT_GE(estimate.part(part::kPoolingWorkspace).bytes, 8u * 4 * 14 * 14);
  EXPECT_GE(estimate.part(part::kActivations).bytes, 8u * (4 * 28 * 28 + 4 * 14 * 14 + 32 + 10 + 10) * kFloat);
}

TEST(FullEstimate, PartsAreTheTrainersOwnPrediction) {
  const TrialSpec trial = mnist_shaped_mlp({285, 389, 423, 173, 61}, 8, OptimizerKind::momentum);
  const TrainerMemory m = predict_trainer_memory(trainer_config(training_spec(trial), 1000, 300));
  const MemoryEstimate estimate = estimate_trial(trial, {1000, 300});
  EXPECT_EQ(estimate.total(), m.total()) << "exactly what the trainer will hold";
  EXPECT_EQ(estimate.part(part::kScratchpad).bytes, m.scratchpad);
  EXPECT_THROW((void)estimate.part("no such part"), std::out_of_range);
}

// 784-128-10 at batch 32 under reuse, by hand. The schedule: fc1 forward
// (0), output forward (1), softmax (2), the loss (3), output backward
// weights (4) and data (5), fc1's ReLU backward (6) and weights (7). The
// images live 0-7, fc1's output 0-6, the logits 1-2, the probabilities 2-3,
// the logits' gradient 3-5, fc1's output gradient 5-7: at step 5 the
// images, fc1's output and both gradients are live, and the arena is that.
TEST(FullEstimate, ReusesArenaIsThePeakOfLiveBytesForAnMlp) {
  const TrialSpec trial = mnist_shaped_mlp({128}, 32, OptimizerKind::sgd);
  TrainerConfig config = trainer_config(training_spec(trial), 3200, 640);
  config.memory_plan = MemoryPlan::reuse;
  const MemoryEstimate estimate = estimate_trainer(config);
  constexpr std::uint64_t kRows = 32;
  EXPECT_EQ(estimate.part(part::kStepArena).bytes, kRows * (784 + 128 + 10 + 128) * kFloat);
  EXPECT_EQ(estimate.part(part::kInputBatch).bytes, kRows * kLabel) << "the labels stay outside the arena";
  EXPECT_THROW((void)estimate.part(part::kActivations), std::out_of_range) << "in the arena";
  const MemoryEstimate keep = estimate_trial(trial, {3200, 640});
  // keep: images 784, outputs 128 + 10 + 10, gradients 128 + 10 per row;
  // the arena 784 + 128 + 10 + 128: the logits and probabilities share bytes
  // with the gradients.
  EXPECT_EQ(keep.total() - estimate.total(), kRows * (10 + 10) * kFloat);
  EXPECT_EQ(estimate.total(), predict_trainer_memory(config).total());
}

TEST(FullEstimate, EveryPlanHasItsOwnPartsAndRecomputeIsSmallestForADeepNetwork) {
  TrialSpec trial = mnist_shaped_mlp({1024, 1024}, 64, OptimizerKind::momentum);
  trial.dataset.synthetic.shape = {3, 32, 32};
  trial.model = ModelKind::alexnet;
  TrainerConfig config = trainer_config(training_spec(trial), 6400, 640);
  const MemoryEstimate keep = estimate_trainer(config);
  config.memory_plan = MemoryPlan::reuse;
  const MemoryEstimate reuse = estimate_trainer(config);
  config.memory_plan = MemoryPlan::recompute;
  const MemoryEstimate recompute = estimate_trainer(config);
  for (const MemoryEstimate* e : {&reuse, &recompute}) {
    std::vector<std::string> names;
    for (const EstimatePart& p : e->parts) names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string>{std::string(part::kParameters), std::string(part::kGradients),
                                               std::string(part::kOptimizerState), std::string(part::kStepArena),
                                               std::string(part::kInputBatch), std::string(part::kScratchpad)}));
    EXPECT_EQ(e->part(part::kParameters).bytes, keep.part(part::kParameters).bytes);
  }
  std::printf("  alexnet 3x32x32 batch 64: keep %llu B, reuse %llu B, recompute %llu B\n",
              static_cast<unsigned long long>(keep.total()), static_cast<unsigned long long>(reuse.total()),
              static_cast<unsigned long long>(recompute.total()));
  EXPECT_LT(reuse.total(), keep.total());
  EXPECT_LT(recompute.total(), reuse.total());
}

TEST(ResidentDataset, PublishedSizes) {
  DatasetSpec mnist{DatasetKind::mnist, {}};
  EXPECT_EQ(canonical_example_counts(mnist), (ExampleCounts{60000, 10000}));
  EXPECT_EQ(resident_dataset_part(mnist, canonical_example_counts(mnist)).bytes, 70000u * (784 * kFloat + kLabel));
  const DatasetSpec fashion{DatasetKind::fashion_mnist, {}};
  EXPECT_EQ(canonical_example_counts(fashion), (ExampleCounts{60000, 10000}));
  const DatasetSpec cifar{DatasetKind::cifar10, {}};
  EXPECT_EQ(canonical_example_counts(cifar), (ExampleCounts{50000, 10000}));
  EXPECT_EQ(resident_dataset_part(cifar, {4000, 1000}).bytes, 5000u * (3072 * kFloat + kLabel));
}

TEST(ResidentDataset, SyntheticMatchesWhatTheGeneratorHolds) {
  DatasetSpec spec{DatasetKind::synthetic, {}};
  spec.synthetic.shape = {3, 8, 8};
  spec.synthetic.train_size = 50;
  spec.synthetic.test_size = 20;
  EXPECT_EQ(canonical_example_counts(spec), (ExampleCounts{50, 20}));
  const Dataset data = generate_synthetic(spec.synthetic);
  EXPECT_EQ(example_counts(data), (ExampleCounts{50, 20}));
  const std::uint64_t held = (data.train.images.size() + data.test.images.size()) * kFloat +
                             (data.train.labels.size() + data.test.labels.size()) * kLabel;
  EXPECT_EQ(resident_dataset_bytes(spec.synthetic.shape, example_counts(data)), held);
}

TEST(EstimateCache, OnePredictionPerShape) {
  EstimateCache cache;
  TrialSpec a = mnist_shaped_mlp({64}, 16, OptimizerKind::sgd);
  TrialSpec b = a;
  b.learning_rate = 0.5;  // does not change memory
  b.epochs = 9;
  TrialSpec c = a;
  c.batch_size = 17;
  const std::uint64_t first = cache.estimate(a, {800, 200}).total();
  EXPECT_EQ(cache.estimate(b, {800, 200}).total(), first);
  EXPECT_EQ(cache.distinct_shapes(), 1u);
  EXPECT_EQ(cache.estimate(c, {800, 200}).total(), estimate_trial(c, {800, 200}).total());
  EXPECT_EQ(cache.distinct_shapes(), 2u);
  (void)cache.estimate(a, {801, 200});  // a training remainder of 1 row: another network
  EXPECT_EQ(cache.distinct_shapes(), 3u);
}

}  // namespace
}  // namespace memsweep
