// keep, reuse and recompute train the same arithmetic: the same losses and
// parameters, bit for bit, step after step, with freed arena bytes poisoned
// (MEMSWEEP_POISON_FREED_BUFFERS), so a buffer read after its bytes went to
// another shows as NaN at once. And the arena is what makes reuse smaller.

#include "memsweep/trainer.hpp"
#include "trainer/trainer_fixtures.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

namespace memsweep::testing {
namespace {

// The guard on for this process (trainers read it when built).
class PoisonFreedBuffers : public ::testing::Environment {
 public:
  void SetUp() override { setenv("MEMSWEEP_POISON_FREED_BUFFERS", "1", 1); }
};
const auto* const kPoison = ::testing::AddGlobalTestEnvironment(new PoisonFreedBuffers);

struct PlanCase {
  const char* name;
  ModelSpec model;
  std::size_t batch, partial;
  OptimizerKind optimizer;
  int steps;
};

void PrintTo(const PlanCase& c, std::ostream* os) { *os << c.name; }

struct PlanRun {
  std::vector<double> losses;
  std::size_t correct = 0;
  std::vector<std::vector<float>> parameters;
};

// Full and partial batches in turn, each filled just before its step (the
// arena's images hold a batch only until the step has read them), then an
// evaluation batch.
PlanRun run_plan(const PlanCase& c, MemoryPlan plan, int recompute_every) {
  TrainerConfig config = tiny_config(c.model, c.batch, c.optimizer, 0.01);
  config.train_batch_sizes.push_back(c.partial);
  config.eval_batch_sizes = {c.batch + 1};
  config.memory_plan = plan;
  config.recompute_every = recompute_every;
  Trainer trainer(config);
  PlanRun result;
  for (int i = 0; i < c.steps; ++i) {
    const std::size_t rows = i % 3 == 2 ? c.partial : c.batch;
    fill_random_batch(trainer, rows, 100 + static_cast<std::uint64_t>(i));
    result.losses.push_back(trainer.train_step(rows));
  }
  fill_random_batch(trainer, c.batch + 1, 99);
  result.correct = trainer.evaluate_step(c.batch + 1);
  for (std::size_t t = 0; t < trainer.tensor_count(); ++t) result.parameters.push_back(trainer.parameter(t));
  return result;
}

class SameArithmetic : public ::testing::TestWithParam<PlanCase> {};

TEST_P(SameArithmetic, EveryPlanGivesKeepsLossesAndParametersBitForBit) {
  const PlanCase& c = GetParam();
  const PlanRun keep = run_plan(c, MemoryPlan::keep, kRecomputeEveryDefault);
  for (const double loss : keep.losses) ASSERT_TRUE(std::isfinite(loss));
  struct Other {
    const char* name;
    MemoryPlan plan;
    int every;
  };
  for (const Other& other :
       {Other{"reuse", MemoryPlan::reuse, 0}, Other{"recompute", MemoryPlan::recompute, 0},
        Other{"recompute every 2", MemoryPlan::recompute, 2}, Other{"recompute every 1", MemoryPlan::recompute, 1}}) {
    SCOPED_TRACE(other.name);
    const PlanRun r = run_plan(c, other.plan, other.every);
    ASSERT_EQ(r.losses.size(), keep.losses.size());
    for (std::size_t i = 0; i < keep.losses.size(); ++i) EXPECT_EQ(r.losses[i], keep.losses[i]) << "step " << i;
    EXPECT_EQ(r.correct, keep.correct);
    ASSERT_EQ(r.parameters.size(), keep.parameters.size());
    for (std::size_t t = 0; t < keep.parameters.size(); ++t)
      EXPECT_TRUE(r.parameters[t] == keep.parameters[t]) << "tensor " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, SameArithmetic,
    ::testing::Values(
        PlanCase{"mlp", mlp({1, 28, 28}, {64, 48, 32}, 10), 16, 5, OptimizerKind::momentum, 6},
        PlanCase{"cnn", cnn({3, 16, 16}, {{8, true}, {16, true}}, {32}, 10), 8, 3, OptimizerKind::adam, 6},
        PlanCase{"alexnet_like", cnn({3, 32, 32}, alexnet_conv_blocks(), {64, 64}, 10), 4, 2, OptimizerKind::sgd, 3}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// The guard itself: after a step, the bytes of a buffer whose last step has
// run are NaN. The MLP's batch images are last read by the first layer's
// weight gradient, the backward pass's last step, so nothing overwrites them.
TEST(PoisonGuard, FillsABuffersBytesWithNanOnceItsLastStepHasRun) {
  TrainerConfig config = tiny_config(mlp({1, 8, 8}, {16}, 4), 8);
  config.memory_plan = MemoryPlan::reuse;
  Trainer trainer(config);
  fill_random_batch(trainer, 8, 1);
  EXPECT_TRUE(std::isfinite(trainer.train_step(8)));
  for (const float pixel : trainer.batch_images(8)) ASSERT_TRUE(std::isnan(pixel));

  unsetenv("MEMSWEEP_POISON_FREED_BUFFERS");
  Trainer unguarded(config);
  setenv("MEMSWEEP_POISON_FREED_BUFFERS", "1", 1);
  fill_random_batch(unguarded, 8, 1);
  unguarded.train_step(8);
  for (const float pixel : unguarded.batch_images(8)) ASSERT_FALSE(std::isnan(pixel)) << "without the guard";
}

// Under keep nothing is poisoned: every buffer has bytes of its own.
TEST(PoisonGuard, LeavesKeepAlone) {
  Trainer trainer(tiny_config(mlp({1, 8, 8}, {16}, 4), 8));
  fill_random_batch(trainer, 8, 1);
  trainer.train_step(8);
  for (const float pixel : trainer.batch_images(8)) ASSERT_FALSE(std::isnan(pixel));
}

TEST(MemoryPlans, ReuseHoldsLessThanKeepAndRecomputeLessThanReuse) {
  // AlexNet-like at batch 64 on 32x32 images: predicted, nothing allocated.
  TrainerConfig config = tiny_config(cnn({3, 32, 32}, alexnet_conv_blocks(), {1024, 1024}, 10), 64);
  config.eval_batch_sizes = {64};
  const TrainerMemory keep = predict_trainer_memory(config);
  config.memory_plan = MemoryPlan::reuse;
  const TrainerMemory reuse = predict_trainer_memory(config);
  config.memory_plan = MemoryPlan::recompute;
  const TrainerMemory recompute = predict_trainer_memory(config);
  const std::size_t transient = keep.activations + keep.workspace + keep.activation_gradients + keep.input_batch +
                                keep.reordered_weights - 64 * sizeof(std::int32_t);
  std::printf("  transient buffers: keep %zu B, reuse arena %zu B, recompute arena %zu B\n", transient,
              reuse.step_arena, recompute.step_arena);
  EXPECT_GT(reuse.step_arena, 0u);
  EXPECT_LT(reuse.step_arena, transient);
  EXPECT_LT(recompute.step_arena, reuse.step_arena);
  EXPECT_EQ(reuse.activations + reuse.workspace + reuse.activation_gradients + reuse.reordered_weights, 0u);
  EXPECT_EQ(reuse.parameters, keep.parameters);
  EXPECT_EQ(reuse.scratchpad, keep.scratchpad);
}

// The prediction wires the same plans without buffers or primitives and asks
// the same planner: the arena it predicts is the trainer's, to the byte.
TEST(MemoryPlans, TheTrainerHoldsWhatThePredictionSays) {
  for (const ModelSpec& model :
       {cnn({3, 16, 16}, {{8, true}, {16, false}}, {32}, 10), cnn({3, 32, 32}, alexnet_conv_blocks(), {64, 64}, 10)}) {
    for (const MemoryPlan plan : {MemoryPlan::reuse, MemoryPlan::recompute}) {
      TrainerConfig config = tiny_config(model, 4);
      config.train_batch_sizes.push_back(3);
      config.eval_batch_sizes = {5, 2};
      config.memory_plan = plan;
      const Trainer trainer(config);
      const TrainerMemory built = trainer.memory(), predicted = predict_trainer_memory(config);
      EXPECT_EQ(built.step_arena, predicted.step_arena) << memory_plan_name(plan);
      EXPECT_EQ(built.total(), predicted.total()) << memory_plan_name(plan);
    }
  }
}

}  // namespace
}  // namespace memsweep::testing
