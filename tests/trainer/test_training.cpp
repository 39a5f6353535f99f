// The training loop around the steps: phases, divergence, the stop flag,
// partial batches, memory accounting and the implementations oneDNN picks.

#include "memsweep/config.hpp"
#include "trainer/trainer_fixtures.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

SyntheticSpec small_synthetic(int train_size = 600, int test_size = 130) {
  SyntheticSpec spec;
  spec.shape = {1, 8, 8};
  spec.train_size = train_size;
  spec.test_size = test_size;
  return spec;
}

TrialSpec synthetic_trial(int epochs, int batch, double learning_rate = 0.1) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;
  trial.dataset.synthetic = small_synthetic();
  trial.hidden = {32};
  trial.epochs = epochs;
  trial.batch_size = batch;
  trial.learning_rate = learning_rate;
  return trial;
}

TEST(TrainingLoop, ReportsPhasesInOrderAndOneResultPerEpoch) {
  const Dataset data = generate_synthetic(small_synthetic());
  std::vector<std::pair<TrainingPhase, int>> phases;
  int epoch_ends = 0;
  TrainingOptions options;
  options.on_phase = [&](TrainingPhase p, int epoch) { phases.emplace_back(p, epoch); };
  options.on_epoch_end = [&](const EpochResult&) { ++epoch_ends; };
  const TrainingResult result = train_trial(training_spec(synthetic_trial(3, 64)), data, options);
  ASSERT_EQ(result.outcome, TrainingOutcome::completed);
  EXPECT_EQ(epoch_ends, 3);
  EXPECT_THAT(phases,
              ::testing::ElementsAre(std::pair{TrainingPhase::train, 1}, std::pair{TrainingPhase::evaluate, 1},
                                     std::pair{TrainingPhase::train, 2}, std::pair{TrainingPhase::evaluate, 2},
                                     std::pair{TrainingPhase::train, 3}, std::pair{TrainingPhase::evaluate, 3}));
  ASSERT_EQ(result.epochs.size(), 3u);
  for (const EpochResult& e : result.epochs) {
    EXPECT_TRUE(std::isfinite(e.train_loss));
    EXPECT_GT(e.seconds, 0.0);
    EXPECT_GE(e.test_accuracy, 0.0);
    EXPECT_LE(e.test_accuracy, 1.0);
  }
  EXPECT_LT(result.epochs.back().train_loss, result.epochs.front().train_loss) << "it learns";
}

TEST(TrainingLoop, HugeLearningRateDivergesWithAClearMessage) {
  const Dataset data = generate_synthetic(small_synthetic());
  // Weights overflow to infinity within a few steps; the loss turns NaN.
  const TrainingResult result = train_trial(training_spec(synthetic_trial(2, 16, 1e30)), data);
  EXPECT_EQ(result.outcome, TrainingOutcome::diverged);
  EXPECT_THAT(result.message, HasSubstr("the training loss became nan"));
  EXPECT_THAT(result.message, HasSubstr("learning rate 1e+30"));
  EXPECT_TRUE(result.epochs.empty()) << "it diverged within the first epoch";
}

TEST(TrainingLoop, StopFlagEndsTrainingAtTheNextStep) {
  const Dataset data = generate_synthetic(small_synthetic());
  std::atomic<bool> stop{false};
  TrainingOptions options;
  options.stop = &stop;
  options.on_epoch_end = [&](const EpochResult&) { stop = true; };
  const TrainingResult result = train_trial(training_spec(synthetic_trial(5, 32)), data, options);
  EXPECT_EQ(result.outcome, TrainingOutcome::stopped);
  EXPECT_EQ(result.epochs.size(), 1u);
  EXPECT_THAT(result.message, HasSubstr("stopped at epoch 2, step 1 of 19"));
}

TEST(TrainingLoop, BatchLargerThanTheDatasetAndPartialBatchesWork) {
  const Dataset data = generate_synthetic(small_synthetic(103, 7));
  for (const int batch : {10, 103, 500}) {
    TrialSpec trial = synthetic_trial(1, batch);
    trial.dataset.synthetic = small_synthetic(103, 7);
    const TrainingResult result = train_trial(training_spec(trial), data);
    EXPECT_EQ(result.outcome, TrainingOutcome::completed) << "batch " << batch;
  }
}

TEST(TrainingLoop, DatasetOfAnotherShapeIsRejected) {
  const Dataset data = generate_synthetic(small_synthetic());
  TrialSpec trial = synthetic_trial(1, 16);
  trial.dataset.synthetic.shape = {3, 8, 8};
  try {
    train_trial(training_spec(trial), data);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(),
                HasSubstr("the trial expects 3x8x8 images of 10 classes, the dataset synthetic has 1x8x8"));
  }
}

TEST(TrainerConfigFor, PreparesTheFullAndBothPartialBatches) {
  TrialSpec trial;
  trial.batch_size = 64;
  const TrainerConfig config = trainer_config(training_spec(trial), 1000, 300);
  EXPECT_THAT(config.train_batch_sizes, ::testing::ElementsAre(64, 1000 % 64));
  EXPECT_THAT(config.eval_batch_sizes, ::testing::ElementsAre(64, 300 % 64));
}

