// Seeded randomness must be the same everywhere and behave like its
// distribution.

#include "memsweep/random.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace memsweep {
namespace {

TEST(StableHash, MatchesPublishedFnv1aVectors) {
  // Test vectors of the FNV-1a 64-bit reference (Fowler, Noll, Vo).
  EXPECT_EQ(stable_hash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(stable_hash("foobar"), 0x85944171f73967e8ULL);
}

TEST(Rng, FirstOutputIsTheStandardsMt19937_64Value) {
  // The C++ standard fixes the 10000th output of a default-seeded mt19937_64.
  Rng rng(5489u);
  std::uint64_t value = 0;
  for (int i = 0; i < 10000; ++i) value = rng.next();
  EXPECT_EQ(value, 9981545732273789042ULL);
}

// The random search's per-field streams: the standard engine's outputs,
// through the short path (the first 156) and past it.
TEST(ShortStreamMt19937_64, GivesTheStandardEnginesOutputs) {
  for (const std::uint64_t seed : {0ULL, 1ULL, 5489ULL, 0x9e3779b97f4a7c15ULL, ~0ULL}) {
    std::mt19937_64 standard(seed);
    ShortStreamMt19937_64 short_stream(seed);
    for (int k = 0; k < 700; ++k) ASSERT_EQ(short_stream(), standard()) << "seed " << seed << ", output " << k;
  }
}

TEST(Rng, UniformIntCoversTheClosedRangeEvenly) {
  Rng rng(1);
  std::vector<int> counts(6, 0);
  constexpr int kDraws = 60000;
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<std::size_t>(rng.uniform_int(1, 6) - 1)];
  for (int c : counts) EXPECT_NEAR(c, kDraws / 6, 400);  // about 4 standard deviations
}

TEST(Rng, UniformStaysInHalfOpenRange) {
  Rng rng(2);
  double low = 1.0, high = 0.0, sum = 0.0;
  constexpr int kDraws = 100000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = rng.uniform(0.25, 0.75);
    ASSERT_GE(x, 0.25);
    ASSERT_LT(x, 0.75);
    low = std::min(low, x);
    high = std::max(high, x);
    sum += x;
  }
  EXPECT_NEAR(sum / kDraws, 0.5, 0.003);
  EXPECT_LT(low, 0.2501);
  EXPECT_GT(high, 0.7499);
}

TEST(Rng, NormalHasUnitMomentsAndIsFinite) {
  Rng rng(3);
  double sum = 0.0, squares = 0.0;
  constexpr int kDraws = 200000;
  for (int i = 0; i < kDraws; ++i) {
    const double x = rng.normal();
    ASSERT_TRUE(std::isfinite(x));
    sum += x;
    squares += x * x;
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.01);
  EXPECT_NEAR(squares / kDraws, 1.0, 0.01);
}

TEST(MixSeed, NeighbouringStreamsDiffer) {
  std::set<std::uint64_t> seeds;
  for (std::uint64_t stream = 0; stream < 1000; ++stream) seeds.insert(mix_seed(7, stream));
  EXPECT_EQ(seeds.size(), 1000u);
  EXPECT_NE(mix_seed(7, 0), mix_seed(8, 0));
}

}  // namespace
}  // namespace memsweep
