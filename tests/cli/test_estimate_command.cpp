// `memsweep estimate` run as a user runs it: the parts add up to the total,
// the Q&A rule has its three parts, a sweep file's trials are each
// estimated, and bad input gets one clear line and exit status 2.

#include "support/dataset_files.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <regex>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

const std::string kExamples = std::string(MEMSWEEP_SOURCE_DIR) + "/jobs/examples/";

struct PrintedPart {
  std::string size;  // "400.56 KiB"
  std::uint64_t bytes = 0;
};

// Table lines: part, size, bytes, note, two or more spaces apart.
std::map<std::string, PrintedPart> parts_of(const std::string& out) {
  static const std::regex kLine(R"(^(\S.*?)\s{2,}(\d+(?:\.\d+)? (?:B|KiB|MiB|GiB|TiB))\s{2,}(\d+)\s{2,}.*$)");
  std::map<std::string, PrintedPart> parts;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch match;
    if (std::regex_match(line, match, kLine)) parts[match[1]] = {match[2], std::stoull(match[3])};
  }
  return parts;
}

std::uint64_t sum_except(const std::map<std::string, PrintedPart>& parts, const std::vector<std::string>& left_out) {
  std::uint64_t sum = 0;
  for (const auto& [name, part] : parts)
    if (std::find(left_out.begin(), left_out.end(), name) == left_out.end()) sum += part.bytes;
  return sum;
}

TEST(EstimateCommand, FullBreakdownOfATrialFromOptions) {
  const CommandResult result =
      run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "128", "--batch", "32", "--optimizer", "adam"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("mnist, mlp 784-128-10, adam, batch 32, 60000 + 10000 examples"));
  const auto parts = parts_of(result.out);
  for (const char* name :
       {"parameters", "gradients", "optimizer state", "activations", "pooling workspace", "activation gradients",
        "input batch", "reordered weight copies", "oneDNN scratchpad", "trial process", "total", "resident dataset"})
    EXPECT_EQ(parts.count(name), 1u) << name << "\n" << result.out;
  ASSERT_EQ(parts.size(), 12u) << result.out;
  // What a fresh trial process takes beyond its buffers: megabytes, inside the total.
  EXPECT_GT(parts.at("trial process").bytes, 1u << 20);
  EXPECT_THAT(result.out, HasSubstr("in a fresh trial process"));
  EXPECT_EQ(parts.at("total").bytes, sum_except(parts, {"total", "resident dataset"}));
  EXPECT_EQ(parts.at("optimizer state").bytes, 2 * parts.at("parameters").bytes);
  EXPECT_EQ(parts.at("resident dataset").bytes, 70000u * (784 * 4 + 4));
  EXPECT_THAT(result.out, HasSubstr("outside the trial's peak - baseline"));
}

