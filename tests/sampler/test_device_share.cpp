// Which GPUs a rank's trials get (src/sampler/gpu/device_share.hpp): the
// node's devices as the job was given them, dealt out by the rank's place
// among the node's training ranks, refused when they do not go round.

#include "memsweep/error.hpp"
#include "sampler/gpu/device_share.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using gpu::LocalPlace;
using gpu::NodeGpus;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

gpu::EnvironmentLookup environment(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto found = variables.find(std::string(name));
    if (found == variables.end()) return std::nullopt;
    return found->second;
  };
}

TEST(NodeGpus, TheStepsGpusComeFirstThenTheJobsThenCudaVisibleDevicesThenNvml) {
  const std::map<std::string, std::string> all{
      {"SLURM_STEP_GPUS", "2,3"}, {"SLURM_JOB_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "1"}};
  NodeGpus node = gpu::node_gpus(environment(all), 8);
  EXPECT_THAT(node.devices, ElementsAre("2", "3"));
  EXPECT_EQ(node.source, "SLURM_STEP_GPUS");

  node = gpu::node_gpus(environment({{"SLURM_JOB_GPUS", "0,1,2,3"}, {"CUDA_VISIBLE_DEVICES", "1"}}), 8);
  EXPECT_THAT(node.devices, ElementsAre("0", "1", "2", "3"));
  EXPECT_EQ(node.source, "SLURM_JOB_GPUS");

  node = gpu::node_gpus(environment({{"CUDA_VISIBLE_DEVICES", "1"}}), 8);
  EXPECT_THAT(node.devices, ElementsAre("1"));

  node = gpu::node_gpus(environment({}), 3);
  EXPECT_THAT(node.devices, ElementsAre("0", "1", "2"));
  EXPECT_EQ(node.source, "NVML");
  EXPECT_TRUE(gpu::node_gpus(environment({}), 0).devices.empty());
}

TEST(NodeGpus, UuidsAreKeptAndAListEndsAtItsFirstEntryThatNamesNoDevice) {
  const std::string gpu0 = "GPU-8f1c2d3e-0000-1111-2222-333344445555";
  const std::string mig = "MIG-4a5b6c7d-8888-9999-aaaa-bbbbccccdddd";
  EXPECT_THAT(gpu::node_gpus(environment({{"CUDA_VISIBLE_DEVICES", gpu0 + ", " + mig}}), 4).devices,
              ElementsAre(gpu0, mig));
  EXPECT_THAT(gpu::node_gpus(environment({{"CUDA_VISIBLE_DEVICES", "0,2,-1,3"}}), 4).devices, ElementsAre("0", "2"));
  for (const char* none : {"", "-1", "NoDevFiles"})
    EXPECT_TRUE(gpu::node_gpus(environment({{"CUDA_VISIBLE_DEVICES", none}}), 4).devices.empty())
        << "CUDA_VISIBLE_DEVICES=\"" << none << "\" gives a job no GPU, whatever NVML lists";
}

TEST(LocalPlace, RanksOnTheSameHostAreNumberedRankZeroOfSeveralTrainsNothing) {
  const std::vector<std::string> hosts{"n1", "n1", "n2", "n1", "n2"};
  EXPECT_EQ(gpu::local_place(hosts, 0).index, -1) << "rank 0 hands out trials";
  EXPECT_EQ(gpu::local_place(hosts, 1).index, 0);
  EXPECT_EQ(gpu::local_place(hosts, 3).index, 1);
  EXPECT_EQ(gpu::local_place(hosts, 3).count, 2) << "ranks 1 and 3 train on n1";
  EXPECT_EQ(gpu::local_place(hosts, 2).index, 0);
  EXPECT_EQ(gpu::local_place(hosts, 4).index, 1);
  EXPECT_EQ(gpu::local_place(hosts, 4).count, 2);
  const LocalPlace alone = gpu::local_place({"n1"}, 0);
  EXPECT_EQ(alone.index, 0) << "a rank alone trains";
  EXPECT_EQ(alone.count, 1);
}

// The node of 4 devices with 4, 2 and 5 training ranks.
TEST(RankGpus, FourDevicesGoOneToEachOfFourRanksTwoToEachOfTwoAndNeverToFive) {
  const NodeGpus node{{"0", "1", "2", "3"}, "SLURM_STEP_GPUS"};
  std::set<std::string> dealt;
  for (int index = 0; index < 4; ++index) {
    const std::vector<std::string> devices = gpu::rank_gpus(node, {index, 4}, 1, "n1");
    ASSERT_EQ(devices.size(), 1U);
    dealt.insert(devices.front());
  }
  EXPECT_EQ(dealt.size(), 4U) << "no two ranks share a device";

  EXPECT_THAT(gpu::rank_gpus(node, {0, 2}, 2, "n1"), ElementsAre("0", "1"));
  EXPECT_THAT(gpu::rank_gpus(node, {1, 2}, 2, "n1"), ElementsAre("2", "3"));
  EXPECT_THAT(gpu::rank_gpus(node, {1, 2}, 1, "n1"), ElementsAre("1")) << "devices beyond the ranks' stay idle";

  try {
    (void)gpu::rank_gpus(node, {4, 5}, 1, "n1");
    FAIL() << "5 ranks on 4 devices";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("5 ranks train on n1 with 1 GPU per trial"));
    EXPECT_THAT(message, HasSubstr("the node has 4 (0,1,2,3 from SLURM_STEP_GPUS)"));
    EXPECT_THAT(message, HasSubstr("run at most 4 training ranks"));
  }
  EXPECT_THROW((void)gpu::rank_gpus(node, {0, 5}, 1, "n1"), InputError) << "every rank of the node refuses alike";
}

TEST(RankGpus, NoGpuPerTrialOrARankThatTrainsNothingGetsNone) {
  const NodeGpus none{{}, "NVML"};
  EXPECT_TRUE(gpu::rank_gpus(none, {0, 8}, 0, "n1").empty()) << "CPU trials need no device";
  EXPECT_TRUE(gpu::rank_gpus(none, {-1, 8}, 1, "n1").empty()) << "rank 0 of several";
  EXPECT_THROW((void)gpu::rank_gpus(none, {0, 1}, 1, "n1"), InputError);
}

TEST(ResolveDevice, AnIndexOrAUuidOrItsPrefixIsNvmlsDeviceAndAnUnknownOneStaysAsNamed) {
  const std::vector<gpu::GpuDevice> described{
      {0, "GPU-aaaa-0000", "A", 80}, {1, "GPU-bbbb-1111", "B", 40}, {2, "MIG-cccc-2222", "C MIG", 10}};
  EXPECT_EQ(gpu::resolve_device("1", described).visible_id, "GPU-bbbb-1111");
  EXPECT_EQ(gpu::resolve_device("1", described).total_bytes, 40);
  EXPECT_EQ(gpu::resolve_device("GPU-aaaa", described).nvml_index, 0) << "a prefix, as CUDA takes it";
  EXPECT_EQ(gpu::resolve_device("MIG-cccc-2222", described).name, "C MIG");
  const RankGpu unknown = gpu::resolve_device("7", described);
  EXPECT_EQ(unknown.visible_id, "7");
  EXPECT_EQ(unknown.nvml_index, -1);
  EXPECT_EQ(gpu::resolve_device("GPU-dddd", {}).visible_id, "GPU-dddd") << "no NVML: passed on as named";
}

}  // namespace
}  // namespace memsweep::testing
