// Splitting a sweep into parts by one field (sweep_split.hpp). The expected
// parts, values and labels are worked out by hand from the small sweeps
// below (grid order: the first key written varies slowest; repeats run
// repeat-major; docs/sweep-file.md).

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep_split.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace memsweep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> ids_of(const SweepTrials& trials) {
  std::vector<std::string> ids;
  for (const TrialSpec& t : trials) ids.push_back(t.id);
  return ids;
}

std::vector<std::string> values_of(const std::vector<SweepPart>& parts) {
  std::vector<std::string> values;
  for (const SweepPart& part : parts) values.push_back(part.value);
  return values;
}

std::vector<std::string> labels_of(const std::vector<SweepPart>& parts) {
  std::vector<std::string> labels;
  for (const SweepPart& part : parts) labels.push_back(part.label);
  return labels;
}

// Trials, in order: (16, mnist), (16, fashion-mnist), (64, mnist), (64, fashion-mnist).
constexpr const char* kDatasetGrid = R"(
[sweep]
name = "grid"
seed = 5
[grid]
batch_size = [16, 64]
dataset = ["mnist", "fashion-mnist"]
)";

TEST(SplitSweep, ByDatasetInOrderOfFirstAppearanceTrialsKeepTheirOrder) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  const auto& t = sweep.trials;
  const std::vector<SweepPart> parts = split_sweep(sweep, "dataset");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].field, "dataset");
  EXPECT_EQ(parts[0].value, "mnist");
  EXPECT_EQ(parts[0].label, "dataset-mnist");
  EXPECT_EQ(parts[0].name(), "dataset=mnist");
  EXPECT_THAT(ids_of(parts[0].trials), ElementsAre(t[0].id, t[2].id));
  EXPECT_EQ(parts[1].value, "fashion-mnist");
  EXPECT_EQ(parts[1].label, "dataset-fashion-mnist");
  EXPECT_THAT(ids_of(parts[1].trials), ElementsAre(t[1].id, t[3].id));
  EXPECT_EQ(parts[1].trials[0].batch_size, 16);
  EXPECT_EQ(parts[1].trials[1].batch_size, 64);
}

TEST(SplitSweep, ByBatchSize) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  const auto& t = sweep.trials;
  const std::vector<SweepPart> parts = split_sweep(sweep, "batch_size");
  EXPECT_THAT(values_of(parts), ElementsAre("16", "64"));
  EXPECT_THAT(labels_of(parts), ElementsAre("batch_size-16", "batch_size-64"));
  EXPECT_THAT(ids_of(parts[0].trials), ElementsAre(t[0].id, t[1].id));
  EXPECT_THAT(ids_of(parts[1].trials), ElementsAre(t[2].id, t[3].id));
}

TEST(SplitSweep, OnePartWhenEveryTrialHasTheSameValue) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  const std::vector<SweepPart> parts = split_sweep(sweep, "model");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].label, "model-mlp");
  EXPECT_EQ(ids_of(parts[0].trials), ids_of(sweep.trials));
}

TEST(SplitSweep, HiddenWidthsJoinedWithDashes) {
  const SweepSpec sweep = parse_sweep(R"(
[[trial]]
hidden = [128, 64]
[[trial]]
hidden = [32]
[[trial]]
hidden = [128, 64]
learning_rate = 0.1
)",
                                      "h.toml");
  ASSERT_EQ(sweep.trials.size(), 3u);
  const std::vector<SweepPart> parts = split_sweep(sweep, "hidden");
  EXPECT_THAT(values_of(parts), ElementsAre("128-64", "32"));
  EXPECT_THAT(labels_of(parts), ElementsAre("hidden-128-64", "hidden-32"));
  EXPECT_THAT(ids_of(parts[0].trials), ElementsAre(sweep.trials[0].id, sweep.trials[2].id));
  EXPECT_THAT(ids_of(parts[1].trials), ElementsAre(sweep.trials[1].id));
}

