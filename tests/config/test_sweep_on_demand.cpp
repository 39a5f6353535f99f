// Trials made from their positions (issue 29): each equals the trial that
// writing the sweep out by hand gives, for grids, random draws and their
// mixes, small (walked when parsed) and large (never expanded); a split
// by a grid axis is the same trials as a split that looks at each one.

#include "memsweep/config.hpp"
#include "memsweep/random.hpp"
#include "memsweep/sweep_split.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace memsweep {
namespace {

struct Axis {
  std::string field;
  std::vector<std::string> values;  // as TOML
};

std::vector<Axis> random_axes(std::mt19937& rng) {
  const std::vector<Axis> all{
      {"batch_size", {"8", "16", "32", "64", "128"}},
      {"learning_rate", {"0.1", "0.01", "0.001", "0.03"}},
      {"epochs", {"1", "2", "3"}},
      {"optimizer", {"\"sgd\"", "\"adam\"", "\"momentum\""}},
      {"hidden", {"[16]", "[32, 16]", "[64, 64, 8]"}},
      {"seed", {"1", "2", "3", "4"}},
  };
  std::vector<Axis> chosen;
  for (const Axis& axis : all) {
    if (rng() % 2 == 0) continue;
    Axis taken{axis.field, {}};
    for (const std::string& value : axis.values)
      if (taken.values.empty() || rng() % 3 != 0) taken.values.push_back(value);
    chosen.push_back(taken);
  }
  if (chosen.empty()) chosen.push_back(all[0]);
  return chosen;
}

std::string grid_text(const std::vector<Axis>& axes) {
  std::string text = "[grid]\n";
  for (const Axis& axis : axes) text += fmt::format("{} = [{}]\n", axis.field, fmt::join(axis.values, ", "));
  return text;
}

// The grid written out as [[trial]] tables by nested loops, the first axis
// outermost.
std::string tables_text(const std::vector<Axis>& axes) {
  std::size_t total = 1;
  for (const Axis& axis : axes) total *= axis.values.size();
  std::string text;
  for (std::size_t point = 0; point < total; ++point) {
    text += "[[trial]]\n";
    std::size_t inner = total;
    for (const Axis& axis : axes) {
      inner /= axis.values.size();
      text += fmt::format("{} = {}\n", axis.field, axis.values[(point / inner) % axis.values.size()]);
    }
  }
  return text;
}

std::vector<std::string> ids(const SweepTrials& trials) {
  std::vector<std::string> list;
  for (const TrialSpec& trial : trials) list.push_back(trial.id);
  return list;
}

TEST(TrialsOnDemand, GridPositionsAreThePointsWrittenOutByHand) {
  std::mt19937 rng(29);
  for (int sweep = 0; sweep < 60; ++sweep) {
    const std::vector<Axis> axes = random_axes(rng);
    const std::string defaults = sweep % 3 == 0 ? "[defaults]\nmodel = \"mlp\"\nmomentum = 0.5\n" : "";
    const std::string repeats = sweep % 4 == 0 ? "[sweep]\nrepeats = 2\n" : "";
    const SweepSpec grid = parse_sweep(repeats + defaults + grid_text(axes), "grid.toml");
    const SweepSpec by_hand = parse_sweep(repeats + defaults + tables_text(axes), "tables.toml");
    ASSERT_EQ(ids(grid.trials), ids(by_hand.trials)) << grid_text(axes);
    // Duplicates (adam ignores momentum) are left out alike, with a note each.
    EXPECT_EQ(grid.notes.size(), by_hand.notes.size()) << grid_text(axes);
    for (std::size_t position = 0; position < grid.trials.size(); ++position)
      EXPECT_EQ(grid.trials[position].plan_index, static_cast<int>(position));
  }
}

// Draw i of a field: the test's own reading of the documented streams.
double drawn_uniform(std::uint64_t seed, std::uint64_t index, std::string_view field, double low, double high) {
  ShortStreamRng rng(mix_seed(mix_seed(seed, index), stable_hash(field)));
  return rng.uniform(low, high);
}
std::int64_t drawn_whole(std::uint64_t seed, std::uint64_t index, std::string_view field, std::int64_t low,
                         std::int64_t high) {
  ShortStreamRng rng(mix_seed(mix_seed(seed, index), stable_hash(field)));
  return rng.uniform_int(low, high);
}

void expect_random_trial(const SweepSpec& sweep, std::size_t position, std::uint64_t seed) {
  const TrialSpec trial = sweep.trials.at(position);
  const auto index = static_cast<std::uint64_t>(position);
  EXPECT_DOUBLE_EQ(trial.learning_rate,
                   std::exp(drawn_uniform(seed, index, "learning_rate", std::log(1e-4), std::log(0.1))));
  EXPECT_EQ(trial.batch_size, drawn_whole(seed, index, "batch_size", 1, 100000));
  const std::vector<int> choices{16, 32, 64};
  EXPECT_EQ(trial.hidden, std::vector<int>{choices[static_cast<std::size_t>(drawn_whole(seed, index, "width", 0, 2))]});
  EXPECT_EQ(trial.origin, fmt::format("r.toml:3 random[{}]", position));
}

constexpr const char* kRandom = R"([sweep]
seed = {}
[random]
count = {}
learning_rate = {{ log_uniform = [0.0001, 0.1] }}
batch_size = {{ int_uniform = [1, 100000] }}
depth = {{ choice = [1] }}
width = {{ choice = [16, 32, 64] }}
)";