TEST(EstimateCommand, QaRuleHasItsThreeParts) {
  const CommandResult result =
      run_memsweep({"estimate", "--dataset", "mnist", "--hidden", "128", "--batch", "32", "--rule", "qa"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto parts = parts_of(result.out);
  ASSERT_EQ(parts.size(), 4u) << result.out;
  EXPECT_EQ(parts.at("parameters x3").bytes, (784u * 128 + 128 + 128 * 10 + 10) * 3 * 4);
  EXPECT_EQ(parts.at("activations x2 x batch").bytes, (128u + 10) * 2 * 4 * 32);
  EXPECT_EQ(parts.at("input batch").bytes, 32u * 784 * 4);
  EXPECT_EQ(parts.at("total").bytes, sum_except(parts, {"total"}));
  EXPECT_THAT(result.out, HasSubstr("101770 parameters, 138 activations and 784 inputs per example"));
}

TEST(EstimateCommand, CnnHasAPoolingWorkspace) {
  const CommandResult result =
      run_memsweep({"estimate", "--dataset", "cifar-10", "--model", "cnn", "--channels", "8,16", "--hidden", "32",
                    "--batch", "4", "--train-examples", "400", "--test-examples", "100"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const auto parts = parts_of(result.out);
  ASSERT_EQ(parts.count("pooling workspace"), 1u) << result.out;
  EXPECT_GT(parts.at("pooling workspace").bytes, 0u);
  EXPECT_EQ(parts.at("resident dataset").bytes, 500u * (3072 * 4 + 4));
}

TEST(EstimateCommand, EverySweepTrialOrOneById) {
  const TempDir dir;
  const auto file = dir.write("sweep.toml", "[sweep]\nrepeats = 2\n[grid]\nbatch_size = [8, 64]\n");
  const CommandResult all = run_memsweep({"estimate", file.string()});
  ASSERT_EQ(all.exit_status, 0) << all.err;
  // Two trials; their repeats train the same shapes and are not repeated.
  std::smatch match;
  std::vector<std::string> ids;
  const std::regex heading(R"(trial ([0-9a-f]{12}) )");
  for (auto it = std::sregex_iterator(all.out.begin(), all.out.end(), heading); it != std::sregex_iterator(); ++it)
    ids.push_back((*it)[1]);
  ASSERT_EQ(ids.size(), 2u) << all.out;

  const CommandResult one = run_memsweep({"estimate", file.string(), "--trial", ids[1]});
  ASSERT_EQ(one.exit_status, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("trial " + ids[1]));
  EXPECT_THAT(one.out, ::testing::Not(HasSubstr("trial " + ids[0])));
  EXPECT_THAT(one.out, HasSubstr("batch 64"));
}

TEST(EstimateCommand, PlanPredictsTheEstimatesTotal) {
  const TempDir dir;
  const auto file = dir.write("sweep.toml", "[[trial]]\ndataset = 'mnist'\nhidden = [300, 100]\nbatch_size = 50\n");
  const CommandResult estimate = run_memsweep({"estimate", file.string()});
  write_tiny_datasets(dir.path() / "data");  // plan looks for mnist
  const CommandResult plan = run_memsweep({"plan", file.string(), "--data-dir", (dir.path() / "data").string()});
  ASSERT_EQ(estimate.exit_status, 0) << estimate.err;
  ASSERT_EQ(plan.exit_status, 0) << plan.err;
  const std::string total = parts_of(estimate.out).at("total").size;
  EXPECT_THAT(plan.out, HasSubstr("predicted"));
  EXPECT_THAT(plan.out, ::testing::MatchesRegex("(.|\n)*300-100 +" + total + "\n(.|\n)*")) << plan.out;
}

struct BadEstimate {
  const char* name;
  std::vector<std::string> args;  // "@" is replaced by the path of a one-trial sweep file
  std::string expected;
};

class EstimateBadInput : public ::testing::TestWithParam<BadEstimate> {};

TEST_P(EstimateBadInput, OneClearLineAndExitStatusTwo) {
  const BadEstimate& c = GetParam();
  const TempDir dir;
  const auto file = dir.write("sweep.toml", "[[trial]]\n");
  const CommandResult result = run_memsweep(with_file(c.args, file.string()), dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_THAT(result.err, HasSubstr(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, EstimateBadInput,
    ::testing::Values(
        BadEstimate{"zero_batch",
                    {"estimate", "--batch", "0"},
                    "memsweep: error: --batch: expected a whole number from 1 to 1048576, found 0"},
        BadEstimate{"unknown_dataset", {"estimate", "--dataset", "svhn"}, "--dataset: unknown dataset \"svhn\""},
        BadEstimate{"quote_in_name", {"estimate", "--optimizer", "ad\"am"}, "--optimizer: "},
        BadEstimate{"cnn_without_channels", {"estimate", "--model", "cnn"}, "--channels: "},
        BadEstimate{"wide_layer", {"estimate", "--hidden", "2000000"}, "--hidden: "},
        BadEstimate{"nothing", {"estimate"}, "a sweep file or a trial's options"},
        BadEstimate{"both", {"estimate", "@", "--batch", "4"}, "not both"},
        BadEstimate{"trial_without_file", {"estimate", "--trial", "0123456789ab"}, "no sweep file was given"},
        BadEstimate{"unknown_trial", {"estimate", "@", "--trial", "0123456789ab"}, "no trial has the id"},
        BadEstimate{"unknown_rule", {"estimate", "--batch", "4", "--rule", "guess"}, "--rule"},
        BadEstimate{"missing_file", {"estimate", "no-such.toml"}, "no-such.toml: cannot read the sweep file"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