TEST(SplitSweep, SyntheticDatasetsBySizeWithAFileNameSafeLabel) {
  // The default dataset is synthetic 1x28x28; a second shape is its own part;
  // another class count with the same shape prints the same, so shares it.
  const SweepSpec sweep = parse_sweep(R"(
[[trial]]
batch_size = 8
[[trial]]
synthetic = { shape = [3, 32, 32] }
[[trial]]
synthetic = { shape = [1, 28, 28], classes = 4 }
)",
                                      "s.toml");
  ASSERT_EQ(sweep.trials.size(), 3u);
  const std::vector<SweepPart> parts = split_sweep(sweep, "dataset");
  EXPECT_THAT(values_of(parts), ElementsAre("synthetic:1x28x28", "synthetic:3x32x32"));
  EXPECT_THAT(labels_of(parts), ElementsAre("dataset-synthetic_1x28x28", "dataset-synthetic_3x32x32"));
  EXPECT_THAT(ids_of(parts[0].trials), ElementsAre(sweep.trials[0].id, sweep.trials[2].id));
}

TEST(SplitSweep, LearningRatesWithSixSignificantDigits) {
  const SweepSpec sweep =
      parse_sweep("[grid]\nlearning_rate = [0.01, 1e-5, 0.0001, 1e6, 0.123456789, 0.1234571]\n", "lr.toml");
  const std::vector<SweepPart> parts = split_sweep(sweep, "learning_rate");
  // 0.123456789 and 0.1234571 both print 0.123457: one part.
  EXPECT_THAT(values_of(parts), ElementsAre("0.01", "1e-05", "0.0001", "1e+06", "0.123457"));
  EXPECT_THAT(labels_of(parts), ElementsAre("learning_rate-0.01", "learning_rate-1e-05", "learning_rate-0.0001",
                                            "learning_rate-1e_06", "learning_rate-0.123457"));
  EXPECT_EQ(parts.back().trials.size(), 2u);
}

TEST(SplitSweep, ModelOptimizerAndChannels) {
  const SweepSpec sweep = parse_sweep(R"(
[[trial]]
model = "cnn"
channels = [8, 16]
hidden = []
optimizer = "adam"
[[trial]]
optimizer = "momentum"
[[trial]]
model = "cnn"
channels = [8]
)",
                                      "m.toml");
  ASSERT_EQ(sweep.trials.size(), 3u);
  EXPECT_THAT(values_of(split_sweep(sweep, "model")), ElementsAre("cnn", "mlp"));
  EXPECT_THAT(values_of(split_sweep(sweep, "optimizer")), ElementsAre("adam", "momentum", "sgd"));
  // An MLP has no convolution blocks, a CNN may have no hidden layer.
  EXPECT_THAT(labels_of(split_sweep(sweep, "channels")), ElementsAre("channels-8-16", "channels-none", "channels-8"));
  EXPECT_THAT(values_of(split_sweep(sweep, "hidden")), ElementsAre("none", "128"));
  EXPECT_EQ(split_value(sweep.trials[1], "channels"), "none");
}

TEST(SplitSweep, EpochsAndRepeats) {
  // Repeat-major: (e1 r0), (e2 r0), (e1 r1), (e2 r1).
  const SweepSpec sweep = parse_sweep("[sweep]\nrepeats = 2\n[grid]\nepochs = [1, 2]\n", "r.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  const auto& t = sweep.trials;
  const std::vector<SweepPart> by_repeat = split_sweep(sweep, "repeat");
  EXPECT_THAT(labels_of(by_repeat), ElementsAre("repeat-0", "repeat-1"));
  EXPECT_THAT(ids_of(by_repeat[0].trials), ElementsAre(t[0].id, t[1].id));
  EXPECT_THAT(ids_of(by_repeat[1].trials), ElementsAre(t[2].id, t[3].id));
  const std::vector<SweepPart> by_epochs = split_sweep(sweep, "epochs");
  EXPECT_THAT(labels_of(by_epochs), ElementsAre("epochs-1", "epochs-2"));
  EXPECT_THAT(ids_of(by_epochs[0].trials), ElementsAre(t[0].id, t[2].id));
  EXPECT_THAT(ids_of(by_epochs[1].trials), ElementsAre(t[1].id, t[3].id));
}

TEST(SplitSweep, AnUnknownFieldIsNamedWithTheAcceptedOnes) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  for (const char* field : {"depth", "batch", "", "Dataset", "seed"}) {
    SCOPED_TRACE(field);
    try {
      split_sweep(sweep, field);
      ADD_FAILURE() << "no error";
    } catch (const InputError& error) {
      EXPECT_THAT(error.what(), HasSubstr(std::string("\"") + field + "\""));
      EXPECT_THAT(error.what(), HasSubstr("dataset, model, optimizer, learning_rate, epochs, batch_size, hidden, "
                                          "channels, memory_plan, repeat, params.NAME"));
    }
  }
  EXPECT_THROW(split_value(sweep.trials[0], "width"), InputError);
}

