// Expansion of [[trial]], [grid] and [random] into trials, and the ids they get.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

namespace memsweep {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> ids_of(const SweepSpec& sweep) {
  std::vector<std::string> ids;
  for (const TrialSpec& t : sweep.trials) ids.push_back(t.id);
  return ids;
}

std::map<std::string, std::string> canonical_by_id(const SweepSpec& sweep) {
  std::map<std::string, std::string> out;
  for (const TrialSpec& t : sweep.trials) out[t.id] = t.canonical_text();
  return out;
}

TEST(GridExpansion, CartesianProductFirstWrittenAxisSlowest) {
  const SweepSpec sweep = parse_sweep(R"(
[grid]
dataset = ["mnist", "fashion-mnist"]
batch_size = [16, 64, 256]
)",
                                      "g.toml");
  ASSERT_EQ(sweep.trials.size(), 6u);
  std::vector<std::pair<DatasetKind, int>> seen;
  for (const TrialSpec& t : sweep.trials) seen.emplace_back(t.dataset.kind, t.batch_size);
  EXPECT_THAT(seen, ElementsAre(std::pair{DatasetKind::mnist, 16}, std::pair{DatasetKind::mnist, 64},
                                std::pair{DatasetKind::mnist, 256}, std::pair{DatasetKind::fashion_mnist, 16},
                                std::pair{DatasetKind::fashion_mnist, 64}, std::pair{DatasetKind::fashion_mnist, 256}));
  EXPECT_EQ(sweep.trials[4].origin, "g.toml:2 grid[4]");
}

TEST(GridExpansion, OrderFollowsTheFileNotTheKeyNames) {
  // By name batch_size would come first; written first, learning_rate varies slowest.
  const SweepSpec sweep = parse_sweep("[grid]\nlearning_rate = [0.1, 0.2]\nbatch_size = [1, 2]\n", "g.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  EXPECT_DOUBLE_EQ(sweep.trials[0].learning_rate, 0.1);
  EXPECT_DOUBLE_EQ(sweep.trials[1].learning_rate, 0.1);
  EXPECT_EQ(sweep.trials[0].batch_size, 1);
  EXPECT_EQ(sweep.trials[1].batch_size, 2);
}

TEST(GridExpansion, DepthAndWidthBuildHiddenLists) {
  const SweepSpec sweep = parse_sweep("[grid]\ndepth = [1, 3]\nwidth = [10, 20]\n", "g.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  EXPECT_THAT(sweep.trials[0].hidden, ElementsAre(10));
  EXPECT_THAT(sweep.trials[1].hidden, ElementsAre(20));
  EXPECT_THAT(sweep.trials[2].hidden, ElementsAre(10, 10, 10));
  EXPECT_THAT(sweep.trials[3].hidden, ElementsAre(20, 20, 20));
}

TEST(GridExpansion, GridValuesOverrideDefaults) {
  const SweepSpec sweep = parse_sweep("[defaults]\nepochs = 7\nbatch_size = 3\n[grid]\nbatch_size = [5]\n", "g.toml");
  ASSERT_EQ(sweep.trials.size(), 1u);
  EXPECT_EQ(sweep.trials[0].epochs, 7);
  EXPECT_EQ(sweep.trials[0].batch_size, 5);
}

constexpr const char* kRandomSweep = R"(
[sweep]
seed = %SEED%
[random]
count = %COUNT%
learning_rate = { log_uniform = [1e-4, 0.1] }
momentum = { uniform = [0.5, 0.9] }
epochs = { int_uniform = [1, 3] }
dataset = { choice = ["mnist", "fashion-mnist", "cifar-10"] }
depth = { int_uniform = [1, 9] }
width = { int_uniform = [5, 500] }
batch_size = 32
)";

std::string random_sweep(int seed, int count, const std::string& extra = "") {
  std::string text = kRandomSweep;
  text.replace(text.find("%SEED%"), 6, std::to_string(seed));
  text.replace(text.find("%COUNT%"), 7, std::to_string(count));
  return text + extra;
}

TEST(RandomExpansion, DrawsStayInTheirRanges) {
  const SweepSpec sweep = parse_sweep(random_sweep(7, 400), "r.toml");
  ASSERT_EQ(sweep.trials.size(), 400u);
  std::set<int> epochs, depths;
  std::set<DatasetKind> datasets;
  int below_1e3 = 0;
  for (const TrialSpec& t : sweep.trials) {
    EXPECT_GE(t.learning_rate, 1e-4);
    EXPECT_LT(t.learning_rate, 0.1);
    if (t.learning_rate < 1e-3) ++below_1e3;
    EXPECT_GE(t.optimizer.momentum, 0.5);
    EXPECT_LT(t.optimizer.momentum, 0.9);
    EXPECT_EQ(t.batch_size, 32) << "a plain value in [random] is fixed";
    epochs.insert(t.epochs);
    datasets.insert(t.dataset.kind);
    depths.insert(static_cast<int>(t.hidden.size()));
    for (int w : t.hidden) {
      EXPECT_GE(w, 5);
      EXPECT_LE(w, 500);
    }
  }
  EXPECT_EQ(epochs, (std::set<int>{1, 2, 3})) << "int_uniform includes both ends";
  EXPECT_EQ(depths.size(), 9u);
  EXPECT_EQ(datasets.size(), 3u);
  // log-uniform: a third of the log-range [1e-4, 1e-3) holds about a third of the draws.
  EXPECT_GT(below_1e3, 400 / 3 - 50);
  EXPECT_LT(below_1e3, 400 / 3 + 50);
}

TEST(RandomExpansion, DeterministicForAFileAndSeed) {
  EXPECT_EQ(canonical_by_id(parse_sweep(random_sweep(7, 50), "r.toml")),
            canonical_by_id(parse_sweep(random_sweep(7, 50), "other-name.toml")));
  EXPECT_NE(ids_of(parse_sweep(random_sweep(7, 50), "r.toml")), ids_of(parse_sweep(random_sweep(8, 50), "r.toml")));
}

TEST(RandomExpansion, RaisingCountKeepsEarlierDraws) {
  const auto fifty = ids_of(parse_sweep(random_sweep(7, 50), "r.toml"));
  const auto sixty = ids_of(parse_sweep(random_sweep(7, 60), "r.toml"));
  ASSERT_EQ(sixty.size(), 60u);
  EXPECT_TRUE(std::equal(fifty.begin(), fifty.end(), sixty.begin()));
}

TEST(RandomExpansion, AddingAFieldLeavesOtherDrawsAlone) {
  const SweepSpec before = parse_sweep(random_sweep(7, 20), "r.toml");
  const SweepSpec after = parse_sweep(random_sweep(7, 20, "beta1 = { uniform = [0.8, 0.95] }\n"), "r.toml");
  for (std::size_t i = 0; i < before.trials.size(); ++i) {
    EXPECT_EQ(before.trials[i].learning_rate, after.trials[i].learning_rate);
    EXPECT_EQ(before.trials[i].hidden, after.trials[i].hidden);
    EXPECT_EQ(before.trials[i].dataset.kind, after.trials[i].dataset.kind);
  }
}

TEST(MixedSweep, ExplicitThenGridThenRandom) {
  const SweepSpec sweep = parse_sweep(R"(
[random]
count = 2
learning_rate = { uniform = [0.01, 0.02] }
[grid]
batch_size = [8, 9]
[[trial]]
batch_size = 1
)",
                                      "m.toml");
  ASSERT_EQ(sweep.trials.size(), 5u);
  EXPECT_EQ(sweep.trials[0].batch_size, 1);
  EXPECT_EQ(sweep.trials[1].batch_size, 8);
  EXPECT_EQ(sweep.trials[2].batch_size, 9);
  EXPECT_GE(sweep.trials[3].learning_rate, 0.01);
  EXPECT_LT(sweep.trials[4].learning_rate, 0.02);
}

