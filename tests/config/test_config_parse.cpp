// What a sweep file says ends up in the trials: sections, defaults, fields.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace memsweep {
namespace {

using ::testing::ElementsAre;

TEST(SweepParse, SweepSectionAndSampler) {
  const SweepSpec sweep = parse_sweep(R"(
[sweep]
name = "table1"
seed = 42
repeats = 3
[sampler]
interval_ms = 2
events = ["PAPI_L1_DCM", "perf::PAGE-FAULTS"]
counter_source = "kernel"
[[trial]]
hidden = [8]
)",
                                      "s.toml");
  EXPECT_EQ(sweep.name, "table1");
  EXPECT_EQ(sweep.seed, 42u);
  EXPECT_EQ(sweep.repeats, 3);
  EXPECT_EQ(sweep.sampler.interval_ms, 2);
  EXPECT_THAT(sweep.sampler.events, ElementsAre("PAPI_L1_DCM", "perf::PAGE-FAULTS"));
  EXPECT_EQ(sweep.sampler.counter_source, CounterSourceChoice::kernel);
  EXPECT_EQ(sweep.trials.size(), 3u);
  EXPECT_EQ(sweep.source_name, "s.toml");
  EXPECT_THAT(sweep.source_text, ::testing::HasSubstr("name = \"table1\""));
}

TEST(SweepParse, NameDefaultsToFileStemAndSeedToZero) {
  const SweepSpec sweep = parse_sweep("[[trial]]\n", "dir/my-sweep.toml");
  EXPECT_EQ(sweep.name, "my-sweep");
  EXPECT_EQ(sweep.seed, 0u);
  EXPECT_EQ(sweep.repeats, 1);
  EXPECT_EQ(sweep.sampler.interval_ms, kDefaultSamplerIntervalMs);
  EXPECT_EQ(sweep.sampler.counter_source, CounterSourceChoice::automatic) << "PAPI first, then the kernel";
}

TEST(SweepParse, TrialFieldsOverrideDefaults) {
  const SweepSpec sweep = parse_sweep(R"(
[sweep]
seed = 9
[defaults]
dataset = "fashion-mnist"
optimizer = "adam"
learning_rate = 0.001
epochs = 4
batch_size = 16
hidden = [32]
[[trial]]
batch_size = 64
[[trial]]
dataset = "cifar-10"
optimizer = "momentum"
momentum = 0.5
hidden = [100, 50]
seed = 3
mem_budget = "1.5GiB"
)",
                                      "s.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  const TrialSpec& a = sweep.trials[0];
  EXPECT_EQ(a.dataset.kind, DatasetKind::fashion_mnist);
  EXPECT_EQ(a.optimizer.kind, OptimizerKind::adam);
  EXPECT_DOUBLE_EQ(a.learning_rate, 0.001);
  EXPECT_EQ(a.epochs, 4);
  EXPECT_EQ(a.batch_size, 64);
  EXPECT_THAT(a.hidden, ElementsAre(32));
  EXPECT_EQ(a.seed, 9u) << "a trial's seed defaults to the sweep's";
  EXPECT_FALSE(a.mem_budget_bytes.has_value());
  EXPECT_EQ(a.origin, "s.toml:11 trial[0]");

  const TrialSpec& b = sweep.trials[1];
  EXPECT_EQ(b.dataset.kind, DatasetKind::cifar10);
  EXPECT_EQ(b.optimizer.kind, OptimizerKind::momentum);
  EXPECT_DOUBLE_EQ(b.optimizer.momentum, 0.5);
  EXPECT_EQ(b.batch_size, 16);
  EXPECT_THAT(b.hidden, ElementsAre(100, 50));
  EXPECT_EQ(b.seed, 3u);
  ASSERT_TRUE(b.mem_budget_bytes.has_value());
  EXPECT_EQ(*b.mem_budget_bytes, 1610612736u);
}

TEST(SweepParse, SyntheticShapeAndCnnChannels) {
  const SweepSpec sweep = parse_sweep(R"(
[[trial]]
dataset = "synthetic"
synthetic = { shape = [3, 32, 32], classes = 4, train_size = 100, test_size = 20, noise = 0.25, seed = 5 }
model = "cnn"
channels = [16, 32]
hidden = []
)",
                                      "s.toml");
  const TrialSpec& t = sweep.trials.at(0);
  EXPECT_EQ(t.model, ModelKind::cnn);
  EXPECT_THAT(t.channels, ElementsAre(16, 32));
  EXPECT_TRUE(t.hidden.empty()) << "a CNN may go straight from its last block to the classes";
  const SyntheticSpec& s = t.dataset.synthetic;
  EXPECT_EQ(s.shape, (ImageShape{3, 32, 32}));
  EXPECT_EQ(s.classes, 4);
  EXPECT_EQ(s.train_size, 100);
  EXPECT_EQ(s.test_size, 20);
  EXPECT_DOUBLE_EQ(s.noise, 0.25);
  EXPECT_EQ(s.seed, 5u);
  EXPECT_EQ(input_shape(t.dataset), (ImageShape{3, 32, 32}));
  EXPECT_EQ(class_count(t.dataset), 4);
}

TEST(SweepParse, RealDatasetsHaveTheirOwnShapes) {
  const SweepSpec sweep = parse_sweep(R"(
[grid]
dataset = ["mnist", "cifar-10"]
)",
                                      "s.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  EXPECT_EQ(input_shape(sweep.trials[0].dataset), (ImageShape{1, 28, 28}));
  EXPECT_EQ(input_shape(sweep.trials[1].dataset), (ImageShape{3, 32, 32}));
  EXPECT_EQ(class_count(sweep.trials[1].dataset), 10);
}

TEST(SweepParse, IntegerLearningRateIsAccepted) {
  const SweepSpec sweep = parse_sweep("[[trial]]\nlearning_rate = 1\n", "s.toml");
  EXPECT_DOUBLE_EQ(sweep.trials.at(0).learning_rate, 1.0);
}

TEST(SweepParse, MemoryBudgetAsBytesOrWithUnits) {
  const SweepSpec sweep = parse_sweep(R"(
[[trial]]
mem_budget = 1048576
[[trial]]
mem_budget = "512MiB"
hidden = [2]
[[trial]]
mem_budget = "2 GB"
hidden = [3]
)",
                                      "s.toml");
  ASSERT_EQ(sweep.trials.size(), 3u);
  EXPECT_EQ(sweep.trials[0].mem_budget_bytes, 1048576u);
  EXPECT_EQ(sweep.trials[1].mem_budget_bytes, 512u * 1024 * 1024);
  EXPECT_EQ(sweep.trials[2].mem_budget_bytes, 2'000'000'000u);
}

}  // namespace
}  // namespace memsweep
