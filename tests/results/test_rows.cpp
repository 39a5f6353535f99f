// The rows' pure parts: statuses, fixed strings, a trial's row from its
// spec, a sample's row from the sampler's sample, and the sweep's hash.

#include "memsweep/results.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

using ::testing::ElementsAre;

struct StatusCase {
  TrialStatus status;
  std::string_view name;
  bool final;
};

class StatusNames : public ::testing::TestWithParam<StatusCase> {};

TEST_P(StatusNames, NameParsesBackAndFinalityIsAsDocumented) {
  const StatusCase& c = GetParam();
  EXPECT_EQ(status_name(c.status), c.name);
  EXPECT_EQ(parse_status(c.name), c.status);
  EXPECT_EQ(is_final(c.status), c.final);
  EXPECT_NE(kStatusNames.find(c.name), std::string_view::npos);
}

INSTANTIATE_TEST_SUITE_P(EveryStatus, StatusNames,
                         ::testing::Values(StatusCase{TrialStatus::ok, "ok", true},
                                           StatusCase{TrialStatus::failed, "failed", true},
                                           StatusCase{TrialStatus::diverged, "diverged", true},
                                           StatusCase{TrialStatus::over_budget, "over_budget", true},
                                           StatusCase{TrialStatus::interrupted, "interrupted", false},
                                           StatusCase{TrialStatus::killed, "killed", false}));

TEST(StatusNames, UnknownNamesDoNotParse) {
  EXPECT_EQ(parse_status(""), std::nullopt);
  EXPECT_EQ(parse_status("OK"), std::nullopt);
  EXPECT_EQ(parse_status("over-budget"), std::nullopt);
}

TEST(FixedString, ShortTextIsNulPaddedAndReadBack) {
  FixedString<8> field;
  field.fill('x');
  set_fixed(field, "abc");
  EXPECT_EQ(get_fixed(field), "abc");
  EXPECT_EQ(field[3], '\0');
  EXPECT_EQ(field[7], '\0');
}

TEST(FixedString, TextOfExactlyTheWidthFillsEveryByte) {
  FixedString<kTrialIdChars> field;
  set_fixed(field, "0123456789ab");
  EXPECT_EQ(get_fixed(field), "0123456789ab");
}

TEST(FixedString, LongTextIsCutOnACharacterBoundary) {
  FixedString<4> field;
  set_fixed(field, "ab\xC3\xA9z");  // "abéz": é is 2 bytes at 2..3, fits exactly
  EXPECT_EQ(get_fixed(field), "ab\xC3\xA9");
  set_fixed(field, "abc\xC3\xA9");  // é would straddle the cut
  EXPECT_EQ(get_fixed(field), "abc");
  set_fixed(field, "a\xE2\x82\xAC\xE2\x82\xAC");  // "a€€": the second € does not fit
  EXPECT_EQ(get_fixed(field), "a\xE2\x82\xAC");
}

SweepSpec example_sweep(std::string_view extra = "") {
  std::string text = R"([sweep]
name = "rows"
seed = 5
repeats = 2
[sampler]
interval_ms = 10
events = ["PAPI_L1_DCM", "perf::PAGE-FAULTS"]
[[trial]]
dataset = "mnist"
model = "mlp"
optimizer = "adam"
learning_rate = 0.25
epochs = 3
batch_size = 16
hidden = [30, 20, 10]
[[trial]]
dataset = "cifar-10"
model = "cnn"
channels = [8, 16]
hidden = [64]
)";
  text += extra;
  return parse_sweep(text, "rows.toml");
}

TrialSpec find_trial(const SweepSpec& sweep, ModelKind model, int repeat) {
  for (const TrialSpec& trial : sweep.trials)
    if (trial.model == model && trial.repeat == repeat) return trial;
  throw std::logic_error("no such trial in the example sweep");
}