TEST(TrialIds, StableWhenTheFileIsReorderedOrEdited) {
  const SweepSpec original = parse_sweep(R"(
[[trial]]
learning_rate = 0.1
hidden = [10]
[[trial]]
learning_rate = 0.2
hidden = [20]
)",
                                         "a.toml");
  const SweepSpec edited = parse_sweep(R"(
# a comment, another trial first, and the old ones swapped
[sweep]
name = "renamed"
[[trial]]
learning_rate = 0.3
hidden = [30]
[[trial]]
hidden = [20]
learning_rate = 0.2
[[trial]]
hidden = [10]
learning_rate = 0.1
)",
                                       "b.toml");
  EXPECT_EQ(edited.trials[2].id, original.trials[0].id);
  EXPECT_EQ(edited.trials[1].id, original.trials[1].id);
  EXPECT_NE(edited.trials[0].id, original.trials[0].id);
}

TEST(TrialIds, SameTrialFromDefaultsOrGridHasTheSameId) {
  const auto a = parse_sweep("[defaults]\nbatch_size = 64\n[[trial]]\n", "a.toml");
  const auto b = parse_sweep("[grid]\nbatch_size = [64]\n", "b.toml");
  EXPECT_EQ(a.trials.at(0).id, b.trials.at(0).id);
}

TEST(TrialIds, UnusedOptimizerParametersDoNotChangeTheId) {
  const auto plain = parse_sweep("[[trial]]\noptimizer = 'sgd'\n", "a.toml");
  const auto with_momentum = parse_sweep("[[trial]]\noptimizer = 'sgd'\nmomentum = 0.3\n", "a.toml");
  EXPECT_EQ(plain.trials.at(0).id, with_momentum.trials.at(0).id);
  const auto momentum_a = parse_sweep("[[trial]]\noptimizer = 'momentum'\nmomentum = 0.3\n", "a.toml");
  const auto momentum_b = parse_sweep("[[trial]]\noptimizer = 'momentum'\nmomentum = 0.4\n", "a.toml");
  EXPECT_NE(momentum_a.trials.at(0).id, momentum_b.trials.at(0).id);
}

