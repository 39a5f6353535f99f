// The arena planner as the pure function it is: small schedules whose best
// arena is known, and random ones checked for overlap and bounds.

#include "trainer/arena_planner.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace memsweep::trainer::detail {
namespace {

constexpr std::size_t kA = kArenaAlignment;

std::size_t sum_rounded(const std::vector<ArenaBuffer>& buffers) {
  return std::accumulate(buffers.begin(), buffers.end(), std::size_t{0},
                         [](std::size_t sum, const ArenaBuffer& b) { return sum + arena_rounded(b.bytes); });
}

// Two buffers live at one step must not share a byte; every offset aligned.
void expect_valid(const std::vector<ArenaBuffer>& buffers, const ArenaPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u) << "buffer " << i;
    EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.bytes) << "buffer " << i << " ends past the arena";
    for (std::size_t j = i + 1; j < buffers.size(); ++j) {
      const bool live_together = buffers[i].first <= buffers[j].last && buffers[j].first <= buffers[i].last;
      const bool share_bytes =
          plan.offsets[i] < plan.offsets[j] + buffers[j].bytes && plan.offsets[j] < plan.offsets[i] + buffers[i].bytes;
      if (buffers[i].bytes > 0 && buffers[j].bytes > 0) {
        EXPECT_FALSE(live_together && share_bytes) << "buffers " << i << " and " << j;
      }
    }
  }
}

TEST(ArenaPlanner, AChainNeedsOnlyItsLargestNeighbouringPair) {
  // A forward chain: each output read by the next step only.
  const std::vector<ArenaBuffer> chain{{2 * kA, 0, 1}, {3 * kA, 1, 2}, {5 * kA, 2, 3}, {kA, 3, 4}};
  const ArenaPlan plan = plan_arena(chain);
  expect_valid(chain, plan);
  EXPECT_EQ(peak_live_bytes(chain), 8 * kA);
  EXPECT_EQ(plan.bytes, 8 * kA) << "the peak of live bytes is reachable here";
  EXPECT_LT(plan.bytes, sum_rounded(chain)) << "keep's sum is 11 lines";
}

TEST(ArenaPlanner, ForwardAndBackwardLifetimesNest) {
  // Activations a0..a2 written forward (steps 0..2), read again backward
  // (steps 6..4); gradients g2, g1 live for one backward step each.
  const std::vector<ArenaBuffer> schedule{{4 * kA, 0, 6}, {4 * kA, 1, 5}, {4 * kA, 2, 4},
                                          {2 * kA, 3, 4}, {2 * kA, 4, 5}, {2 * kA, 5, 6}};
  const ArenaPlan plan = plan_arena(schedule);
  expect_valid(schedule, plan);
  EXPECT_EQ(peak_live_bytes(schedule), 16 * kA);
  EXPECT_EQ(plan.bytes, 16 * kA);
}

TEST(ArenaPlanner, DisjointLifetimesShareOneRegion) {
  const std::vector<ArenaBuffer> schedule{{7 * kA, 0, 0}, {7 * kA, 1, 1}, {3 * kA, 2, 2}};
  const ArenaPlan plan = plan_arena(schedule);
  expect_valid(schedule, plan);
  EXPECT_EQ(plan.bytes, 7 * kA);
  EXPECT_EQ(plan.offsets, (std::vector<std::size_t>{0, 0, 0}));
}

TEST(ArenaPlanner, SizesAreRoundedToCacheLines) {
  const std::vector<ArenaBuffer> schedule{{1, 0, 1}, {65, 0, 1}, {64, 1, 2}};
  const ArenaPlan plan = plan_arena(schedule);
  expect_valid(schedule, plan);
  EXPECT_EQ(plan.bytes, 4 * kA) << "1 B takes a line, 65 B two, 64 B one: all live at step 1";
}

TEST(ArenaPlanner, EmptyBuffersTakeNoBytes) {
  const std::vector<ArenaBuffer> schedule{{0, 0, 9}, {kA, 0, 9}};
  EXPECT_EQ(plan_arena(schedule).bytes, kA);
  EXPECT_EQ(plan_arena({}).bytes, 0u);
}

TEST(ArenaPlanner, RejectsALifetimeThatEndsBeforeItStarts) {
  EXPECT_THROW(plan_arena({{kA, 3, 2}}), std::invalid_argument);
}

TEST(ArenaPlanner, RandomSchedulesNeverOverlapAndStayWithinBounds) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    std::vector<ArenaBuffer> buffers(1 + rng() % 40);
    for (ArenaBuffer& b : buffers) {
      b.bytes = rng() % 5000;
      b.first = rng() % 30;
      b.last = b.first + rng() % 10;
    }
    const ArenaPlan plan = plan_arena(buffers);
    SCOPED_TRACE(round);
    expect_valid(buffers, plan);
    EXPECT_GE(plan.bytes, peak_live_bytes(buffers));
    EXPECT_LE(plan.bytes, sum_rounded(buffers));
  }
}

}  // namespace
}  // namespace memsweep::trainer::detail
