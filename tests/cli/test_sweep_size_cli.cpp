// A sweep past the size limit, as a user meets it: `plan` and `run` refuse
// it at once, in one line that says how many trials it asked for, with exit
// status 2, and `run` writes nothing (docs/reliability.md).

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

std::string numbers(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) text += fmt::format("{}{}", k, k < count ? ", " : "");
  return text;
}

struct Oversized {
  const char* name;
  std::string text;
  const char* words;  // what the one line must say
};

void PrintTo(const Oversized& sweep, std::ostream* out) { *out << sweep.name; }

class OversizedSweep : public ::testing::TestWithParam<Oversized> {};

TEST_P(OversizedSweep, PlanAndRunRefuseItWithItsSizeAndWriteNothing) {
  const TempDir dir;
  const std::filesystem::path sweep = dir.write("big.toml", GetParam().text);
  const std::filesystem::path results = dir.path() / "big.h5";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", sweep.string()},
        std::vector<std::string>{"run", sweep.string(), "-o", results.string()}}) {
    const CommandResult result = run_memsweep(args);
    EXPECT_EQ(result.exit_status, kBadInput) << args[0] << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr(GetParam().words)) << args[0];
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << args[0] << ": " << result.err;
    EXPECT_EQ(result.out, "") << args[0];
  }
  EXPECT_FALSE(std::filesystem::exists(results));
}

// 100 x 100 x 100 (x 1000): 10^6 trials (10^9).
std::string grid(bool a_billion) {
  std::string text = "[grid]\nlearning_rate = [" + numbers(100) + "]\nbatch_size = [" + numbers(100) + "]\nepochs = [" +
                     numbers(100) + "]\n";
  if (a_billion) text += "seed = [" + numbers(1000) + "]\n";
  return text;
}

INSTANTIATE_TEST_SUITE_P(
    ABillion, OversizedSweep,
    ::testing::Values(
        Oversized{"grid", grid(true), "big.toml:1: grid: the grid expands to 1000000000 trials, more than 100000000"},
        Oversized{"random", "[random]\ncount = 1000000000\nlearning_rate = { uniform = [0.1, 0.2] }\n",
                  "big.toml:1: the sweep defines 1000000000 trials, more than 100000000"},
        Oversized{"grid_with_repeats", "[sweep]\nrepeats = 1000\n" + grid(false),
                  "the sweep defines 1000000 trials x 1000 repeats = 1000000000 runs, more than 100000000"},
        Oversized{
            "grid_and_random_with_repeats",
            "[sweep]\nrepeats = 51\n" + grid(false) + "[random]\ncount = 1000000\nseed = { int_uniform = [0, 9] }\n",
            "the sweep defines 2000000 trials x 51 repeats = 102000000 runs, more than 100000000"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