TEST(TrialsOnDemand, RandomTrialIsTheDrawOfItsIndexSmallAndLarge) {
  for (const std::size_t count : {std::size_t{50}, std::size_t{3'000'000}}) {
    const SweepSpec seeded = parse_sweep(fmt::format(kRandom, 77, count), "r.toml");
    ASSERT_EQ(seeded.trials.size(), count);
    EXPECT_EQ(seeded.trials.duplicates_known(), count <= kWalkedTrials);
    for (const std::size_t position : {std::size_t{0}, std::size_t{1}, count / 2, count - 1})
      expect_random_trial(seeded, position, 77);
  }
}

// [[trial]] tables, then the grid, then the random draws: the same trials
// as the whole list written out by hand.
TEST(TrialsOnDemand, AMixIsTablesThenGridThenRandomDraws) {
  const std::string sweep_text =
      "[sweep]\nseed = 11\nrepeats = 2\n[[trial]]\nbatch_size = 7\n[[trial]]\nbatch_size = 9\n"
      "[grid]\nbatch_size = [8, 16]\nepochs = [1, 2]\n"
      "[random]\ncount = 5\nlearning_rate = { log_uniform = [0.0001, 0.1] }\n";
  std::string by_hand = "[sweep]\nseed = 11\nrepeats = 2\n[[trial]]\nbatch_size = 7\n[[trial]]\nbatch_size = 9\n";
  for (const int batch : {8, 16})
    for (const int epochs : {1, 2}) by_hand += fmt::format("[[trial]]\nbatch_size = {}\nepochs = {}\n", batch, epochs);
  for (std::uint64_t draw = 0; draw < 5; ++draw)
    by_hand += fmt::format("[[trial]]\nlearning_rate = {}\n",
                           std::exp(drawn_uniform(11, draw, "learning_rate", std::log(1e-4), std::log(0.1))));
  const SweepSpec mixed = parse_sweep(sweep_text, "mix.toml");
  ASSERT_EQ(mixed.trials.size(), 22U);
  EXPECT_EQ(ids(mixed.trials), ids(parse_sweep(by_hand, "hand.toml").trials));
  EXPECT_EQ(mixed.trials[2].origin, "mix.toml:8 grid[0]");
  EXPECT_EQ(mixed.trials[10].origin, "mix.toml:11 random[4]");
  EXPECT_EQ(mixed.trials[21].repeat, 1);
}

