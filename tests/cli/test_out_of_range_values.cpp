// Numbers past what memsweep can hold, as a user gives them (issue 28):
// time limits that wrapped round to a negative deadline (every trial ended
// `timeout` at 0.00 s, `plan` showed -9223372036854775808s), sizes that
// became a negative budget, and integers beyond 64 bits that toml11 capped
// at 2^63-1 without a word. `plan` and `run` refuse each in one line naming
// the file, line and key (or the option) and the value as written, exit
// status 2, and write nothing.

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const std::string kTrial = "[[trial]]\ndataset = \"synthetic\"\nsynthetic = { train_size = 8, test_size = 4 }\n";

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files{std::filesystem::directory_iterator(dir), {}};
  std::sort(files.begin(), files.end());
  return files;
}

struct BadValue {
  const char* name;
  std::string sweep;               // the sweep file's text
  std::vector<std::string> extra;  // options after `run SWEEP -o out.h5`; none for plan
  std::string after_error;         // what follows "memsweep: error: "; "@" is the sweep file
};

void PrintTo(const BadValue& c, std::ostream* os) { *os << c.name; }

const BadValue kBadValues[] = {
    {"sweep_seed_past_64_bits",
     "[sweep]\nname = \"x\"\nseed = 18446744073709551616\n" + kTrial,
     {},
     "@:3: sweep.seed: 18446744073709551616 is out of range; expected a whole number from 0 to 9223372036854775807"},
    {"epochs_past_64_bits",
     kTrial + "epochs = 18446744073709551616\n",
     {},
     "@:4: trial[0].epochs: 18446744073709551616 is out of range; expected a whole number from 1 to 100000"},
    {"negative_seed_past_64_bits",
     kTrial + "seed = -9223372036854775809\n",
     {},
     "@:4: trial[0].seed: -9223372036854775809 is out of range"},
    {"hex_past_64_bits",
     "[defaults]\ndataset = \"synthetic\"\n[grid]\nseed = [1, 0x1_0000_0000_0000_0000]\n",
     {},
     "@:4: grid.seed: 0x1_0000_0000_0000_0000 is out of range"},
    {"timeout_1e308_in_file",
     kTrial + "timeout = 1e308\n",
     {},
     "@:4: trial[0].timeout: expected a duration of at most 3650d (about 10 years), found the number 1e+308"},
    {"timeout_hours_in_file",
     kTrial + "timeout = \"9999999999999999h\"\n",
     {},
     "@:4: trial[0].timeout: expected a duration of at most 3650d"},
    {"timeout_days_in_file",
     kTrial + "timeout = \"106751991167d\"\n",
     {},
     "@:4: trial[0].timeout: expected a duration of at most 3650d"},
    {"mem_budget_in_file",
     kTrial + "mem_budget = \"9999999TiB\"\n",
     {},
     "@:4: trial[0].mem_budget: expected a size of at most 1 EiB"},
    {"trial_timeout_1e308",
     kTrial,
     {"--trial-timeout", "1e308"},
     "--trial-timeout: \"1e308\" is longer than 3650d (about 10 years), the longest time limit memsweep takes; for "
     "no limit, give none"},
    {"trial_timeout_hours",
     kTrial,
     {"--trial-timeout", "9999999999999999h"},
     "--trial-timeout: \"9999999999999999h\" is longer than 3650d"},
    {"trial_timeout_days",
     kTrial,
     {"--trial-timeout", "106751991167d"},
     "--trial-timeout: \"106751991167d\" is longer than 3650d"},
    {"mem_budget_option",
     kTrial,
     {"--mem-budget", "9223372036854775808"},
     "--mem-budget: \"9223372036854775808\" is more than 1 EiB (2^60 bytes), the largest budget memsweep takes"},
};

class OutOfRangeValue : public ::testing::TestWithParam<std::pair<const char*, BadValue>> {};

