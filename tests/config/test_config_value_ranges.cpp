// Numbers past what memsweep can hold (issue 28): integers beyond 64 bits,
// which toml11 3.7 capped at 2^63-1 without a word, and time limits and
// sizes so large that they wrapped round when turned into clock time or
// int64. Each is refused naming the file, the line and the key, with the
// value as the file writes it; the largest values that fit are accepted.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace memsweep {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct OutOfRange {
  std::string name;
  std::string text;
  int line;
  std::string key;
  std::string written;   // the value as the message must quote it
  std::string expected;  // what it must say was expected
};

void PrintTo(const OutOfRange& c, std::ostream* os) { *os << c.name; }

class ValueOutOfRange : public ::testing::TestWithParam<OutOfRange> {};

TEST_P(ValueOutOfRange, RefusedWithTheValueAsWritten) {
  const OutOfRange& c = GetParam();
  try {
    parse_sweep(c.text, "sweep.toml");
    FAIL() << "expected a ConfigError for:\n" << c.text;
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.line(), c.line) << error.what();
    EXPECT_EQ(error.key(), c.key) << error.what();
    EXPECT_THAT(error.what(), ::testing::StartsWith("sweep.toml:" + std::to_string(c.line) + ": " + c.key + ": "));
    EXPECT_THAT(error.what(), HasSubstr(c.written));
    EXPECT_THAT(error.what(), HasSubstr(c.expected));
    // What toml11 made of it must not show.
    EXPECT_THAT(error.what(), Not(HasSubstr("9223372036854775807 is")));
    EXPECT_THAT(error.what(), Not(HasSubstr("found 9223372036854775807")));
    EXPECT_THAT(error.what(), Not(HasSubstr("found -9223372036854775808")));
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << "one line";
  }
}

const std::string kTrial = "[[trial]]\ndataset = 'synthetic'\n";
const std::string k2To64 = "18446744073709551616";

