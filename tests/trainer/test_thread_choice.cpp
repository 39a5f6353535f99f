// The threads a trainer's steps run with: the choice as a pure function of a
// step's work, and a real Trainer running with what it chose.

#include "memsweep/random.hpp"
#include "memsweep/trainer.hpp"
#include "trainer/thread_choice.hpp"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace memsweep::testing {
namespace {

using trainer::detail::kMinFlopsPerThread;
using trainer::detail::step_flops;
using trainer::detail::threads_for_work;

ModelSpec mlp(std::vector<int> hidden, int input = 784) {
  ModelSpec model;
  model.input = {1, 1, input};
  model.classes = 10;
  model.hidden = std::move(hidden);
  return model;
}

TEST(StepFlops, CountsEveryInnerProductForwardAndBothBackwardsButTheFirstLayersData) {
  // 784-128-10: forward 784*128 + 128*10 multiply-adds an example; backward
  // weights the same; backward data only the output layer's 128*10.
  const double forward = 784.0 * 128 + 128.0 * 10;
  EXPECT_DOUBLE_EQ(step_flops(mlp({128}), 1, false), 2 * forward);
  EXPECT_DOUBLE_EQ(step_flops(mlp({128}), 1, true), 2 * (forward + 128.0 * 10 + forward));
  EXPECT_DOUBLE_EQ(step_flops(mlp({128}), 32, true), 32 * step_flops(mlp({128}), 1, true));
}

TEST(StepFlops, CountsConvolutionsAtTheImageSizeTheyRunAt) {
  ModelSpec model;
  model.input = {3, 8, 8};
  model.classes = 10;
  model.conv = {{4, true}, {6, false}};
  model.hidden = {5};
  // conv1: 4 out x 3 in x 9 taps x 8x8 pixels; pool -> 4x4; conv2: 6 x 4 x 9
  // x 4x4; fc 96 -> 5; output 5 -> 10.
  const double conv1 = 4.0 * 3 * 9 * 64, conv2 = 6.0 * 4 * 9 * 16, fc = 96.0 * 5, out = 5.0 * 10;
  const double forward = conv1 + conv2 + fc + out;
  EXPECT_DOUBLE_EQ(step_flops(model, 2, false), 2 * 2 * forward);
  EXPECT_DOUBLE_EQ(step_flops(model, 2, true), 2 * 2 * (forward + (forward - conv1) + forward));
}

TEST(ThreadsForWork, OneThreadUntilEachThreadWouldHaveItsShare) {
  EXPECT_EQ(threads_for_work(0.0, 2), 1);
  EXPECT_EQ(threads_for_work(1.99 * kMinFlopsPerThread, 2), 1);
  EXPECT_EQ(threads_for_work(2.0 * kMinFlopsPerThread, 2), 2);
  EXPECT_EQ(threads_for_work(2.0 * kMinFlopsPerThread, 16), 2);
  EXPECT_EQ(threads_for_work(7.5 * kMinFlopsPerThread, 16), 7);
  EXPECT_EQ(threads_for_work(1e15, 16), 16) << "never more than given";
}

TEST(ThreadsForWork, AlwaysAtLeastOneThreadWhateverItIsGiven) {
  EXPECT_EQ(threads_for_work(1e15, 1), 1);
  EXPECT_EQ(threads_for_work(1e15, 0), 1);
  EXPECT_EQ(threads_for_work(1e15, -3), 1);
  EXPECT_EQ(threads_for_work(std::numeric_limits<double>::quiet_NaN(), 8), 1);
  EXPECT_EQ(threads_for_work(-1.0, 8), 1);
}

TEST(ThreadsForWork, MoreWorkOrMoreThreadsGivenNeverMeansFewerThreads) {
  for (int given = 1; given <= 64; given *= 2) {
    int last = 1;
    for (double flops = 1e5; flops < 1e12; flops *= 1.3) {
      const int threads = threads_for_work(flops, given);
      EXPECT_GE(threads, last) << flops << " FLOP, " << given << " given";
      EXPECT_LE(threads, given);
      EXPECT_GE(threads, threads_for_work(flops, given / 2 > 0 ? given / 2 : 1));
      last = threads;
    }
  }
}

// Measured on the quiet AMD EPYC VM (docs/trainer.md): 2 threads lost at
// 784-32-10 batch 8, broke even at 784-128-10 batch 8, won from batch 16 and
// at every shape of the benchmark, batch 8 included.
TEST(ThreadsForWork, OnlyStepsThatTwoThreadsDidNotSpeedUpGetOne) {
  EXPECT_EQ(threads_for_work(step_flops(mlp({32}), 8, true), 2), 1);
  EXPECT_EQ(threads_for_work(step_flops(mlp({128}), 8, true), 2), 1);
  EXPECT_EQ(threads_for_work(step_flops(mlp({128}), 16, true), 2), 2);
  EXPECT_EQ(threads_for_work(step_flops(mlp({285, 389, 423, 173, 61}), 8, true), 2), 2);
  EXPECT_EQ(threads_for_work(step_flops(mlp({484, 195, 394, 163, 322, 126}, 3072), 8, true), 2), 2);
}

TrainerConfig config_for(const ModelSpec& model, std::vector<std::size_t> batches,
                         StepThreads step_threads = StepThreads::fit_to_work) {
  TrainerConfig config;
  config.model = model;
  config.learning_rate = 0.05;
  config.seed = 7;
  config.train_batch_sizes = std::move(batches);
  config.step_threads = step_threads;
  return config;
}

void fill_batch(Trainer& trainer, std::size_t rows) {
  Rng rng(3);
  for (float& x : trainer.batch_images(rows)) x = static_cast<float>(rng.normal());
  for (std::int32_t& y : trainer.batch_labels(rows)) y = static_cast<std::int32_t>(rng.uniform_int(0, 9));
}

// Restores OpenMP's thread count of the test process when a test ends.
class WithThreads {
 public:
  explicit WithThreads(int threads) : previous_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~WithThreads() { omp_set_num_threads(previous_); }

