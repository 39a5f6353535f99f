// Option errors, as a user meets them (issue 43): every one is memsweep's
// one line with its "memsweep: error: " prefix, CLI11's own included
// ("Could not convert: --part = 2147483648" had none); `estimate --hidden
// 8,,8` is refused, not read as [8, 8]; `--threads 99999999` is refused;
// and `export -o -` writes to standard output, not to a file named "-".

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kSweep[] = R"([sweep]
name = "options"
seed = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 4, 4], classes = 2, train_size = 64, test_size = 16 }
hidden = [4]
epochs = 1
[grid]
batch_size = [16, 32]
)";

std::size_t lines_in(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::set<std::string> entries(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename());
  return names;
}

struct BadOption {
  const char* name;
  std::vector<std::string> args;  // "@": the sweep file
  const char* says;               // after the prefix, somewhere in the line
};

class OptionError : public ::testing::TestWithParam<BadOption> {};

TEST_P(OptionError, OneLineWithMemsweepsPrefixExitTwoNothingWritten) {
  const BadOption& c = GetParam();
  const TempDir dir;
  const std::string sweep = dir.write("options.toml", kSweep).string();
  const std::set<std::string> before = entries(dir.path());
  const CommandResult result = run_memsweep(with_file(c.args, sweep), dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_THAT(result.err, StartsWith("memsweep: error: ")) << result.err;
  EXPECT_EQ(lines_in(result.err), 1u) << result.err;
  EXPECT_THAT(result.err, HasSubstr(c.says)) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_EQ(entries(dir.path()), before) << "a file was written";
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OptionError,
    ::testing::Values(
        // The issue's: CLI11 converted the number itself, and said so in its own words.
        BadOption{"part_past_int",
                  {"run", "@", "--split-by", "batch_size", "--part", "2147483648"},
                  "--part: 2147483648 is out of range; expected a whole number from 0 to 2147483647"},
        BadOption{
            "part_negative", {"run", "@", "--split-by", "batch_size", "--part", "-1"}, "--part: -1 is out of range"},
        BadOption{"retry_killed_text", {"run", "@", "--retry-killed", "twice"}, "--retry-killed"},
        BadOption{"flush_interval_text", {"run", "@", "--flush-interval", "soon"}, "--flush-interval"},
        BadOption{"lost_cause_unknown", {"run", "@", "--resume", "--lost-cause", "gremlins"}, "--lost-cause"},
        BadOption{"unknown_option", {"plan", "@", "--colour"}, "--colour"},
        BadOption{"missing_sweep", {"plan"}, "sweep is required"},
        BadOption{"watch_interval_text", {"watch", "@", "--interval", "often"}, "--interval"},
        BadOption{"estimate_batch_text", {"estimate", "--batch", "many"}, "--batch"},
        BadOption{"estimate_rule", {"estimate", "--batch", "4", "--rule", "guess"}, "--rule"},
        // --threads: at most 4096 per rank.
        BadOption{"threads_huge",
                  {"run", "@", "--threads", "99999999"},
                  "--threads: 99999999 is out of range; expected a whole number from 0 to 4096"},
        BadOption{"threads_just_past", {"run", "@", "--threads", "4097"}, "--threads: 4097 is out of range"},
        BadOption{"threads_past_int", {"run", "@", "--threads", "2147483648"}, "--threads: 2147483648 is out of range"},
        BadOption{"threads_negative", {"run", "@", "--threads", "-2"}, "--threads: -2 is out of range"},
        // An empty item of a list, named with its place.
        BadOption{"hidden_empty_item",
                  {"estimate", "--dataset", "mnist", "--hidden", "8,,8"},
                  "--hidden 8,,8: item 2 is empty; expected whole numbers separated by commas, e.g. 128,64"},
        BadOption{"hidden_leading_comma",
                  {"estimate", "--dataset", "mnist", "--hidden", ",8"},
                  "--hidden ,8: item 1 is empty"},
        BadOption{"hidden_trailing_comma",
                  {"estimate", "--dataset", "mnist", "--hidden", "8,"},
                  "--hidden 8,: item 2 is empty"},
        BadOption{"hidden_empty", {"estimate", "--dataset", "mnist", "--hidden", ""}, "--hidden : item 1 is empty"},
        BadOption{"hidden_not_a_number",
                  {"estimate", "--dataset", "mnist", "--hidden", "8,x"},
                  "--hidden 8,x: item 2 (\"x\") is not a whole number"},
        BadOption{"hidden_too_wide", {"estimate", "--dataset", "mnist", "--hidden", "8,2000000"}, "--hidden: "},
        BadOption{"channels_empty_item",
                  {"estimate", "--dataset", "cifar-10", "--model", "cnn", "--channels", "8,,16"},
                  "--channels 8,,16: item 2 is empty"},
        BadOption{"export_force_to_stdout", {"export", "@", "-o", "-", "--force"}, "-o - is standard output"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// The lists that are whole still give the trial they describe.
TEST(OptionLists, WholeListsStillDescribeTheTrial) {
  const CommandResult result = run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "128,64", "--batch", "32"});
  ASSERT_EQ(result.exit_status, kOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("784-128-64-10"));
  const CommandResult cnn =
      run_memsweep({"estimate", "--dataset", "cifar-10", "--model", "cnn", "--channels", "8,16", "--hidden", "32"});
  ASSERT_EQ(cnn.exit_status, kOk) << cnn.err;
}

// The bound is on what is asked, not on this machine: 4096 is taken (plan
// checks no threads; a run with it is not started here).
TEST(OptionLists, TheThreadsBoundIsInTheHelp) {
  const CommandResult result = run_memsweep({"run", "--help"});
  EXPECT_EQ(result.exit_status, kOk) << result.err;
  EXPECT_THAT(result.out, HasSubstr("at most 4096"));
}

// `export -o -`: standard output, as without -o; no file named "-". A file
// of that name is still ./-.
TEST(ExportToDash, WritesStandardOutputNotAFileNamedDash) {
  const TempDir dir;
  const std::string sweep = dir.write("options.toml", kSweep).string();
  const CommandResult made = run_memsweep({"run", sweep, "-o", "r.h5", "-q"}, dir.path().string());
  ASSERT_EQ(made.exit_status, kOk) << made.err;
  const CommandResult plain = run_memsweep({"export", "r.h5"}, dir.path().string());
  ASSERT_EQ(plain.exit_status, kOk) << plain.err;
  ASSERT_THAT(plain.out, StartsWith("trial_id,"));
  for (const char* table : {"trials", "epochs"}) {
    SCOPED_TRACE(table);
    const CommandResult without = run_memsweep({"export", "r.h5", "--table", table}, dir.path().string());
    const CommandResult dash = run_memsweep({"export", "r.h5", "--table", table, "-o", "-"}, dir.path().string());
    EXPECT_EQ(dash.exit_status, kOk) << dash.err;
    EXPECT_EQ(dash.out, without.out);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "-")) << "wrote a file named -";
  }
  const CommandResult named = run_memsweep({"export", "r.h5", "-o", "./-"}, dir.path().string());
  EXPECT_EQ(named.exit_status, kOk) << named.err;
  EXPECT_TRUE(named.out.empty());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "-"));
}

}  // namespace
}  // namespace memsweep::testing
