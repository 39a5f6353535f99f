// The sweep file's [search] (docs/search.md): what it reads, what it
// refuses (file, line and key), and the probes search_trial() makes.

#include "memsweep/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace memsweep {
namespace {

using ::testing::HasSubstr;

constexpr std::string_view kConfigurations = "[grid]\nhidden = [[64], [128]]\n";

SweepSpec with_search(std::string_view search, std::string_view configurations = kConfigurations) {
  return parse_sweep(std::string(configurations) + "[search]\n" + std::string(search), "s.toml");
}

TEST(ConfigSearch, ReadsEveryKeyAndLeavesTheConfigurationsAtTheRangesLowEnd) {
  const SweepSpec sweep = with_search(
      "axis = \"batch_size\"\nrange = [8, 4096]\nlimit = [\"1GiB\", 3000000000]\nresolution = 0.05\n"
      "max_trials = 9\nprobe_epochs = 2\nverify = false\nstrategy = \"double\"\n");
  ASSERT_TRUE(sweep.search.has_value());
  const SearchSpec& search = *sweep.search;
  EXPECT_EQ(search.axis, "batch_size");
  EXPECT_EQ(search.low, 8);
  EXPECT_EQ(search.high, 4096);
  EXPECT_EQ(search.limits, (std::vector<std::uint64_t>{1ULL << 30, 3000000000ULL}));
  EXPECT_DOUBLE_EQ(search.resolution, 0.05);
  EXPECT_EQ(search.max_trials, 9);
  EXPECT_EQ(search.probe_epochs, 2);
  EXPECT_FALSE(search.verify);
  EXPECT_EQ(search.strategy, SearchStrategy::doubling);
  ASSERT_EQ(sweep.trials.size(), 2U);
  for (const TrialSpec& configuration : sweep.trials) EXPECT_EQ(configuration.batch_size, 8);
}

TEST(ConfigSearch, DefaultsAreTheIssuesAndTheSearchIsPartOfTheDefinition) {
  const SweepSpec sweep = with_search("axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\n");
  EXPECT_DOUBLE_EQ(sweep.search->resolution, 0.02);
  EXPECT_EQ(sweep.search->max_trials, 12);
  EXPECT_EQ(sweep.search->probe_epochs, 1);
  EXPECT_TRUE(sweep.search->verify);
  EXPECT_EQ(sweep.search->strategy, SearchStrategy::model);
  const SweepSpec other = with_search("axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"2GiB\"\n");
  EXPECT_NE(sweep.definition, other.definition) << "another limit is another sweep (a resume must refuse it)";
}

struct BadSearch {
  const char* name;
  std::string search;
  std::string expected;  // "s.toml:LINE: KEY"
};

class ConfigSearchErrors : public ::testing::TestWithParam<BadSearch> {};

TEST_P(ConfigSearchErrors, NameTheFileLineAndKey) {
  try {
    with_search(GetParam().search);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), HasSubstr(GetParam().expected)) << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Keys, ConfigSearchErrors,
    ::testing::Values(
        BadSearch{"NotAnIntegerField", "axis = \"learning_rate\"\nrange = [8, 64]\nlimit = \"1GiB\"\n",
                  "s.toml:4: search.axis"},
        BadSearch{"EmptyRange", "axis = \"batch_size\"\nrange = [64, 8]\nlimit = \"1GiB\"\n", "s.toml:5: search.range"},
        BadSearch{"NonPositiveRange", "axis = \"batch_size\"\nrange = [0, 8]\nlimit = \"1GiB\"\n",
                  "s.toml:5: search.range[0]"},
        BadSearch{"RangeBeyondTheField", "axis = \"batch_size\"\nrange = [8, 2000000]\nlimit = \"1GiB\"\n",
                  "s.toml:5: search.range[1]"},
        BadSearch{"LimitNoSize", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"lots\"\n",
                  "s.toml:6: search.limit"},
        BadSearch{"LimitInAList", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = [\"1GiB\", -3]\n",
                  "s.toml:6: search.limit[1]"},
        BadSearch{"UnknownKey", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\ntries = 3\n", "tries"},
        BadSearch{"Strategy", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\nstrategy = \"guess\"\n",
                  "s.toml:7: search.strategy"},
        BadSearch{"Resolution", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\nresolution = 1.5\n",
                  "s.toml:7: search.resolution"},
        BadSearch{"NoLimit", "axis = \"batch_size\"\nrange = [8, 64]\n", "search: expected `limit`"},
        BadSearch{"WholeDeviceOfTheHost", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"device\"\n",
                  "s.toml:6: search.limit: expected a memory size"},
        BadSearch{"UnknownDevice", "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\ndevice = \"tpu\"\n",
                  "s.toml:7: search.device: expected \"host\" (the trial's memory) or \"gpu\""},
        BadSearch{"GpuOfTheCpuTrainer",
                  "axis = \"batch_size\"\nrange = [8, 64]\nlimit = \"device\"\ndevice = \"gpu\"\n",
                  "search.device: device = \"gpu\" searches within a GPU limit, but configuration 1"}),
    [](const ::testing::TestParamInfo<BadSearch>& each) { return std::string(each.param.name); });

TEST(ConfigSearch, TheAxisInAnySectionIsRefusedWhereItIsWritten) {
  const std::string search = "[search]\naxis = \"batch_size\"\nrange = [8, 64]\nlimit = \"1GiB\"\n";
  for (const auto& [file, where] : std::vector<std::pair<std::string, std::string>>{
           {"[grid]\nbatch_size = [8, 16]\n", "s.toml:2: grid.batch_size"},
           {"[defaults]\nbatch_size = 8\n[[trial]]\nlearning_rate = 0.1\n", "s.toml:2: defaults.batch_size"},
           {"[[trial]]\nlearning_rate = 0.1\n[[trial]]\nbatch_size = 4\n", "s.toml:4: trial[1].batch_size"}}) {
    try {
      parse_sweep(file + search, "s.toml");
      ADD_FAILURE() << "accepted " << file;
    } catch (const ConfigError& error) {
      EXPECT_THAT(error.what(), HasSubstr(where));
      EXPECT_THAT(error.what(), HasSubstr("axis of [search]"));
    }
  }
}

TEST(ConfigSearch, AGpuSearchsProbeHasItsLimitAsItsGpuLimitAndLeavesTheBudgetAlone) {
  const SweepSpec sweep = with_search(
      "axis = \"batch_size\"\nrange = [8, 64]\nlimit = [\"40GiB\", \"device\"]\n"
      "device = \"gpu\"\n",
      "[defaults]\nprogram = ['train.sh']\nmem_budget = '16GiB'\n[[trial]]\n");
  ASSERT_TRUE(sweep.search.has_value());
  EXPECT_EQ(sweep.search->device, SearchDevice::gpu);
  EXPECT_EQ(sweep.search->limits, (std::vector<std::uint64_t>{40ULL << 30, TrialSpec::kWholeDevice}));
  const TrialSpec configuration = sweep.trials.at(0);
  const TrialSpec probe =
      search_trial(configuration, *sweep.search, SearchPoint{.value = 32, .limit_bytes = 40ULL << 30, .gpu = true});
  EXPECT_EQ(probe.gpu_limit_bytes, 40ULL << 30);
  EXPECT_EQ(probe.mem_budget_bytes, 16ULL << 30) << "the host's limit stays the file's";
  const TrialSpec host_probe =
      search_trial(configuration, *sweep.search, SearchPoint{.value = 32, .limit_bytes = 40ULL << 30});
  EXPECT_NE(probe.id, host_probe.id) << "the same bytes of another memory: another probe";
}

TEST(ConfigSearch, AProbeIsItsConfigurationAtTheValueWithItsLimitInItsId) {
  const SweepSpec sweep = with_search("axis = \"batch_size\"\nrange = [8, 4096]\nlimit = [\"1GiB\", \"2GiB\"]\n",
                                      "[defaults]\nepochs = 5\n[[trial]]\nlearning_rate = 0.1\n");
  const TrialSpec configuration = sweep.trials[0];
  const SearchPoint at_one{.search = 0, .probe = 3, .value = 300, .limit_bytes = 1ULL << 30, .full = false};
  const TrialSpec probe = search_trial(configuration, *sweep.search, at_one);
  EXPECT_EQ(probe.batch_size, 300);
  EXPECT_EQ(probe.epochs, 1) << "a probe trains probe_epochs";
  EXPECT_EQ(probe.mem_budget_bytes, 1ULL << 30);
  EXPECT_EQ(probe.id, trial_id(probe));
  SearchPoint full = at_one;
  full.full = true;
  EXPECT_EQ(search_trial(configuration, *sweep.search, full).epochs, 5);
  SearchPoint other_limit = at_one;
  other_limit.limit_bytes = 2ULL << 30;
  EXPECT_NE(search_trial(configuration, *sweep.search, other_limit).id, probe.id);
  SearchPoint other_number = at_one;
  other_number.probe = 7;
  EXPECT_EQ(search_trial(configuration, *sweep.search, other_number).id, probe.id)
      << "the probe's number is bookkeeping, not what the trial is";
}

TEST(ConfigSearch, MoreSearchesThanRankZeroKeepsAreRefusedWithTheCount) {
  std::string rates;
  for (int k = 1; k <= 5001; ++k) rates += (k > 1 ? ", " : "") + std::to_string(k) + "e-5";
  try {
    with_search("axis = \"batch_size\"\nrange = [8, 64]\nlimit = [\"1GiB\", \"2GiB\"]\n",
                "[grid]\nlearning_rate = [" + rates + "]\n");
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_THAT(error.what(), HasSubstr("s.toml:3: search"));
    EXPECT_THAT(error.what(), HasSubstr("5001 configurations x 2 limits = 10002 searches"));
  }
}

TEST(ConfigSearch, WidthAndParamsAxesSetWhatTheySay) {
  const SweepSpec width =
      with_search("axis = \"width\"\nrange = [16, 4096]\nlimit = \"1GiB\"\n", "[[trial]]\nhidden = [10, 20, 30]\n");
  const TrialSpec wide = search_trial(width.trials[0], *width.search, SearchPoint{.value = 512, .limit_bytes = 1});
  EXPECT_EQ(wide.hidden, (std::vector<int>{512, 512, 512}));
  const SweepSpec params = with_search("axis = \"params.units\"\nrange = [16, 4096]\nlimit = \"1GiB\"\n",
                                       "[[trial]]\nprogram = [\"true\", \"--units={units}\"]\n");
  EXPECT_EQ(params.trials[0].params_json(), "{\"units\":16}") << "the configuration holds the low end";
  const TrialSpec probe = search_trial(params.trials[0], *params.search, SearchPoint{.value = 99, .limit_bytes = 1});
  EXPECT_EQ(probe.params_json(), "{\"units\":99}");
}

}  // namespace
}  // namespace memsweep