 private:
  int previous_;
};

TEST(TrainerThreads, EachBatchSizeGetsTheThreadsItsWorkKeepsBusy) {
  const WithThreads given(2);
  // 784-32-10: batch 8 is 0.8 MFLOP a step, batch 256 26 MFLOP.
  Trainer trainer(config_for(mlp({32}), {256, 8}));
  EXPECT_EQ(trainer.step_threads(8), 1);
  EXPECT_EQ(trainer.step_threads(256), 2);
  Trainer all(config_for(mlp({32}), {256, 8}, StepThreads::all));
  EXPECT_EQ(all.step_threads(8), 2);
  EXPECT_EQ(all.step_threads(256), 2);
}

TEST(TrainerThreads, TheCallersThreadCountIsWhatItWasAfterEveryStep) {
  const WithThreads given(2);
  Trainer trainer(config_for(mlp({64}), {8}));
  ASSERT_EQ(trainer.step_threads(8), 1);
  fill_batch(trainer, 8);
  trainer.train_step(8);
  EXPECT_EQ(omp_get_max_threads(), 2);
  trainer.evaluate_step(8);
  trainer.loss(8);
  trainer.compute_gradients(8);
  EXPECT_EQ(omp_get_max_threads(), 2);
  // So a second trainer of the same config, built after the first has run,
  // is given (and chooses) the same threads.
  Trainer second(config_for(mlp({512, 256}), {256}));
  EXPECT_EQ(second.step_threads(256), 2);
}

TEST(TrainerThreads, TheMostAStepUsesIsTheCountWhenTheTrainerWasBuilt) {
  std::unique_ptr<Trainer> trainer;
  {
    const WithThreads given(1);
    trainer = std::make_unique<Trainer>(config_for(mlp({512, 256}), {256}));
  }
  const WithThreads later(2);
  EXPECT_EQ(trainer->step_threads(256), 1) << "its primitives were made for 1";
}

// A trainer that chose 1 thread out of 2 computes what a trainer given 1
// thread computes: the choice is in force when the primitives are made and
// when they run.
TEST(TrainerThreads, ChosenOneThreadComputesWhatOneThreadGivenComputes) {
  const ModelSpec model = mlp({128, 64});  // 3.6 MFLOP at batch 8: 1 thread
  const auto losses = [&](int given, StepThreads step_threads) {
    const WithThreads threads(given);
    Trainer trainer(config_for(model, {8}, step_threads));
    EXPECT_EQ(trainer.step_threads(8), 1);
    fill_batch(trainer, 8);
    std::vector<double> out;
    for (int step = 0; step < 5; ++step) out.push_back(trainer.train_step(8));
    out.push_back(trainer.parameter(0)[123]);
    return out;
  };
  EXPECT_EQ(losses(2, StepThreads::fit_to_work), losses(1, StepThreads::all));
}

// The OS threads of this process: libgomp starts its workers at the first
// parallel region of more than one thread, and oneDNN runs a primitive on
// the calling thread alone when its count is 1.
std::size_t process_threads() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++count;
  return count;
}

// Run in a fresh process (a death test re-executes the binary), where no
// OpenMP team has started yet: steps that chose 1 thread start no worker;
// a step that chose 2 starts one.
TEST(TrainerThreadsDeathTest, StepsRunWithTheThreadsChosenForThem) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto run = [] {
    omp_set_num_threads(2);
    const std::size_t before = process_threads();
    Trainer small(config_for(mlp({64}), {8}));
    fill_batch(small, 8);
    for (int step = 0; step < 3; ++step) small.train_step(8);
    if (small.step_threads(8) != 1 || process_threads() != before) std::_Exit(2);
    Trainer large(config_for(mlp({512, 256}), {256}));
    fill_batch(large, 256);
    large.train_step(256);
    if (large.step_threads(256) != 2 || process_threads() != before + 1) std::_Exit(3);
    std::_Exit(0);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace memsweep::testing