TEST_P(OutOfRangeValue, RefusedInOneLineWithStatusTwoAndNothingWritten) {
  const auto& [command, c] = GetParam();
  const TempDir dir;
  const std::filesystem::path sweep = dir.write("sweep.toml", c.sweep);
  std::vector<std::string> args{command, sweep.string()};
  if (std::string(command) == "run") {
    args.insert(args.end(), {"-o", "out.h5"});
    args.insert(args.end(), c.extra.begin(), c.extra.end());
  }
  const std::vector<std::filesystem::path> before = files_in(dir.path());

  const CommandResult result = run_memsweep(args, dir.path().string());
  std::string expected = c.after_error;
  if (expected.starts_with("@")) expected.replace(0, 1, sweep.string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, StartsWith("memsweep: error: " + expected)) << result.err;
  EXPECT_THAT(result.err, Not(HasSubstr("9223372036854775807 is")));
  EXPECT_EQ(files_in(dir.path()), before) << "a file was written";
}

std::vector<std::pair<const char*, BadValue>> all_cases() {
  std::vector<std::pair<const char*, BadValue>> cases;
  for (const BadValue& c : kBadValues) {
    if (c.extra.empty()) cases.emplace_back("plan", c);
    cases.emplace_back("run", c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(PlanAndRun, OutOfRangeValue, ::testing::ValuesIn(all_cases()), [](const auto& param_info) {
  return fmt::format("{}_{}", param_info.param.first, param_info.param.second.name);
});

// Whole-number options that CLI11 would read with strtoull, capping 2^64
// at 2^64-1 and reading -1 as 2^64-1 (so: no limit). Refused as given, in
// CLI11's own form of a usage error (its line, then "Run with --help").
TEST(OutOfRangeValue, WholeNumberOptionsPast64BitsOrNegativeAreRefused) {
  const TempDir dir;
  const std::filesystem::path sweep = dir.write("sweep.toml", kTrial);
  const std::vector<std::filesystem::path> before = files_in(dir.path());
  for (const char* option : {"--max-train-examples", "--max-test-examples"}) {
    for (const char* value : {"18446744073709551616", "-1", "99999999999999999999999"}) {
      const CommandResult result =
          run_memsweep({"run", sweep.string(), "-o", "out.h5", option, value}, dir.path().string());
      EXPECT_EQ(result.exit_status, kBadInput) << option << " " << value << ": " << result.err;
      EXPECT_THAT(result.err, HasSubstr(fmt::format("{}: {} is out of range; expected a whole number from 0 to "
                                                    "9223372036854775807",
                                                    option, value)));
    }
  }
  EXPECT_EQ(files_in(dir.path()), before) << "a file was written";

  const CommandResult estimate = run_memsweep(
      {"estimate", "--dataset", "mnist", "--model", "mlp", "--hidden", "8", "--train-examples", "18446744073709551616"},
      dir.path().string());
  EXPECT_EQ(estimate.exit_status, kBadInput) << estimate.err;
  EXPECT_THAT(estimate.err, HasSubstr("--train-examples: 18446744073709551616 is out of range"));
}

// The longest limit there is, as `plan` shows it: ten years, not a
// negative number of seconds.
TEST(OutOfRangeValue, LongestLimitIsPlannedAsTenYears) {
  const TempDir dir;
  const std::filesystem::path sweep = dir.write("sweep.toml", kTrial + "timeout = \"3650d\"\n");
  const CommandResult result = run_memsweep({"plan", sweep.string()}, dir.path().string());
  EXPECT_EQ(result.exit_status, kOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("87600h00m"));
  EXPECT_THAT(result.out, Not(HasSubstr("-9223372036854775808")));
}

// A trial under the longest limits runs to its end: the limits are far
// away, not already past (before, every trial ended `timeout` at 0.00 s).
TEST(OutOfRangeValue, TrialUnderTheLongestLimitsFinishes) {
  const TempDir dir;
  const std::filesystem::path sweep =
      dir.write("sweep.toml", kTrial + "epochs = 1\nbatch_size = 4\nhidden = [4]\ntimeout = \"3650d\"\n");
  const CommandResult result =
      run_memsweep({"run", sweep.string(), "-o", "out.h5", "--trial-timeout", "3650d", "--mem-budget", "1048576TiB"},
                   dir.path().string());
  EXPECT_EQ(result.exit_status, kOk) << result.out << result.err;
  EXPECT_THAT(result.err, HasSubstr("(1 ok)"));  // the final line's count of statuses (on stderr)
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("timeout")));
  EXPECT_THAT(result.out + result.err, Not(HasSubstr("time limit")));
}

}  // namespace
}  // namespace memsweep::testing