const OutOfRange kIntegers[] = {
    {"sweep_seed", "[sweep]\nname = 'x'\nseed = " + k2To64 + "\n" + kTrial, 3, "sweep.seed",
     k2To64 + " is out of range", "expected a whole number from 0 to 9223372036854775807"},
    {"sweep_repeats", "[sweep]\nrepeats = " + k2To64 + "\n" + kTrial, 2, "sweep.repeats", k2To64 + " is out of range",
     "from 1 to 10000"},
    {"sampler_interval", "[sampler]\ninterval_ms = " + k2To64 + "\n" + kTrial, 2, "sampler.interval_ms",
     k2To64 + " is out of range", "from 1 to 600000"},
    {"trial_epochs", kTrial + "epochs = " + k2To64 + "\n", 3, "trial[0].epochs", k2To64 + " is out of range",
     "from 1 to 100000"},
    {"trial_seed", kTrial + "seed = " + k2To64 + "\n", 3, "trial[0].seed", k2To64 + " is out of range",
     "from 0 to 9223372036854775807"},
    {"trial_seed_with_underscores", kTrial + "seed = 18_446_744_073_709_551_616\n", 3, "trial[0].seed",
     "18_446_744_073_709_551_616 is out of range", "from 0 to"},
    {"trial_seed_just_past", kTrial + "seed = 9223372036854775808\n", 3, "trial[0].seed",
     "9223372036854775808 is out of range", "from 0 to 9223372036854775807"},
    {"negative_past", kTrial + "seed = -9223372036854775809\n", 3, "trial[0].seed",
     "-9223372036854775809 is out of range", "from 0 to"},
    {"hex", kTrial + "epochs = 0x1_0000_0000_0000_0000\n", 3, "trial[0].epochs",
     "0x1_0000_0000_0000_0000 is out of range", "from 1 to 100000"},
    {"hex_all_ones", kTrial + "seed = 0xFFFFFFFFFFFFFFFF\n", 3, "trial[0].seed", "0xFFFFFFFFFFFFFFFF is out of range",
     "from 0 to"},
    {"octal", kTrial + "seed = 0o1777777777777777777777\n", 3, "trial[0].seed",
     "0o1777777777777777777777 is out of range", "from 0 to"},
    // toml11 adds binary digits into an int64 that wraps: 2^64 read as 0.
    {"hidden_element", kTrial + "hidden = [4, " + k2To64 + "]\n", 3, "trial[0].hidden[1]", k2To64 + " is out of range",
     "from 1 to 1000000"},
    {"synthetic_seed", kTrial + "synthetic = { seed = " + k2To64 + " }\n", 3, "trial[0].synthetic.seed",
     k2To64 + " is out of range", "from 0 to 9223372036854775807"},
    {"defaults_epochs", "[defaults]\nepochs = " + k2To64 + "\n" + kTrial, 2, "defaults.epochs",
     k2To64 + " is out of range", "from 1 to 100000"},
    {"grid_value", "[defaults]\ndataset = 'synthetic'\n[grid]\nbatch_size = [1, 2, " + k2To64 + "]\n", 4,
     "grid.batch_size", k2To64 + " is out of range", "from 1 to 1048576"},
    {"random_count", "[defaults]\ndataset = 'synthetic'\n[random]\ncount = " + k2To64 + "\n", 4, "random.count",
     k2To64 + " is out of range", "from 1 to 1000000"},
    {"random_int_uniform_bound",
     "[defaults]\ndataset = 'synthetic'\n[random]\ncount = 2\nseed = { int_uniform = [0, " + k2To64 + "] }\n", 5,
     "random.seed", k2To64 + " is out of range", "expected a whole number"},
    {"random_choice",
     "[defaults]\ndataset = 'synthetic'\n[random]\ncount = 2\nepochs = { choice = [1, " + k2To64 + "] }\n", 5,
     "random.epochs", k2To64 + " is out of range", "from 1 to 100000"},
    {"real_field", kTrial + "learning_rate = " + k2To64 + "\n", 3, "trial[0].learning_rate",
     k2To64 + " is out of range", "expected a number (write it with a decimal point or an exponent"},
    {"mem_budget", kTrial + "mem_budget = " + k2To64 + "\n", 3, "trial[0].mem_budget", "found the integer " + k2To64,
     "expected a size of at most 1 EiB"},
    {"timeout", kTrial + "timeout = " + k2To64 + "\n", 3, "trial[0].timeout", "found the integer " + k2To64,
     "expected a duration of at most 3650d"},
    {"program_param", "[[trial]]\nprogram = ['./train', '{lr}']\nparams = { lr = " + k2To64 + " }\n", 3,
     "trial[0].params.lr", k2To64 + " is out of range", "a larger number can be a string"},
    {"program_param_list", "[[trial]]\nprogram = ['./train']\nparams = { sizes = [1, -" + k2To64 + "] }\n", 3,
     "trial[0].params.sizes[1]", "-" + k2To64 + " is out of range", "from -9223372036854775808 to"},
};

INSTANTIATE_TEST_SUITE_P(IntegersBeyond64Bits, ValueOutOfRange, ::testing::ValuesIn(kIntegers),
                         [](const auto& param_info) { return param_info.param.name; });

const OutOfRange kLimits[] = {
    {"timeout_1e308", kTrial + "timeout = 1e308\n", 3, "trial[0].timeout", "found the number 1e+308",
     "expected a duration of at most 3650d (about 10 years)"},
    {"timeout_hours", kTrial + "timeout = '9999999999999999h'\n", 3, "trial[0].timeout",
     "found the string \"9999999999999999h\"", "at most 3650d"},
    {"timeout_days", kTrial + "timeout = '106751991167d'\n", 3, "trial[0].timeout", "\"106751991167d\"",
     "at most 3650d"},
    {"timeout_seconds_integer", kTrial + "timeout = 9223372036854775807\n", 3, "trial[0].timeout",
     "the integer 9223372036854775807", "at most 3650d"},
    {"timeout_just_past", kTrial + "timeout = '3650d1ms'\n", 3, "trial[0].timeout", "\"3650d1ms\"", "at most 3650d"},
    {"timeout_past_double", kTrial + "timeout = '1e400s'\n", 3, "trial[0].timeout", "\"1e400s\"", "at most 3650d"},
    {"timeout_in_grid", "[defaults]\ndataset = 'synthetic'\n[grid]\ntimeout = ['1h', '1e308']\n", 4, "grid.timeout",
     "\"1e308\"", "at most 3650d"},
    {"mem_budget_text", kTrial + "mem_budget = '9999999TiB'\n", 3, "trial[0].mem_budget", "\"9999999TiB\"",
     "expected a size of at most 1 EiB"},
    {"mem_budget_past_an_exbibyte", kTrial + "mem_budget = 1152921504606846977\n", 3, "trial[0].mem_budget",
     "1152921504606846977", "at most 1 EiB"},
    {"mem_budget_2_to_63", kTrial + "mem_budget = '9223372036854775808B'\n", 3, "trial[0].mem_budget",
     "\"9223372036854775808B\"", "at most 1 EiB"},
};