TEST(TrainerMemoryAccounting, OptimizerStateIsZeroOneOrTwoCopies) {
  const ModelSpec model = mlp({1, 10, 10}, {50, 20}, 10);
  const std::size_t parameters = (100 * 50 + 50) + (50 * 20 + 20) + (20 * 10 + 10);
  // oneDNN may block the weights (e.g. AB16b32a), padding each side to a
  // multiple of 32 at most; every tensor starts on a 64-byte line.
  const auto padded = [](std::size_t n) { return (n + 31) / 32 * 32; };
  const std::size_t most =
      padded(100) * padded(50) + padded(50) * padded(20) + padded(20) * padded(10) + 3 * 16 * 2 + (50 + 20 + 10);
  for (const auto& [kind, copies] :
       {std::pair{OptimizerKind::sgd, 0u}, {OptimizerKind::momentum, 1u}, {OptimizerKind::adam, 2u}}) {
    Trainer trainer(tiny_config(model, 16, kind));
    const TrainerMemory m = trainer.memory();
    EXPECT_GE(m.parameters, parameters * sizeof(float));
    EXPECT_LE(m.parameters, most * sizeof(float));
    EXPECT_EQ(m.gradients, m.parameters);
    EXPECT_EQ(m.optimizer_state, copies * m.parameters) << optimizer_name(kind);
    // Activations: 16 rows of (50 + 20 + 10) outputs and 10 probabilities.
    EXPECT_EQ(m.activations, 16 * (50 + 20 + 10 + 10) * sizeof(float));
    EXPECT_EQ(m.activation_gradients, 16 * (50 + 20 + 10) * sizeof(float));
    EXPECT_EQ(m.input_batch, 16 * 100 * sizeof(float) + 16 * sizeof(std::int32_t));
    EXPECT_EQ(m.reordered_weights, 0u) << "only convolutions reorder weights";
    EXPECT_EQ(m.total(), m.parameters + m.gradients + m.optimizer_state + m.activations + m.activation_gradients +
                             m.input_batch + m.scratchpad);
  }
}

TEST(TrainerMemoryAccounting, DryPredictionEqualsWhatATrainerHolds) {
  const std::vector<TrainerConfig> configs{
      tiny_config(mlp({1, 28, 28}, {285, 389, 423, 173, 61}, 10), 8, OptimizerKind::adam),
      tiny_config(cnn({3, 32, 32}, {{8, true}, {16, true}}, {64}, 10), 32, OptimizerKind::momentum),
      tiny_config(ModelSpec{{3, 32, 32}, 10, alexnet_conv_blocks(), {256}}, 16)};
  for (TrainerConfig config : configs) {
    config.train_batch_sizes.push_back(5);
    config.eval_batch_sizes = {config.train_batch_sizes.front(), 3};
    const TrainerMemory predicted = predict_trainer_memory(config);
    const TrainerMemory held = Trainer(config).memory();
    EXPECT_EQ(predicted.parameters, held.parameters);
    EXPECT_EQ(predicted.optimizer_state, held.optimizer_state);
    EXPECT_EQ(predicted.activations, held.activations);
    EXPECT_EQ(predicted.workspace, held.workspace);
    EXPECT_EQ(predicted.activation_gradients, held.activation_gradients);
    EXPECT_EQ(predicted.input_batch, held.input_batch);
    EXPECT_EQ(predicted.reordered_weights, held.reordered_weights);
    EXPECT_EQ(predicted.scratchpad, held.scratchpad);
    EXPECT_GT(predicted.total(), 0u);
  }
}

TEST(TrainerImplementations, NoReferenceFallbacksForTheStudiedShapes) {
  const std::vector<std::pair<ModelSpec, std::size_t>> shapes{
      {mlp({1, 28, 28}, {285, 389, 423, 173, 61}, 10), 8},
      {mlp({3, 32, 32}, {484, 195, 394, 163, 322, 126}, 10), 98},
      {cnn({3, 32, 32}, {{32, true}, {64, true}}, {128}, 10), 64},
      {cnn({1, 28, 28}, {{16, true}, {32, true}}, {128}, 10), 7},
      {cnn({3, 16, 16}, {{8, true}, {16, true}}, {32}, 10), 32},
      {cnn({1, 28, 28}, {{8, true}, {16, true}}, {64}, 10), 64},
      {cnn({3, 32, 32}, {{16, true}, {32, true}}, {128}, 10), 32},
      {ModelSpec{{3, 32, 32}, 10, alexnet_conv_blocks(), {256}}, 16},
  };
  for (const auto& [model, rows] : shapes) {
    Trainer trainer(tiny_config(model, rows));
    for (const std::string& line : trainer.implementations())
      EXPECT_THAT(line, ::testing::Not(HasSubstr("ref"))) << describe_layers(model);
  }
}

TEST(TrainerSteps, UnpreparedBatchSizeIsRejected) {
  Trainer trainer(tiny_config(mlp({1, 4, 4}, {8}, 3), 5));
  EXPECT_THROW(trainer.train_step(4), std::invalid_argument);
  EXPECT_THROW(trainer.batch_images(6), std::invalid_argument);
}

TEST(TrainerSteps, SameSeedSameWeightsAndLosses) {
  const ModelSpec model = mlp({1, 6, 6}, {16}, 4);
  Trainer a(tiny_config(model, 8)), b(tiny_config(model, 8));
  fill_random_batch(a, 8, 3);
  fill_random_batch(b, 8, 3);
  for (int step = 0; step < 5; ++step) EXPECT_EQ(a.train_step(8), b.train_step(8));
  EXPECT_EQ(a.parameter(0), b.parameter(0));
}

}  // namespace
}  // namespace memsweep::testing