TEST(SelectPart, TheSweepWithOnlyThatPartsTrials) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  const SelectedPart selected = select_part(sweep, "dataset", 1);
  EXPECT_EQ(selected.index, 1);
  EXPECT_EQ(selected.count, 2);
  EXPECT_EQ(selected.part.name(), "dataset=fashion-mnist");
  EXPECT_EQ(selected.part.label, "dataset-fashion-mnist");
  EXPECT_THAT(ids_of(selected.sweep.trials), ElementsAre(sweep.trials[1].id, sweep.trials[3].id));
  // A part's trials keep the whole sweep's numbers (memsweep plan's order).
  ASSERT_EQ(selected.sweep.trials.size(), 2u);
  EXPECT_EQ(selected.sweep.trials[0].plan_index, 1);
  EXPECT_EQ(selected.sweep.trials[1].plan_index, 3);
  // Everything else is the sweep's: the results file keeps the whole text.
  EXPECT_EQ(selected.sweep.name, "grid");
  EXPECT_EQ(selected.sweep.seed, 5u);
  EXPECT_EQ(selected.sweep.source_text, sweep.source_text);
  EXPECT_EQ(selected.sweep.sampler.interval_ms, sweep.sampler.interval_ms);
}

TEST(SelectPart, EachPartHasItsOwnSweepHash) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  const std::string whole = sweep_hash(sweep);
  const std::string first = sweep_hash(select_part(sweep, "dataset", 0).sweep);
  const std::string second = sweep_hash(select_part(sweep, "dataset", 1).sweep);
  EXPECT_NE(first, whole);
  EXPECT_NE(second, whole);
  EXPECT_NE(first, second);
  EXPECT_EQ(first, sweep_hash(select_part(sweep, "dataset", 0).sweep));
}

TEST(SelectPart, OutOfRangeNamesTheOptionAndTheRange) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  for (const int index : {2, -1, 1000}) {
    try {
      select_part(sweep, "dataset", index);
      ADD_FAILURE() << "no error for " << index;
    } catch (const InputError& error) {
      EXPECT_EQ(std::string(error.what()),
                "--part " + std::to_string(index) + ": the sweep has 2 parts by dataset (0..1)");
    }
  }
  try {
    select_part(sweep, "model", 1);
    ADD_FAILURE() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(std::string(error.what()), "--part 1: the sweep has 1 part by model (0..0)");
  }
  EXPECT_THROW(select_part(sweep, "depth", 0), InputError);
}

TEST(SelectNamedPart, AppliesWhatAResultsFileRecords) {
  const SweepSpec sweep = parse_sweep(kDatasetGrid, "grid.toml");
  EXPECT_THAT(ids_of(select_named_part(sweep, "dataset=mnist").trials),
              ElementsAre(sweep.trials[0].id, sweep.trials[2].id));
  EXPECT_THAT(ids_of(select_named_part(sweep, "batch_size=64").trials),
              ElementsAre(sweep.trials[2].id, sweep.trials[3].id));
  EXPECT_THROW(select_named_part(sweep, "dataset"), InputError);
  EXPECT_THROW(select_named_part(sweep, "dataset=cifar-10"), InputError);
  EXPECT_THROW(select_named_part(sweep, "depth=2"), InputError);
}