INSTANTIATE_TEST_SUITE_P(LimitsPastTheLongest, ValueOutOfRange, ::testing::ValuesIn(kLimits),
                         [](const auto& param_info) { return param_info.param.name; });

// The largest values that fit are read as written, not refused and not capped.
TEST(ValueRanges, LargestIntegersThatFitAreKept) {
  const SweepSpec sweep = parse_sweep(
      "[sweep]\nseed = 9223372036854775807\n[[trial]]\ndataset = 'synthetic'\nseed = 0x7FFF_FFFF_FFFF_FFFF\n"
      "[[trial]]\ndataset = 'synthetic'\nbatch_size = 2\nseed = 0o777_777_777_777_777_777_777\n"
      "[[trial]]\ndataset = 'synthetic'\nbatch_size = 3\nseed = 0b" +
          std::string(62, '1') + "\n",
      "sweep.toml");
  EXPECT_EQ(sweep.seed, 9223372036854775807u);
  ASSERT_EQ(sweep.trials.size(), 3u);
  EXPECT_EQ(sweep.trials[0].seed, 9223372036854775807u);
  EXPECT_EQ(sweep.trials[1].seed, 9223372036854775807u);
  EXPECT_EQ(sweep.trials[2].seed, 4611686018427387903u) << "62 binary digits, the most the TOML reader takes";
}

// toml11 3.7 overflows (undefined behaviour; UBSan stops there) on a binary
// integer of 63 digits or more, whatever its value: such a literal is
// refused before toml11 reads it, as written, with the line and what to
// write instead. Strings, comments and keys that look alike are left alone.
TEST(ValueRanges, BinaryIntegersOfMoreThanSixtyTwoDigitsAreRefusedBeforeTheReader) {
  for (const std::string& digits :
       {"1" + std::string(64, '0'), std::string(63, '1'), "0" + std::string(62, '1'), "1_" + std::string(62, '0')}) {
    const std::string text = kTrial + "seed = 0b" + digits + "\n";
    try {
      parse_sweep(text, "sweep.toml");
      FAIL() << "expected a ConfigError for 0b" << digits;
    } catch (const ConfigError& error) {
      EXPECT_EQ(error.line(), 3) << error.what();
      EXPECT_THAT(error.what(), ::testing::StartsWith("sweep.toml:3: 0b" + digits + " has more than 62 binary digits"));
      EXPECT_THAT(error.what(), HasSubstr("write it in decimal or hexadecimal"));
    }
  }
  const std::string lookalikes = "[sweep]\nname = '0b" + std::string(70, '1') + "' # 0b" + std::string(70, '1') +
                                 "\n[[trial]]\ndataset = 'synthetic'\nprogram = ['./t', '{x}']\nparams = { x = 1 }\n";
  EXPECT_NO_THROW(parse_sweep(lookalikes, "sweep.toml"));
}

TEST(ValueRanges, MostNegativeIntegerIsABound) {
  const SweepSpec sweep = parse_sweep(
      "[defaults]\ndataset = 'synthetic'\n[[trial]]\nprogram = ['./t', '{x}']\nparams = { x = -9223372036854775808 }\n",
      "sweep.toml");
  ASSERT_EQ(sweep.trials.size(), 1u);
  ASSERT_TRUE(sweep.trials[0].program.has_value());
  EXPECT_THAT(sweep.trials[0].canonical_text(), HasSubstr("-9223372036854775808"));
}

TEST(ValueRanges, LongestLimitAndLargestBudgetAreKept) {
  const SweepSpec sweep = parse_sweep(
      "[[trial]]\ndataset = 'synthetic'\ntimeout = '3650d'\nmem_budget = '1048576TiB'\n"
      "[[trial]]\ndataset = 'synthetic'\nbatch_size = 2\ntimeout = 315360000\nmem_budget = 1152921504606846976\n",
      "sweep.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  for (const TrialSpec& trial : sweep.trials) {
    EXPECT_EQ(trial.timeout_seconds, 3650.0 * 86400.0);
    EXPECT_EQ(trial.mem_budget_bytes, std::uint64_t{1} << 60);
  }
}

}  // namespace
}  // namespace memsweep
