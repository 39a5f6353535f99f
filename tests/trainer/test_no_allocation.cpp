// After the first steps, a training step allocates nothing: the heap and the
// resident set stay flat, step after step, for an MLP and a CNN, and for the
// partial last batch.

#include "trainer/alloc_counter.hpp"
#include "trainer/trainer_fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace memsweep::testing {
namespace {

// Rounds of 4 steps before counting. Under reuse a fresh process's resident
// set still grew by 11 pages (44 KiB, once, not per step) after 3 rounds;
// after 10 it is as flat as keep's.
constexpr int kWarmupSteps = 10;
constexpr int kMeasuredSteps = 40;

std::int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

struct AllocationCase {
  const char* name;
  ModelSpec model;
  std::size_t batch, partial;
  OptimizerKind optimizer;
  MemoryPlan plan = MemoryPlan::keep;
};

void PrintTo(const AllocationCase& c, std::ostream* os) { *os << c.name; }

class NoAllocation : public ::testing::TestWithParam<AllocationCase> {};

TEST_P(NoAllocation, TrainingStepsLeaveHeapAndRssFlat) {
  const AllocationCase& c = GetParam();
  TrainerConfig config = tiny_config(c.model, c.batch, c.optimizer, 0.01);
  config.train_batch_sizes.push_back(c.partial);
  config.memory_plan = c.plan;
  Trainer trainer(config);
  // Under reuse and recompute the images share the arena: refilled before
  // each step (outside the counts), as the training loop gathers them.
  const auto rows_of = [&](int i) { return i % 4 == 3 ? c.partial : c.batch; };
  const auto fill = [&](int i) { fill_random_batch(trainer, rows_of(i), static_cast<std::uint64_t>(i % 4)); };
  const auto step = [&](int i) { trainer.train_step(rows_of(i)); };
  for (int i = 0; i < kWarmupSteps * 4; ++i) {
    fill(i);
    step(i);
  }

  std::vector<std::uint64_t> per_step;
  per_step.reserve(kMeasuredSteps);
  const AllocationCounts before = allocation_counts();
  const std::int64_t rss_before = resident_bytes();
  for (int i = 0; i < kMeasuredSteps; ++i) {
    fill(i);
    const std::uint64_t start = allocation_counts().allocations;
    step(i);
    per_step.push_back(allocation_counts().allocations - start);
  }
  const AllocationCounts after = allocation_counts();
  const std::int64_t rss_after = resident_bytes();

  std::printf(
      "  %s: %s allocations per step (first %llu, last %llu), heap %+lld bytes, RSS %+lld bytes over %d steps\n",
      c.name, fmt::format("{}", fmt::join(per_step.begin(), per_step.begin() + 4, " ")).c_str(),
      static_cast<unsigned long long>(per_step.front()), static_cast<unsigned long long>(per_step.back()),
      static_cast<long long>(after.live_bytes - before.live_bytes), static_cast<long long>(rss_after - rss_before),
      kMeasuredSteps);
  EXPECT_EQ(after.live_bytes, before.live_bytes) << "the heap grew while training";
  EXPECT_LE(rss_after - rss_before, 64 * 1024) << "the resident set grew while training";
  // oneDNN 2.6 allocates (and frees) a small map of arguments inside every
  // primitive run; that count is the same at every step of the same batch
  // size, and memsweep's own code adds none (next test).
  for (std::size_t i = 4; i < per_step.size(); ++i) EXPECT_EQ(per_step[i], per_step[i - 4]) << "step " << i;
}

// The parts of a step that are memsweep's own: the batch gather, the loss and
// the optimizer update, run alone.
TEST(NoAllocationOwnCode, GatherLossAndUpdateAllocateNothing) {
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::adam}) {
    Trainer trainer(tiny_config(mlp({1, 8, 8}, {16}, 4), 8, kind));
    SyntheticSpec spec;
    spec.shape = {1, 8, 8};
    spec.classes = 4;
    spec.train_size = 40;
    const Dataset data = generate_synthetic(spec);
    BatchOrder order(data.train.size(), 8, 1);
    trainer.train_step(8);  // first steps may set up OpenMP's thread team
    const std::uint64_t before = allocation_counts().allocations;
    for (int epoch = 0; epoch < 3; ++epoch) {
      order.start_epoch(epoch);
      for (std::size_t b = 0; b < order.batch_count(); ++b)
        order.gather(b, data.train, trainer.batch_images(8), trainer.batch_labels(8));
    }
    EXPECT_EQ(allocation_counts().allocations, before) << "gather";
    trainer.compute_gradients(8);
    const std::uint64_t forward_backward = allocation_counts().allocations - before;
    const std::uint64_t start = allocation_counts().allocations;
    trainer.train_step(8);
    EXPECT_EQ(allocation_counts().allocations - start, forward_backward)
        << optimizer_name(kind) << ": a step allocates exactly what forward and backward's primitive runs do";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, NoAllocation,
    ::testing::Values(AllocationCase{"mlp_sgd", mlp({1, 28, 28}, {128, 64}, 10), 32, 7, OptimizerKind::sgd},
                      AllocationCase{"mlp_adam", mlp({1, 28, 28}, {128}, 10), 32, 5, OptimizerKind::adam},
                      AllocationCase{"cnn_momentum", cnn({3, 16, 16}, {{8, true}, {16, true}}, {32}, 10), 16, 3,
                                     OptimizerKind::momentum},
                      AllocationCase{"mlp_adam_reuse", mlp({1, 28, 28}, {128, 64}, 10), 32, 5, OptimizerKind::adam,
                                     MemoryPlan::reuse},
                      AllocationCase{"cnn_momentum_reuse", cnn({3, 16, 16}, {{8, true}, {16, true}}, {32}, 10), 16, 3,
                                     OptimizerKind::momentum, MemoryPlan::reuse},
                      AllocationCase{"mlp_sgd_recompute", mlp({1, 28, 28}, {128, 64, 32}, 10), 32, 7,
                                     OptimizerKind::sgd, MemoryPlan::recompute},
                      AllocationCase{"cnn_momentum_recompute", cnn({3, 16, 16}, {{8, true}, {16, true}}, {32}, 10), 16,
                                     3, OptimizerKind::momentum, MemoryPlan::recompute}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