// A 10^7-trial grid is parsed without making its trials: its size, and any
// trial from its position, as the small grid with the same axes has it.
TEST(TrialsOnDemand, TenMillionPointGridIsNotExpanded) {
  std::string big = "[grid]\nlearning_rate = [";
  for (int k = 1; k <= 1000; ++k) big += fmt::format("{}{}", k == 1 ? "" : ", ", k / 1000.0);
  big += "]\nbatch_size = [";
  for (int k = 1; k <= 100; ++k) big += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  big += "]\nepochs = [";
  for (int k = 1; k <= 100; ++k) big += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  big += "]\n";
  const SweepSpec sweep = parse_sweep(big, "big.toml");
  ASSERT_EQ(sweep.trials.size(), 10'000'000U);
  EXPECT_FALSE(sweep.trials.duplicates_known());
  for (const std::size_t position : {std::size_t{0}, std::size_t{123'456}, std::size_t{9'999'999}}) {
    const TrialSpec trial = sweep.trials[position];
    const double rate = static_cast<double>(position / 10'000 + 1) / 1000.0;
    const int batch = static_cast<int>(position / 100 % 100 + 1);
    const int epochs = static_cast<int>(position % 100 + 1);
    EXPECT_EQ(trial.batch_size, batch);
    EXPECT_EQ(trial.epochs, epochs);
    EXPECT_DOUBLE_EQ(trial.learning_rate, rate);
    EXPECT_EQ(trial.plan_index, static_cast<int>(position));
    // The same trial written out on its own: the same id.
    TrialSpec alone =
        trial_from_fields({{"batch_size", std::int64_t{batch}}, {"epochs", std::int64_t{epochs}}}, "x.toml");
    alone.learning_rate = rate;
    EXPECT_EQ(trial.id, trial_id(alone)) << position;
  }
  ASSERT_EQ(sweep.sections.size(), 1U);
  EXPECT_EQ(sweep.sections[0].trials, 10'000'000U);
  ASSERT_EQ(sweep.sections[0].fields.size(), 3U);
  EXPECT_THAT(sweep.sections[0].fields[0].second, ::testing::StartsWith("1000 values: 0.001, 0.002, 0.003 … 1"));
}

// A grid too large to walk: every_value() gives each kind of trial (each
// synthetic shape) but only a spread of a numeric axis's values (issue 43:
// 262,144 batch sizes were 262,144 trials, three times over); the parser
// still checks each of those values.
std::string shapes_by_batches(int batches, const std::string& bad_batch_at_middle) {
  std::string text = "[grid]\ndataset = [\"synthetic\"]\nsynthetic = [";
  for (int k = 1; k <= 20; ++k) text += fmt::format("{}{{ shape = [1, {}, 8] }}", k == 1 ? "" : ", ", k);
  text += "]\nbatch_size = [";
  for (int k = 1; k <= batches; ++k)
    text += fmt::format("{}{}", k == 1 ? "" : ", ",
                        k == batches / 2 && !bad_batch_at_middle.empty() ? bad_batch_at_middle : std::to_string(k));
  return text + "]\n";
}

TEST(TrialsOnDemand, ALargeGridListsEachKindOnceAndAFewOfItsNumbers) {
  constexpr int kBatches = 60'000;  // x 20 shapes: past kWalkedTrials
  const SweepSpec sweep = parse_sweep(shapes_by_batches(kBatches, ""), "big.toml");
  ASSERT_GT(sweep.trials.size(), kWalkedTrials);
  const std::vector<TrialSpec> listed = sweep.trials.every_value();
  std::set<std::string> shapes;
  std::set<int> batches;
  for (const TrialSpec& trial : listed) {
    shapes.insert(split_value(trial, "dataset"));
    batches.insert(trial.batch_size);
  }
  EXPECT_EQ(shapes.size(), 20U) << "every shape, each a kind of trial";
  EXPECT_THAT(shapes, ::testing::Contains("synthetic:1x20x8"));
  EXPECT_EQ(batches.size(), kCoveredNumbers) << "a spread of the batch sizes, not each";
  EXPECT_EQ(*batches.begin(), 1);
  EXPECT_EQ(*batches.rbegin(), kBatches);
  EXPECT_LT(listed.size(), 20U + kCoveredNumbers + 4U);
}

TEST(TrialsOnDemand, ALargeGridStillChecksEachOfItsNumbers) {
  try {
    (void)parse_sweep(shapes_by_batches(60'000, "-5"), "big.toml");
    FAIL() << "a batch size of -5 among 60,000 was accepted";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("big.toml:4: grid.batch_size: "));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("found -5"));
  }
}

// Split by each axis of a grid (strided positions) and by looking at every
// trial: the same parts with the same trials.
TEST(TrialsOnDemand, SplitByAGridAxisIsTheSplitThatLooksAtEveryTrial) {
  std::mt19937 rng(7);
  for (int sweep_number = 0; sweep_number < 20; ++sweep_number) {
    const std::vector<Axis> axes = random_axes(rng);
    const SweepSpec sweep = parse_sweep("[sweep]\nrepeats = 2\n" + grid_text(axes), "grid.toml");
    const std::vector<TrialSpec> all = sweep.trials.list();
    for (const std::string field : {"batch_size", "learning_rate", "epochs", "optimizer", "hidden", "repeat"}) {
      std::vector<std::string> expected_values;
      for (const TrialSpec& trial : all) {
        const std::string value = split_value(trial, field);
        if (std::find(expected_values.begin(), expected_values.end(), value) == expected_values.end())
          expected_values.push_back(value);
      }
      const std::vector<SweepPart> parts = split_sweep(sweep, field);
      ASSERT_EQ(parts.size(), expected_values.size()) << field << "\n" << grid_text(axes);
      for (std::size_t k = 0; k < parts.size(); ++k) {
        EXPECT_EQ(parts[k].value, expected_values[k]);
        std::vector<std::string> expected_ids;
        for (const TrialSpec& trial : all)
          if (split_value(trial, field) == expected_values[k]) expected_ids.push_back(trial.id);
        EXPECT_EQ(ids(parts[k].trials), expected_ids) << field << "=" << expected_values[k];
      }
    }
  }
}

// A dataset's value names its synthetic shape: a grid of shapes under one
// dataset value is split by the shapes.
TEST(TrialsOnDemand, SplitByDatasetSeesTheSyntheticShapes) {
  const SweepSpec sweep = parse_sweep(
      "[grid]\ndataset = [\"synthetic\"]\nsynthetic = [{ shape = [1, 28, 28] }, { shape = [3, 16, 16] }]\n"
      "batch_size = [32, 64]\n",
      "shapes.toml");
  const std::vector<SweepPart> parts = split_sweep(sweep, "dataset");
  ASSERT_EQ(parts.size(), 2U);
  EXPECT_EQ(parts[0].value, "synthetic:1x28x28");
  EXPECT_EQ(parts[1].value, "synthetic:3x16x16");
  EXPECT_EQ(parts[1].trials.size(), 2U);
  const std::vector<SweepPart> by_model = split_sweep(
      parse_sweep("[defaults]\nchannels = [4]\n[grid]\nmodel = [\"mlp\", \"cnn\"]\nchannels = [[4], [8]]\n", "m.toml"),
      "channels");
  ASSERT_EQ(by_model.size(), 3U);
  EXPECT_EQ(by_model[0].value, "none");
  EXPECT_EQ(by_model[0].trials.size(), 1U) << "an MLP has no channels: [4] and [8] make one trial";
}

TEST(TrialsOnDemand, ALargeGridSplitsIntoStridesWithoutMakingItsTrials) {
  std::string big = "[grid]\ndataset = [\"synthetic\", \"mnist\"]\nbatch_size = [";
  for (int k = 1; k <= 1000; ++k) big += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  big += "]\nepochs = [";
  for (int k = 1; k <= 1000; ++k) big += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  big += "]\n";
  const SweepSpec sweep = parse_sweep(big, "big.toml");
  const std::vector<SweepPart> by_batch = split_sweep(sweep, "batch_size");
  ASSERT_EQ(by_batch.size(), 1000U);
  EXPECT_EQ(by_batch[499].value, "500");
  ASSERT_EQ(by_batch[499].trials.size(), 2000U);
  for (const std::size_t k : {std::size_t{0}, std::size_t{999}, std::size_t{1000}, std::size_t{1999}}) {
    const TrialSpec trial = by_batch[499].trials[k];
    EXPECT_EQ(trial.batch_size, 500);
    EXPECT_EQ(trial.epochs, static_cast<int>(k % 1000 + 1));
    EXPECT_EQ(trial.dataset.kind, k < 1000 ? DatasetKind::synthetic : DatasetKind::mnist);
  }
  const SelectedPart part = select_part(sweep, "dataset", 1);
  EXPECT_EQ(part.sweep.trials.size(), 1'000'000U);
  EXPECT_EQ(part.sweep.part, "dataset=mnist");
  EXPECT_EQ(part.sweep.trials.back().plan_index, 1'999'999);
}

}  // namespace
}  // namespace memsweep