TEST(TrialIds, EveryDefiningFieldChangesTheId) {
  const std::string base = "[[trial]]\ndataset = 'synthetic'\nmodel = 'cnn'\nchannels = [4]\noptimizer = 'adam'\n";
  const std::string base_id = parse_sweep(base, "a.toml").trials.at(0).id;
  for (const std::string extra :
       {"learning_rate = 0.5", "epochs = 3", "batch_size = 7", "hidden = [9]", "seed = 11", "beta1 = 0.5",
        "beta2 = 0.5", "epsilon = 1e-3", "synthetic = { classes = 3 }", "synthetic = { seed = 2 }"}) {
    EXPECT_NE(parse_sweep(base + extra + "\n", "a.toml").trials.at(0).id, base_id) << extra;
  }
  EXPECT_NE(parse_sweep("[[trial]]\nchannels = [4]\nmodel = 'cnn'\nhidden = [9]\n", "a.toml").trials.at(0).id,
            parse_sweep("[[trial]]\nchannels = [5]\nmodel = 'cnn'\nhidden = [9]\n", "a.toml").trials.at(0).id);
}

TEST(TrialIds, MemoryBudgetIsNotPartOfTheTrial) {
  EXPECT_EQ(parse_sweep("[[trial]]\n", "a.toml").trials.at(0).id,
            parse_sweep("[[trial]]\nmem_budget = '1GiB'\n", "a.toml").trials.at(0).id);
}

TEST(TrialIds, TimeLimitIsNotPartOfTheTrial) {
  const SweepSpec sweep = parse_sweep(
      "[[trial]]\n[[trial]]\ntimeout = '1h30m'\n[[trial]]\ntimeout = 90\n[[trial]]\ntimeout = 2.5\n", "a.toml");
  ASSERT_EQ(sweep.trials.size(), 1u) << "the same trial four times, merged";
  const SweepSpec one = parse_sweep("[defaults]\ntimeout = '1h30m'\n[[trial]]\n", "a.toml");
  ASSERT_TRUE(one.trials.at(0).timeout_seconds.has_value());
  EXPECT_EQ(*one.trials.at(0).timeout_seconds, 5400.0);
  EXPECT_EQ(*parse_sweep("[[trial]]\ntimeout = 90\n", "a.toml").trials.at(0).timeout_seconds, 90.0);
  EXPECT_EQ(*parse_sweep("[[trial]]\ntimeout = 2.5\n", "a.toml").trials.at(0).timeout_seconds, 2.5);
  EXPECT_FALSE(parse_sweep("[[trial]]\n", "a.toml").trials.at(0).timeout_seconds.has_value());
}

TEST(Repeats, RepeatMajorOrderDistinctIdsAndSeeds) {
  const SweepSpec sweep = parse_sweep("[sweep]\nrepeats = 3\n[grid]\nbatch_size = [1, 2]\n", "r.toml");
  ASSERT_EQ(sweep.trials.size(), 6u);
  std::set<std::string> ids;
  std::set<std::uint64_t> seeds;
  for (std::size_t i = 0; i < sweep.trials.size(); ++i) {
    const TrialSpec& t = sweep.trials[i];
    EXPECT_EQ(t.repeat, static_cast<int>(i / 2));
    EXPECT_EQ(t.batch_size, static_cast<int>(i % 2) + 1);
    EXPECT_EQ(t.plan_index, static_cast<int>(i)) << "the plan's numbering counts repeats";
    ids.insert(t.id);
    if (t.batch_size == 1) seeds.insert(t.training_seed());
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(seeds.size(), 3u) << "each repeat trains with its own seed";
}

TEST(Duplicates, TheSameTrialTwiceRunsOnceWithANote) {
  const SweepSpec sweep = parse_sweep("[[trial]]\nbatch_size = 4\n[grid]\nbatch_size = [4, 8]\n", "d.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  ASSERT_EQ(sweep.notes.size(), 1u);
  EXPECT_THAT(sweep.notes[0], ::testing::HasSubstr("d.toml:3 grid[0] defines the same trial as d.toml:1 trial[0]"));
  EXPECT_EQ(sweep.trials[1].plan_index, 1) << "the duplicate takes no number";
}

TEST(TrialIds, TwelveHexDigits) {
  const std::string id = parse_sweep("[[trial]]\n", "a.toml").trials.at(0).id;
  EXPECT_THAT(id, ::testing::MatchesRegex("[0-9a-f]{12}"));
}

}  // namespace
}  // namespace memsweep
