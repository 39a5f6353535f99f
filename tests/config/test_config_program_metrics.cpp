// A [programs.NAME] table's metrics (docs/sweep-file.md, "Metrics"): read
// into the trial's program, sorted by name, and every bad one refused when
// the file is read, with its file, line and key.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Line 3 holds the metrics table: each case's `metrics` text goes there.
std::string sweep_with_metrics(const std::string& metrics) {
  return "[programs.wlm]\n"
         "command = ['python3', 'main.py', '--bptt={bptt}']\n"
         "metrics = " +
         metrics +
         "\n"
         "[[trial]]\n"
         "program = 'wlm'\n"
         "params = { bptt = 35 }\n";
}

TEST(ProgramMetrics, AreTheTrialsProgramsSortedByNameWithTheirPlaces) {
  const SweepSpec sweep = parse_sweep(
      sweep_with_metrics(R"({ valid_ppl = 'valid ppl +([0-9.]+)', epoch = '^\| end of epoch +(\d+)' })"), "s.toml");
  ASSERT_EQ(sweep.trials.size(), 1u);
  const TrialSpec& trial = sweep.trials[0];
  ASSERT_TRUE(trial.program);
  ASSERT_EQ(trial.program->metrics.size(), 2u);
  EXPECT_EQ(trial.program->metrics[0].name, "epoch");
  EXPECT_EQ(trial.program->metrics[0].pattern, R"(^\| end of epoch +(\d+))") << "single quotes keep backslashes";
  EXPECT_EQ(trial.program->metrics[1].name, "valid_ppl");
  EXPECT_EQ(trial.program->metrics[1].pattern, "valid ppl +([0-9.]+)");
  EXPECT_EQ(trial.program->metrics[1].place, "s.toml:3: programs.wlm.metrics.valid_ppl");
}

TEST(ProgramMetrics, DoNotChangeTheTrialsId) {
  // What a program prints is read differently; the trial is the same one,
  // so a resume after adding a metric runs no trial again.
  const SweepSpec with = parse_sweep(sweep_with_metrics("{ loss = 'loss +([0-9.]+)' }"), "s.toml");
  const SweepSpec without = parse_sweep(
      "[programs.wlm]\ncommand = ['python3', 'main.py', '--bptt={bptt}']\n[[trial]]\nprogram = 'wlm'\n"
      "params = { bptt = 35 }\n",
      "s.toml");
  EXPECT_EQ(with.trials.at(0).id, without.trials.at(0).id);
}

struct BadMetrics {
  std::string name;
  std::string metrics;  // the value on line 3
  std::string key;
  std::string expected;  // part of the message
};

void PrintTo(const BadMetrics& c, std::ostream* os) { *os << c.name; }

class ProgramMetricErrors : public ::testing::TestWithParam<BadMetrics> {};

TEST_P(ProgramMetricErrors, NameFileLineKeyAndExpectation) {
  const BadMetrics& c = GetParam();
  const std::string text = sweep_with_metrics(c.metrics);
  try {
    parse_sweep(text, "bad.toml");
    FAIL() << "expected a ConfigError for:\n" << text;
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.file(), "bad.toml");
    EXPECT_EQ(error.line(), 3) << error.what();
    EXPECT_EQ(error.key(), c.key) << error.what();
    EXPECT_THAT(error.what(), StartsWith("bad.toml:3: " + c.key + ": "));
    EXPECT_THAT(error.what(), HasSubstr(c.expected));
  }
}

const BadMetrics kCases[] = {
    {"not_a_regex", "{ ppl = 'ppl +([0-9.]+' }", "programs.wlm.metrics.ppl",
     "in 'ppl +([0-9.]+': not a regular expression (ECMAScript syntax)"},
    {"no_group", "{ ppl = 'ppl +[0-9.]+' }", "programs.wlm.metrics.ppl",
     "it has 0 capture groups; expected exactly one, around the number"},
    {"two_groups", "{ ppl = '(valid|test) ppl +([0-9.]+)' }", "programs.wlm.metrics.ppl",
     "it has 2 capture groups; expected exactly one, around the number (group the rest with (?:...))"},
    {"empty_pattern", "{ ppl = '' }", "programs.wlm.metrics.ppl", "an empty pattern matches every line"},
    {"name_not_identifier", "{ 'valid-ppl' = 'ppl +([0-9.]+)' }", "programs.wlm.metrics.valid-ppl",
     "expected a metric name of 1 to 32 letters, digits and _, not starting with a digit"},
    {"name_starts_with_digit", "{ 1ppl = 'ppl +([0-9.]+)' }", "programs.wlm.metrics.1ppl", "not starting with a digit"},
    {"name_too_long", "{ a_name_longer_than_thirty_two_chars = 'ppl +([0-9.]+)' }",
     "programs.wlm.metrics.a_name_longer_than_thirty_two_chars", "1 to 32 letters"},
    {"pattern_not_a_string", "{ ppl = 3 }", "programs.wlm.metrics.ppl",
     "expected a regular expression as a string (single quotes keep backslashes as they are"},
    {"not_a_table", "['ppl +([0-9.]+)']", "programs.wlm.metrics",
     "expected a table of metric names and regular expressions with one capture group each"},
    {"empty_table", "{}", "programs.wlm.metrics", "found an empty table"},
};

INSTANTIATE_TEST_SUITE_P(Cases, ProgramMetricErrors, ::testing::ValuesIn(kCases),
                         [](const auto& test_case) { return test_case.param.name; });

}  // namespace
}  // namespace memsweep
