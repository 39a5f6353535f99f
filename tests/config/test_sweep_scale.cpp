// Sweeps at the size limit and past it: 10^9 trials refused at once with
// their count, 10^6 made to as many distinct ids, 10^5 explicit
// [[trial]] tables read with the right line numbers (docs/reliability.md).
// Speed is bench/bench_expand.cpp's to measure; these only have to finish.

#include "memsweep/config.hpp"
#include "memsweep/random.hpp"
#include "memsweep/results.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

namespace memsweep {
namespace {

using ::testing::HasSubstr;

// "1, 2, ..., count"
std::string numbers(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) text += fmt::format("{}{}", k, k < count ? ", " : "");
  return text;
}

// learning_rate x batch_size x epochs, 100 values each: 10^6 points.
std::string million_point_grid() {
  std::string text = "[grid]\n";
  text += "learning_rate = [" + numbers(100) + "]\n";
  text += "batch_size = [" + numbers(100) + "]\n";
  text += "epochs = [" + numbers(100) + "]\n";
  return text;
}

std::string refusal(const std::string& text) {
  try {
    parse_sweep(text, "big.toml");
  } catch (const ConfigError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

TEST(SweepScale, GridOfABillionIsRefusedWithItsSize) {
  const std::string message = refusal(million_point_grid() + "seed = [" + numbers(1000) + "]\n");
  EXPECT_THAT(message, HasSubstr("big.toml:1: grid: the grid expands to 1000000000 trials, more than 100000000"));
}

TEST(SweepScale, GridPastSixtyFourBitsIsRefusedWithItsOrderOfMagnitude) {
  // 10^4 values on each of 5 axes: 10^20 points, more than 64 bits count.
  std::string text = "[grid]\n";
  for (const char* axis : {"learning_rate", "batch_size", "epochs", "seed", "momentum"})
    text += fmt::format("{} = [{}]\n", axis, numbers(10'000));
  EXPECT_THAT(refusal(text), HasSubstr("the grid expands to about 1e+20 trials, more than 100000000"));
}

TEST(SweepScale, RandomCountOfABillionIsRefusedWithItsSize) {
  const std::string message = refusal("[random]\ncount = 1000000000\nlearning_rate = { uniform = [0.1, 0.2] }\n");
  EXPECT_THAT(message, HasSubstr("big.toml:1: the sweep defines 1000000000 trials, more than 100000000"));
}

TEST(SweepScale, GridTimesRepeatsOfABillionIsRefusedWithItsSize) {
  const std::string message = refusal("[sweep]\nrepeats = 1000\n" + million_point_grid());
  EXPECT_THAT(message,
              HasSubstr("the sweep defines 1000000 trials x 1000 repeats = 1000000000 runs, more than 100000000"));
}

// 10^18 x 100 passes 64 bits: wrapped, it could read as a small number.
TEST(SweepScale, RunsPastSixtyFourBitsAreRefusedWithTheirOrderOfMagnitude) {
  const std::string message = refusal(
      "[sweep]\nrepeats = 100\n[random]\ncount = 1000000000000000000\nlearning_rate = { uniform = [0.1, 0.2] }\n");
  EXPECT_THAT(message, HasSubstr("the sweep defines 1000000000000000000 trials x 100 repeats = about 1e+20 runs"));
}

TEST(SweepScale, GridAndRandomTogetherPastTheLimitAreRefusedWithTheirSum) {
  const std::string message = refusal(million_point_grid() + "seed = [" + numbers(100) + "]\n[random]\ncount = 1000\n");
  EXPECT_THAT(message, HasSubstr("the sweep defines 100001000 trials, more than 100000000"));
}

TEST(SweepScale, GridOfOneMillionExpandsToOneMillionDistinctIds) {
  const SweepSpec sweep = parse_sweep(million_point_grid(), "million.toml");
  ASSERT_EQ(sweep.trials.size(), 1'000'000u);
  std::unordered_set<std::string> ids;
  ids.reserve(sweep.trials.size());
  for (const TrialSpec& trial : sweep.trials) ids.insert(trial.id);
  EXPECT_EQ(ids.size(), 1'000'000u);
  // The last point: every axis at its last value, numbered last.
  const TrialSpec& last = sweep.trials.back();
  EXPECT_EQ(last.plan_index, 999'999);
  EXPECT_EQ(last.learning_rate, 100.0);
  EXPECT_EQ(last.batch_size, 100);
  EXPECT_EQ(last.epochs, 100);
  EXPECT_EQ(last.id, trial_id(last));
}

// The line of each value comes from an index of the file's lines; read
// from the start each time it made 10^5 tables take minutes. The tables
// before the last are read and built as trials before it is reached.
TEST(SweepScale, HundredThousandExplicitTrialsKeepTheirLineNumbers) {
  constexpr int kTrials = 100'000;
  std::string text = "[defaults]\ndataset = \"synthetic\"\n";
  for (int k = 0; k < kTrials - 1; ++k)
    text += fmt::format("[[trial]]\nbatch_size = {}\nepochs = {}\n", k % 512 + 1, k / 512 + 1);
  text += "[[trial]]\nepochs = 1000\nbatch_size = 0\n";
  const int bad_line = 2 + 3 * (kTrials - 1) + 3;
  try {
    parse_sweep(text, "many.toml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), bad_line);
    EXPECT_EQ(error.key(), fmt::format("trial[{}].batch_size", kTrials - 1));
    EXPECT_THAT(error.what(), HasSubstr(fmt::format("many.toml:{}: trial[{}].batch_size", bad_line, kTrials - 1)));
  }
}

// 65,536 values on one line (issue 28: toml11 scanned the whole line for
// every value's comments, 10 s for this one): each value becomes its grid
// point, and one bad value at the end is still found on its line, with
// comments on the lines around it.
TEST(SweepScale, SixtyFourThousandValuesOnOneLineAreEachATrial) {
  constexpr int kValues = 65'536;
  const std::string text =
      "[defaults]  # the values below are batch sizes\ndataset = \"synthetic\"\n[grid]\n"
      "batch_size = [" +
      numbers(kValues) + "]  # one line\n";
  const SweepSpec sweep = parse_sweep(text, "wide.toml");
  ASSERT_EQ(sweep.trials.size(), static_cast<std::size_t>(kValues));
  EXPECT_EQ(sweep.trials.front().batch_size, 1);
  EXPECT_EQ(sweep.trials.back().batch_size, kValues);
  std::unordered_set<std::string> ids;
  for (const TrialSpec& trial : sweep.trials) ids.insert(trial.id);
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(kValues));

  try {
    parse_sweep("# one\n# two\n[grid]\nbatch_size = [" + numbers(kValues) + ", 0]  # the last is bad\n", "wide.toml");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), 4);
    EXPECT_EQ(error.key(), "grid.batch_size");
    EXPECT_THAT(error.what(), HasSubstr("wide.toml:4: grid.batch_size"));
  }
}

// The line index belongs to one parsed text: the next text's lines are its own.
TEST(SweepScale, LineNumbersComeFromTheTextBeingRead) {
  for (const auto& [text, line] : {std::pair{"\n\n\n\n[[trial]]\nepochs = 0\n", 6},
                                   {"[[trial]]\nepochs = 0\n", 2},
                                   {"[[trial]]\n\n\n\nbatch_size = 1\n\nepochs = 0\n", 7}}) {
    try {
      parse_sweep(text, "lines.toml");
      ADD_FAILURE() << "expected a ConfigError";
    } catch (const ConfigError& error) {
      EXPECT_EQ(error.line(), line) << text;
    }
  }
}

// The agreement hash as it was first defined (ids sorted as text), which
// results files already hold: sorting the ids as numbers must not change it.
std::string hash_of_sorted_text(const SweepSpec& sweep) {
  std::vector<std::string> ids;
  for (const TrialSpec& trial : sweep.trials) ids.push_back(trial.id);
  std::sort(ids.begin(), ids.end());
  const std::string text = fmt::format("trials={}\ninterval_ms={}\nevents={}\n", fmt::join(ids, ","),
                                       sweep.sampler.interval_ms, fmt::join(sweep.sampler.events, ","));
  return fmt::format("{:016x}", stable_hash(text));
}

// Files written before issue 29 hold it: a resume checks it where the
// definition's hash differs (legacy_sweep_hash()).
TEST(SweepScale, LegacyAgreementHashIsTheOneOlderFilesHold) {
  SweepSpec sweep = parse_sweep(
      "[sampler]\ninterval_ms = 20\nevents = ['b', 'a']\n"
      "[random]\ncount = 5000\nlearning_rate = { log_uniform = [1e-5, 1e-1] }\n",
      "hash.toml");
  EXPECT_EQ(legacy_sweep_hash(sweep), hash_of_sorted_text(sweep));
  EXPECT_NE(sweep_hash(sweep), hash_of_sorted_text(sweep)) << "made from the definition now";
  // Ids not written by trial_id() (a hand-made trial): sorted as text.
  std::vector<TrialSpec> trials = sweep.trials.list();
  trials[7].id = "Zz";
  trials[9].id = "0123456789abcdef";
  sweep.trials = trials;
  EXPECT_EQ(legacy_sweep_hash(sweep), hash_of_sorted_text(sweep));
}

}  // namespace
}  // namespace memsweep
