// A trial's own GPUs out of its rank's: how many, what the program is told
// of them, and what the row records.

#include "runner/trial_gpus.hpp"

#include <gtest/gtest.h>

namespace memsweep::runner::detail {
namespace {

RankGpus two_devices() {
  RankGpus rank;
  rank.node_has_gpus = true;
  rank.devices = {{"GPU-aaaa", 4, "Fake GPU 80GB", 80LL << 30}, {"GPU-bbbb", 5, "Fake GPU 80GB", 80LL << 30}};
  rank.driver_version = "999.12.34";
  rank.cuda_version = "12.2";
  return rank;
}

TrialSpec program_trial(std::optional<int> gpus) {
  TrialSpec trial;
  trial.program = ProgramSpec{};
  trial.program->command = {"train.sh"};
  trial.gpus_per_trial = gpus;
  return trial;
}

TEST(TrialGpus, AProgramTakesTheFirstOfItsRanksDevicesAndIsToldThemByUuid) {
  const TrialGpus one = trial_gpus(program_trial(std::nullopt), two_devices());
  ASSERT_TRUE(one.problem.empty());
  ASSERT_EQ(one.devices.size(), 1U);
  EXPECT_EQ(visible_devices(one.devices), "GPU-aaaa");
  EXPECT_EQ(gpu_placeholder(one.devices), "0");
  EXPECT_EQ(nvml_indices(one.devices), (std::vector<int>{4}));

  const TrialGpus both = trial_gpus(program_trial(2), two_devices());
  EXPECT_EQ(visible_devices(both.devices), "GPU-aaaa,GPU-bbbb");
  EXPECT_EQ(gpu_placeholder(both.devices), "0,1") << "CUDA numbers the visible devices from 0";

  EXPECT_TRUE(trial_gpus(TrialSpec{}, two_devices()).devices.empty()) << "the CPU trainer needs none";
  EXPECT_TRUE(trial_gpus(program_trial(0), two_devices()).devices.empty());
  EXPECT_NE(trial_gpus(program_trial(3), two_devices()).problem.find("needs 3 GPUs"), std::string::npos);
}

TEST(TrialGpus, ADeviceNvmlDoesNotListLeavesTheSamplerReadingEveryDevice) {
  RankGpus rank = two_devices();
  rank.devices[1].nvml_index = -1;
  EXPECT_TRUE(nvml_indices(rank.devices).empty());
}

TEST(TrialGpus, TheRowRecordsTheDevicesTheirMemoryInAllAndTheDriver) {
  const RankGpus rank = two_devices();
  TrialRow row;
  record_trial_gpus(row, rank.devices, rank);
  EXPECT_EQ(get_fixed(row.gpu_uuids), "GPU-aaaa,GPU-bbbb");
  EXPECT_EQ(get_fixed(row.gpu_name), "Fake GPU 80GB") << "one name for devices alike";
  EXPECT_EQ(row.gpu_total, 160LL << 30);
  EXPECT_EQ(get_fixed(row.gpu_driver), "999.12.34");
  EXPECT_EQ(get_fixed(row.cuda_version), "12.2");
  TrialRow none;
  record_trial_gpus(none, {}, rank);
  EXPECT_EQ(get_fixed(none.gpu_uuids), "");
  EXPECT_EQ(none.gpu_total, -1);
}

}  // namespace
}  // namespace memsweep::runner::detail