// A program's parameter as the split field (issue 43: --split-by params.bptt
// was "not a field"): a grid axis of it is split in strides like any other;
// each part's value is the parameter's text, its label file-name safe.
constexpr const char* kParamsGrid = R"(
[sweep]
name = "wlm"
seed = 3
[programs.wlm]
command = ["sh", "-c", "exit 0", "{bptt}", "{emsize}"]
[defaults]
program = "wlm"
[grid]
params.bptt = [35, 70, 140]
params.emsize = [200, 650]
)";

TEST(SplitSweep, ByAProgramsParameterOfAGridAxis) {
  const SweepSpec sweep = parse_sweep(kParamsGrid, "wlm.toml");
  ASSERT_EQ(sweep.trials.size(), 6u);
  const auto& t = sweep.trials;
  const std::vector<SweepPart> parts = split_sweep(sweep, "params.bptt");
  EXPECT_THAT(values_of(parts), ElementsAre("35", "70", "140"));
  EXPECT_THAT(labels_of(parts), ElementsAre("params.bptt-35", "params.bptt-70", "params.bptt-140"));
  EXPECT_EQ(parts[1].name(), "params.bptt=70");
  EXPECT_THAT(ids_of(parts[1].trials), ElementsAre(t[2].id, t[3].id));
  const std::vector<SweepPart> inner = split_sweep(sweep, "params.emsize");
  EXPECT_THAT(values_of(inner), ElementsAre("200", "650"));
  EXPECT_THAT(ids_of(inner[1].trials), ElementsAre(t[1].id, t[3].id, t[5].id));
  EXPECT_EQ(split_value(t[5], "params.bptt"), "140");
  // As summary applies a results file's part attribute.
  EXPECT_THAT(ids_of(select_named_part(sweep, "params.bptt=140").trials), ElementsAre(t[4].id, t[5].id));
  const SelectedPart selected = select_part(sweep, "params.emsize", 0);
  EXPECT_EQ(selected.sweep.part, "params.emsize=200");
  EXPECT_EQ(selected.count, 2);
}

// Trials without the parameter (the built-in trainer's, another program's)
// are a part of their own, never merged with a value's; a parameter that no
// trial has is refused (a typo would otherwise be one part of everything).
TEST(SplitSweep, ByAParameterSomeTrialsLack) {
  const SweepSpec sweep = parse_sweep(R"(
[sweep]
name = "mixed"
seed = 3
[programs.wlm]
command = ["sh", "-c", "exit 0", "{arch}"]
[[trial]]
program = "wlm"
params = { arch = "lstm" }
[[trial]]
dataset = "synthetic"
[[trial]]
program = "wlm"
params = { arch = "none" }
[[trial]]
program = "wlm"
params = { arch = "lstm", layers = [2, 4] }
)",
                                      "mixed.toml");
  ASSERT_EQ(sweep.trials.size(), 4u);
  const auto& t = sweep.trials;
  const std::vector<SweepPart> parts = split_sweep(sweep, "params.arch");
  EXPECT_THAT(values_of(parts), ElementsAre("lstm", "(none)", "none"));
  EXPECT_THAT(ids_of(parts[0].trials), ElementsAre(t[0].id, t[3].id));
  EXPECT_THAT(ids_of(parts[1].trials), ElementsAre(t[1].id));
  // A list's text is its placeholder's: comma-separated; the label has _ for the comma.
  const std::vector<SweepPart> layers = split_sweep(sweep, "params.layers");
  EXPECT_THAT(values_of(layers), ElementsAre("(none)", "2,4"));
  EXPECT_THAT(labels_of(layers), ElementsAre("params.layers-_none_", "params.layers-2_4"));
  for (const char* field : {"params.dropout", "params.", "params"}) {
    SCOPED_TRACE(field);
    try {
      split_sweep(sweep, field);
      ADD_FAILURE() << "no error";
    } catch (const InputError& error) {
      EXPECT_THAT(error.what(), HasSubstr("--split-by"));
      EXPECT_THAT(error.what(), HasSubstr(field));
    }
  }
  try {
    split_sweep(sweep, "params.dropout");
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("no trial of the sweep has a parameter dropout"));
  }
}

}  // namespace
}  // namespace memsweep