TEST(TrialRowFor, CopiesIdentityAndHyperparameters) {
  const SweepSpec sweep = example_sweep();
  ASSERT_EQ(sweep.trials.size(), 4u);
  const TrialSpec& trial = find_trial(sweep, ModelKind::mlp, 1);
  const TrialRow row = trial_row_for(trial, 2);
  EXPECT_EQ(get_fixed(row.trial_id), trial.id);
  EXPECT_EQ(row.attempt, 2);
  EXPECT_EQ(row.repeat, 1);
  EXPECT_EQ(row.plan_index, 2) << "repeat-major: mlp, cnn, then the mlp's second repeat";
  EXPECT_EQ(get_fixed(row.dataset), "mnist");
  EXPECT_EQ(get_fixed(row.model), "mlp");
  EXPECT_EQ(get_fixed(row.optimizer), "adam");
  EXPECT_EQ(row.learning_rate, 0.25);
  EXPECT_EQ(row.epochs, 3);
  EXPECT_EQ(row.batch_size, 16);
  EXPECT_EQ(row.depth, 3);
  EXPECT_THAT(row.hidden, ElementsAre(30, 20, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(row.channels, ElementsAre(0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_EQ(row.seed, trial.seed);
  EXPECT_EQ(get_fixed(row.definition), trial.canonical_text());
  // Nothing measured yet.
  EXPECT_EQ(get_fixed(row.status), "");
  EXPECT_EQ(row.rss_peak, -1);
  EXPECT_EQ(row.rank, -1);
}

TEST(TrialRowFor, ConvolutionChannelsForACnn) {
  const SweepSpec sweep = example_sweep();
  const TrialRow row = trial_row_for(find_trial(sweep, ModelKind::cnn, 0), 0);
  EXPECT_EQ(get_fixed(row.dataset), "cifar-10");
  EXPECT_EQ(get_fixed(row.model), "cnn");
  EXPECT_THAT(row.channels, ElementsAre(8, 16, 0, 0, 0, 0, 0, 0));
  EXPECT_EQ(row.depth, 1);
  EXPECT_EQ(row.hidden[0], 64);
}

TEST(SampleRowOf, MovesCountersToTheFilesColumnOrder) {
  Sample sample;
  sample.t_ns = 1'500'000'000;
  sample.epoch = 4;
  sample.phase = sample_phase::kEvaluating;
  sample.rss_bytes = 111;
  sample.anon_rss_bytes = 222;
  sample.pss_bytes = 333;
  sample.sys_used_bytes = 444;
  sample.sys_total_bytes = 777;
  sample.sys_available_bytes = 555;
  sample.sys_active_bytes = 666;
  sample.counters[0] = 10;  // "a"
  sample.counters[1] = 20;  // "b"
  sample.counters[2] = 30;  // "c"
  const std::vector<std::string> sampler{"a", "b", "c"};
  const std::vector<std::string> columns{"c", "missing", "a"};
  const SampleRow row = sample_row(sample, sampler, columns);
  EXPECT_DOUBLE_EQ(row.t, 1.5);
  EXPECT_EQ(row.epoch, 4);
  EXPECT_EQ(row.phase, 2);
  EXPECT_EQ(row.rss, 111);
  EXPECT_EQ(row.anon_rss, 222);
  EXPECT_EQ(row.pss, 333);
  EXPECT_EQ(row.sys_used, 444);
  EXPECT_EQ(row.sys_total, 777);
  EXPECT_EQ(row.sys_available, 555);
  EXPECT_EQ(row.sys_active, 666);
  EXPECT_EQ(row.counters[0], 30);
  EXPECT_EQ(row.counters[1], -1);
  EXPECT_EQ(row.counters[2], 10);
}

// One trial's rows in file order, each (attempt, status), and the row that
// stands for the trial: its latest final attempt, else its latest attempt.
struct StandingCase {
  std::string_view name;
  std::vector<std::pair<std::int32_t, std::string_view>> rows;
  std::size_t standing;
};

class StandingRowOfATrial : public ::testing::TestWithParam<StandingCase> {};

TEST_P(StandingRowOfATrial, IsTheLatestFinalAttemptElseTheLatest) {
  const StandingCase& c = GetParam();
  std::vector<TrialRow> rows;
  for (const auto& [attempt, status] : c.rows) {
    TrialRow row{};
    set_fixed(row.trial_id, "t00000000001");
    row.attempt = attempt;
    set_fixed(row.status, status);
    rows.push_back(row);
  }
  const StandingRows standing = standing_rows(rows);
  const StandingRows::Trial* trial = standing.find("t00000000001");
  ASSERT_NE(trial, nullptr);
  EXPECT_EQ(trial->row, c.standing);
  EXPECT_EQ(trial->attempts, static_cast<int>(c.rows.size()));
  EXPECT_THAT(standing.order(), ElementsAre("t00000000001"));
}

INSTANTIATE_TEST_SUITE_P(
    Attempts, StandingRowOfATrial,
    ::testing::Values(StandingCase{"one_row", {{0, "ok"}}, 0},
                      StandingCase{"failed_then_retried_ok", {{0, "failed"}, {1, "ok"}}, 1},
                      StandingCase{"final_then_an_interrupted_retry", {{0, "failed"}, {1, "interrupted"}}, 0},
                      StandingCase{"neither_final_the_later", {{0, "interrupted"}, {1, "killed"}}, 1},
                      StandingCase{"final_not_last", {{0, "interrupted"}, {1, "ok"}, {2, "killed"}}, 1},
                      StandingCase{"two_final_the_later", {{0, "timeout"}, {1, "over_budget"}}, 1},
                      StandingCase{"unknown_status_is_not_final", {{0, "ok"}, {1, "exploded"}}, 0},
                      // Rows of a resumed file come in file order, not attempt order.
                      StandingCase{"later_attempt_earlier_in_the_file", {{1, "interrupted"}, {0, "killed"}}, 0}),
    [](const ::testing::TestParamInfo<StandingCase>& test) { return std::string(test.param.name); });

TEST(StandingRows, EachTrialInTheOrderOfItsFirstRowWithItsOwnAttempts) {
  std::vector<TrialRow> rows(4);
  for (const auto& [index, id, attempt, status] :
       {std::tuple{0, "t00000000002", 0, "failed"}, std::tuple{1, "t00000000001", 0, "ok"},
        std::tuple{2, "t00000000002", 1, "ok"}, std::tuple{3, "t00000000002", 2, "interrupted"}}) {
    set_fixed(rows[index].trial_id, id);
    rows[index].attempt = attempt;
    set_fixed(rows[index].status, status);
  }
  // Added a row at a time, as watch reads them, and all at once: the same.
  StandingRows added;
  for (std::size_t i = 0; i < rows.size(); ++i) added.add(rows, i);
  for (const StandingRows& standing : {added, standing_rows(rows)}) {
    EXPECT_THAT(standing.order(), ElementsAre("t00000000002", "t00000000001"));
    ASSERT_EQ(standing.by_id().size(), 2u);
    EXPECT_EQ(standing.find("t00000000002")->row, 2u);
    EXPECT_EQ(standing.find("t00000000002")->attempts, 3);
    EXPECT_EQ(standing.find("t00000000001")->row, 1u);
    EXPECT_EQ(standing.find("t00000000001")->attempts, 1);
    EXPECT_EQ(standing.find("t00000000003"), nullptr);
  }
}

TEST(SweepHash, SixteenHexDigits) {
  const std::string hash = sweep_hash(example_sweep());
  ASSERT_EQ(hash.size(), 16u);
  for (const char c : hash) EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(c)) << hash;
}

constexpr std::string_view kGridSweep = R"(# a comment
[sweep]
name = "grid"
seed = 3
[defaults]
dataset = "synthetic"
timeout = "1h"
[grid]
batch_size = [16, 32, 64]
learning_rate = [0.1, 0.01]
hidden = [[64, 32], [128]]
[[trial]]
epochs = 2
[[trial]]
epochs = 3
)";

std::string edited(std::string text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("edited: no such text");
  return text.replace(at, from.size(), to);
}

TEST(SweepHash, SameTrialsWrittenInAnotherOrderOrSpellingGiveTheSameHash) {
  const std::string base = sweep_hash(parse_sweep(kGridSweep, "a.toml"));
  const std::string text(kGridSweep);
  for (const std::string& same :
       {edited(text, "# a comment", "# another comment, another file name"),
        edited(text, "name = \"grid\"", "name = \"renamed\""),
        edited(text, "batch_size = [16, 32, 64]", "batch_size = [64, 16, 32]"),
        edited(text, "hidden = [[64, 32], [128]]", "hidden = [[128], [64, 32]]"),
        edited(edited(text, "batch_size = [16, 32, 64]\n", ""), "[grid]\n", "[grid]\nbatch_size = [16,32,64]\n"),
        edited(text, "[[trial]]\nepochs = 2\n[[trial]]\nepochs = 3", "[[trial]]\nepochs = 3\n[[trial]]\nepochs = 2"),
        edited(text, "learning_rate = [0.1, 0.01]", "learning_rate = [1e-1, 1e-2]"),
        edited(text, "timeout = \"1h\"", "timeout = \"2h\"\nmem_budget = \"1GiB\"")})
    EXPECT_EQ(sweep_hash(parse_sweep(same, "b.toml")), base) << same;
}

TEST(SweepHash, OtherTrialsGiveAnotherHash) {
  const std::string base = sweep_hash(parse_sweep(kGridSweep, "a.toml"));
  const std::string text(kGridSweep);
  for (const std::string& other :
       {edited(text, "batch_size = [16, 32, 64]", "batch_size = [16, 32]"),
        edited(text, "hidden = [[64, 32], [128]]", "hidden = [[32, 64], [128]]"), edited(text, "seed = 3", "seed = 4"),
        edited(text, "name = \"grid\"", "name = \"grid\"\nrepeats = 2"),
        edited(text, "dataset = \"synthetic\"", "dataset = \"mnist\""),
        edited(text, "[[trial]]\nepochs = 3", "[[trial]]\nepochs = 4")})
    EXPECT_NE(sweep_hash(parse_sweep(other, "b.toml")), base) << other;
}

TEST(SweepHash, APartHasItsOwnHash) {
  SweepSpec sweep = parse_sweep(kGridSweep, "a.toml");
  const std::string whole = sweep_hash(sweep);
  sweep.part = "batch_size=16";
  EXPECT_NE(sweep_hash(sweep), whole);
}

// Files written before the hash was made from the definition hold the
// hash of the trial ids: reordering trials keeps it, other trials change it.
TEST(LegacySweepHash, TheSetOfTrialIds) {
  const SweepSpec sweep = example_sweep();
  SweepSpec reordered = sweep;
  std::vector<TrialSpec> trials = sweep.trials.list();
  std::swap(trials[0], trials[3]);
  reordered.trials = trials;
  EXPECT_EQ(legacy_sweep_hash(sweep), legacy_sweep_hash(reordered));
  trials.pop_back();
  SweepSpec fewer = sweep;
  fewer.trials = trials;
  EXPECT_NE(legacy_sweep_hash(fewer), legacy_sweep_hash(sweep));
}

TEST(SweepHash, TrialsIntervalAndEventsChangeIt) {
  const SweepSpec sweep = example_sweep();
  const std::string base = sweep_hash(sweep);

  SweepSpec more = example_sweep("[[trial]]\nepochs = 9\n");
  EXPECT_NE(sweep_hash(more), base);

  SweepSpec interval = sweep;
  interval.sampler.interval_ms = 5;
  EXPECT_NE(sweep_hash(interval), base);

  SweepSpec events = sweep;
  std::swap(events.sampler.events[0], events.sampler.events[1]);  // column order changes
  EXPECT_NE(sweep_hash(events), base);
}

}  // namespace
}  // namespace memsweep
