// The GPU reader's logic through a library that answers NVML's calls
// (fake_nvml.cpp, loaded by path), and the absent driver for real: this
// machine has no libnvidia-ml.

#include "memsweep/error.hpp"
#include "memsweep/rank_gpus.hpp"
#include "memsweep/sampler.hpp"
#include "sampler/gpu/device_share.hpp"
#include "sampler/gpu/gpu_memory.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <dlfcn.h>
#include <stdlib.h>

#include <unistd.h>

#include <array>
#include <string>
#include <thread>

namespace memsweep::gpu {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

// The fake's control functions, found in the same loaded copy the reader uses.
class FakeNvml {
 public:
  FakeNvml() : handle_(::dlopen(MEMSWEEP_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) throw std::runtime_error(::dlerror());
    call<void>("fake_nvml_reset");
  }
  ~FakeNvml() { ::dlclose(handle_); }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  template <typename Result, typename... Args>
  Result call(const char* name, Args... args) {
    auto* function = reinterpret_cast<Result (*)(Args...)>(::dlsym(handle_, name));
    if (function == nullptr) throw std::runtime_error(name);
    return function(args...);
  }
  unsigned add_device(std::int64_t used) {
    return call<unsigned>("fake_nvml_add_device", static_cast<unsigned long long>(used));
  }
  void set_used(unsigned device, std::int64_t used) {
    call<void>("fake_nvml_set_used", device, static_cast<unsigned long long>(used));
  }
  void add_process(unsigned device, unsigned pid, std::int64_t used) {
    call<void>("fake_nvml_add_process", device, pid, static_cast<unsigned long long>(used));
  }

 private:
  void* handle_;
};

std::unique_ptr<GpuMemoryReader> open_fake() {
  NvmlOpen opened = open_nvml(MEMSWEEP_FAKE_NVML_PATH);
  if (!opened.library) throw std::runtime_error(opened.problem);
  return std::make_unique<GpuMemoryReader>(std::move(opened.library));
}

TEST(GpuMemory, AbsentDriverIsOneLineNotAnError) {
  // No NVIDIA driver on this machine, and none named by the test variable.
  ::unsetenv(kNvmlLibraryVariable);
  if (void* real = ::dlopen(kNvmlLibraryName, RTLD_NOW | RTLD_NOLOAD); real != nullptr) {
    ::dlclose(real);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  const GpuOpen opened = open_gpu_memory();
  EXPECT_EQ(opened.reader, nullptr);
  EXPECT_EQ(opened.problem, "no NVIDIA driver: GPU memory not sampled");
}

TEST(GpuMemory, TestVariableLoadsTheNamedLibrary) {
  FakeNvml fake;
  fake.add_device(3 * kMiB);
  ::setenv(kNvmlLibraryVariable, MEMSWEEP_FAKE_NVML_PATH, 1);
  const GpuOpen opened = open_gpu_memory();
  ::unsetenv(kNvmlLibraryVariable);
  ASSERT_NE(opened.reader, nullptr) << opened.problem;
  EXPECT_EQ(opened.reader->device_count(), 1);
}

TEST(GpuMemory, FailedInitSaysWhyAndShutsNothingDown) {
  FakeNvml fake;
  fake.call<void>("fake_nvml_set_init_result", 9);
  const NvmlOpen opened = open_nvml(MEMSWEEP_FAKE_NVML_PATH);
  EXPECT_EQ(opened.library, nullptr);
  EXPECT_NE(opened.problem.find("Driver Not Loaded"), std::string::npos) << opened.problem;
  EXPECT_EQ(fake.call<int>("fake_nvml_shutdowns"), 0);
}

TEST(GpuMemory, NoDeviceIsNotSampled) {
  FakeNvml fake;
  ::setenv(kNvmlLibraryVariable, MEMSWEEP_FAKE_NVML_PATH, 1);
  const GpuOpen opened = open_gpu_memory();
  ::unsetenv(kNvmlLibraryVariable);
  EXPECT_EQ(opened.reader, nullptr);
  EXPECT_EQ(opened.problem, "NVML lists no GPU: GPU memory not sampled");
  EXPECT_EQ(fake.call<int>("fake_nvml_shutdowns"), 1);  // the library was let go
}

// What a trial's record and its CUDA_VISIBLE_DEVICES (by UUID) need: each
// device's UUID, name and memory, and the driver's versions.
TEST(GpuMemory, DevicesAreDescribedByUuidNameAndMemoryAndTheDriverByItsVersions) {
  FakeNvml fake;
  const unsigned whole = fake.add_device(0);
  const unsigned split = fake.add_device(0);
  fake.call<unsigned>("fake_nvml_add_mig", split, 2U, static_cast<unsigned long long>(40) << 30);
  const std::unique_ptr<GpuMemoryReader> reader = open_fake();
  const std::vector<GpuDevice> devices = reader->describe_devices();
  ASSERT_EQ(devices.size(), 3U) << "a GPU in MIG mode is its instances";
  EXPECT_EQ(devices[0].index, 0);
  EXPECT_EQ(devices[0].uuid, "GPU-00000000-1111-2222-3333-000000000000");
  EXPECT_EQ(devices[0].name, "Fake GPU 80GB");
  EXPECT_EQ(devices[0].total_bytes, std::int64_t{80} << 30);
  for (const int instance : {1, 2}) {
    EXPECT_EQ(devices[instance].index, instance);
    EXPECT_EQ(devices[instance].uuid, fmt::format("MIG-00000000-1111-2222-3333-{:012}", instance - 1));
    EXPECT_EQ(devices[instance].name, "Fake GPU MIG 40GB");
    EXPECT_EQ(devices[instance].total_bytes, std::int64_t{40} << 30) << "an instance's own memory";
  }
  const GpuDriver driver = reader->driver();
  EXPECT_EQ(driver.version, "999.12.34");
  EXPECT_EQ(driver.cuda_version, "12.2");

  // A UUID longer than NVML's buffer is refused by the library: no text,
  // never a cut one.
  fake.call<void>("fake_nvml_set_uuid", whole, std::string(kNvmlTextBufferSize, 'x').c_str());
  EXPECT_EQ(reader->describe_devices()[0].uuid, "");
}

TEST(GpuMemory, ATrialsOwnDevicesAreTheOnlyOnesRead) {
  FakeNvml fake;
  for (int device = 0; device < 4; ++device) fake.add_device((device + 1) * 10 * kMiB);
  fake.add_process(1, 100, 300 * kMiB);  // the trial's, on its device
  fake.add_process(3, 100, 5 * kMiB);    // the same pid on a device not its own: not read
  auto reader = open_fake();
  reader->select_devices({1});
  std::array<std::int64_t, kMaxGpuDevices> used{};
  EXPECT_EQ(reader->read_device_used(used), 20 * kMiB);
  EXPECT_EQ(used[0], -1);
  EXPECT_EQ(used[1], 20 * kMiB);
  EXPECT_EQ(used[3], -1);
  const std::array<int, 1> pids{100};
  const int calls = fake.call<int>("fake_nvml_process_calls");
  const TreeGpuReading reading = reader->read_tree(pids);
  EXPECT_EQ(fake.call<int>("fake_nvml_process_calls") - calls, 1) << "one device asked";
  EXPECT_TRUE(reading.ok);
  EXPECT_EQ(reading.bytes, 300 * kMiB);
  EXPECT_EQ(reading.devices, (std::vector<int>{1}));

  reader->select_devices({});
  EXPECT_EQ(reader->read_device_used(used), 100 * kMiB) << "empty: every device again";
  EXPECT_EQ(reader->read_tree(pids).bytes, 305 * kMiB);
}

TEST(GpuMemory, CudaVersionsAreWrittenAsPeopleWriteThem) {
  EXPECT_EQ(cuda_version_text(12020), "12.2");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
  EXPECT_EQ(cuda_version_text(11080), "11.8");
  EXPECT_EQ(cuda_version_text(0), "") << "not known";
}

TEST(GpuMemory, DeviceUsedPerDeviceAndSummed) {
  FakeNvml fake;
  fake.add_device(100 * kMiB);
  fake.add_device(7 * kMiB);
  auto reader = open_fake();
  std::array<std::int64_t, kMaxGpuDevices> used{};
  EXPECT_EQ(reader->read_device_used(used), 107 * kMiB);
  EXPECT_EQ(used[0], 100 * kMiB);
  EXPECT_EQ(used[1], 7 * kMiB);
  EXPECT_EQ(used[2], -1);
  EXPECT_TRUE(reader->problems().empty());
}

TEST(GpuMemory, TreeIsFilteredByPidsAcrossDevices) {
  FakeNvml fake;
  fake.add_device(0);
  fake.add_device(0);
  fake.add_device(0);
  fake.add_process(0, 100, 300 * kMiB);  // the trial's root
  fake.add_process(0, 999, 50 * kMiB);   // someone else's
  fake.add_process(2, 101, 20 * kMiB);   // the trial's worker
  auto reader = open_fake();
  const std::array<int, 2> pids{100, 101};
  const TreeGpuReading reading = reader->read_tree(pids);
  EXPECT_TRUE(reading.ok);
  EXPECT_EQ(reading.bytes, 320 * kMiB);
  EXPECT_EQ(reading.devices, (std::vector<int>{0, 2}));
}

TEST(GpuMemory, TreeListLongerThanTheBufferIsReadWhole) {
  FakeNvml fake;
  fake.add_device(0);
  for (unsigned pid = 1; pid <= 200; ++pid) fake.add_process(0, pid, kMiB);
  auto reader = open_fake();
  const std::array<int, 2> pids{1, 200};
  const TreeGpuReading reading = reader->read_tree(pids);
  EXPECT_TRUE(reading.ok);
  EXPECT_EQ(reading.bytes, 2 * kMiB);
}

TEST(GpuMemory, NvmlErrorsBecomeOneWarningEach) {
  FakeNvml fake;
  fake.add_device(kMiB);
  fake.call<void>("fake_nvml_set_memory_result", 0U, 3);
  fake.call<void>("fake_nvml_set_process_result", 0U, 3);
  auto reader = open_fake();
  std::array<std::int64_t, kMaxGpuDevices> used{};
  const std::array<int, 1> pids{1};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(reader->read_device_used(used), -1);
    EXPECT_FALSE(reader->read_tree(pids).ok);
  }
  const std::vector<std::string> problems = reader->problems();
  ASSERT_EQ(problems.size(), 2U);
  EXPECT_NE(problems[0].find("nvmlDeviceGetMemoryInfo(device 0): NVML error 3 (Not Supported)"), std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("falls back to the device's used memory"), std::string::npos) << problems[1];
}

// The sampler with a reader: every sample carries the devices' used memory
// and the tree's last per-process figure; the region has the trial's peak.
TEST(GpuMemory, TheSamplerRecordsGpuMemoryAndTheRegionsPeak) {
  FakeNvml fake;
  fake.add_device(100 * kMiB);
  fake.add_device(5 * kMiB);
  fake.add_process(1, static_cast<unsigned>(::getpid()), 700 * kMiB);  // this process is the sampled one
  fake.add_process(0, 1, 90 * kMiB);                                   // init's: not the trial's
  SamplerOptions options;
  options.interval = std::chrono::milliseconds(5);
  Sampler sampler(options, make_proc_memory_probe(), nullptr);
  sampler.set_gpu(open_fake());
  sampler.begin_region();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the per-process read every 100 ms at least
  const RegionSummary region = sampler.end_region();
  EXPECT_EQ(region.gpu_peak_bytes, 700 * kMiB);
  EXPECT_EQ(region.gpu_devices, "1");
  EXPECT_EQ(region.gpu_peak_source, "tree");
  EXPECT_GE(sampler.stats().gpu_tree_reads, 2U);
  EXPECT_LE(sampler.stats().gpu_tree_reads, 4U) << "bounded: at most one read per 100 ms";
  std::size_t samples = 0;
  std::size_t with_tree = 0;
  sampler.drain([&](const SampleChunk& chunk) {
    for (const Sample& sample : chunk.view()) {
      ++samples;
      EXPECT_EQ(sample.gpu_used_bytes, 105 * kMiB);
      if (sample.gpu_tree_used_bytes == 700 * kMiB) ++with_tree;
    }
  });
  EXPECT_GT(samples, 10U);
  EXPECT_GT(with_tree, samples / 2) << "the tree's figure is carried from its read on";
  EXPECT_TRUE(sampler.gpu_problems().empty());
  EXPECT_EQ(region.gpu_warning, "");
}

// NVML's failures reach a trial once: the region in which each first happened.
TEST(GpuMemory, AFailingCallIsWarnedInTheFirstRegionOnly) {
  FakeNvml fake;
  fake.add_device(kMiB);
  fake.call<void>("fake_nvml_set_process_result", 0U, 3);
  SamplerOptions options;
  options.interval = std::chrono::milliseconds(5);
  Sampler sampler(options, make_proc_memory_probe(), nullptr);
  sampler.set_gpu(open_fake());
  sampler.begin_region();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a few ticks
  const RegionSummary first = sampler.end_region();
  EXPECT_THAT(first.gpu_warning, ::testing::HasSubstr("nvmlDeviceGetComputeRunningProcesses(device 0)"));
  EXPECT_EQ(first.gpu_peak_source, "device_delta") << "no per-process figures: the device's rise";
  sampler.begin_region();
  const RegionSummary second = sampler.end_region();
  EXPECT_EQ(second.gpu_warning, "");
}

TEST(GpuTrialPeak, TreePeakIsTheLargestTreeReadAndItsDevices) {
  GpuTrialPeak peak;
  peak.add_tree(TreeGpuReading{true, 100 * kMiB, {1}});
  peak.add_tree(TreeGpuReading{true, 900 * kMiB, {1, 3}});
  peak.add_tree(TreeGpuReading{false, 5000 * kMiB, {0}});  // partial: not used
  peak.add_tree(TreeGpuReading{true, 200 * kMiB, {1}});
  EXPECT_EQ(peak.source(), GpuPeakSource::tree);
  EXPECT_EQ(peak.peak_bytes(), 900 * kMiB);
  EXPECT_EQ(GpuTrialPeak::devices_text(peak.devices()), "1,3");
}

TEST(GpuTrialPeak, WithoutPerProcessFiguresTheDeviceRiseIsThePeak) {
  GpuTrialPeak peak;
  const std::array<std::int64_t, 2> start{500 * kMiB, 10 * kMiB};
  const std::array<std::int64_t, 2> busy{1500 * kMiB, 10 * kMiB};
  const std::array<std::int64_t, 2> later{900 * kMiB, 10 * kMiB};
  peak.add_device_used(start);
  peak.add_device_used(busy);
  peak.add_device_used(later);
  EXPECT_EQ(peak.source(), GpuPeakSource::device_delta);
  EXPECT_EQ(peak.peak_bytes(), 1000 * kMiB);
  EXPECT_EQ(peak.devices(), (std::vector<int>{0}));
}

TEST(GpuTrialPeak, TreeFiguresWinOverTheDeviceRise) {
  GpuTrialPeak peak;
  const std::array<std::int64_t, 1> start{0};
  const std::array<std::int64_t, 1> busy{4000 * kMiB};  // another process's memory too
  peak.add_device_used(start);
  peak.add_device_used(busy);
  peak.add_tree(TreeGpuReading{true, 0, {}});  // the tree was never on a GPU
  EXPECT_EQ(peak.source(), GpuPeakSource::tree);
  EXPECT_EQ(peak.peak_bytes(), 0);
  EXPECT_TRUE(peak.devices().empty());
}

TEST(GpuTrialPeak, NothingReadIsNotMeasured) {
  const GpuTrialPeak peak;
  EXPECT_EQ(peak.source(), GpuPeakSource::none);
  EXPECT_EQ(peak.peak_bytes(), -1);
}

TEST(GpuMemory, TreeReadSpacingIsBoundedByItsCost) {
  using std::chrono::milliseconds;
  EXPECT_EQ(next_tree_read_delay(milliseconds(0)), kMinTreeInterval);
  EXPECT_EQ(next_tree_read_delay(milliseconds(1)), milliseconds(100));
  EXPECT_EQ(next_tree_read_delay(milliseconds(8)), milliseconds(400));  // 2 % of the time under the lock
}

}  // namespace
}  // namespace memsweep::gpu

namespace memsweep::gpu {
namespace {

// assign_rank_gpus through the test NVML: the job's environment as a
// launcher leaves it, cleared of what this test process may have.
class RankGpusOnFourDevices : public ::testing::Test {
 protected:
  RankGpusOnFourDevices() {
    for (int device = 0; device < 4; ++device) fake_.add_device(0);
    for (const std::string_view name : {kStepGpusVariable, kJobGpusVariable, kVisibleDevicesVariable})
      ::unsetenv(std::string(name).c_str());
    ::setenv(kNvmlLibraryVariable, MEMSWEEP_FAKE_NVML_PATH, 1);
  }
  ~RankGpusOnFourDevices() override {
    ::unsetenv(kNvmlLibraryVariable);
    for (const std::string_view name : {kStepGpusVariable, kJobGpusVariable, kVisibleDevicesVariable})
      ::unsetenv(std::string(name).c_str());
  }
  static std::vector<std::string> hosts(int training_ranks) {
    return std::vector<std::string>(static_cast<std::size_t>(training_ranks) + 1, "n1");  // rank 0 trains none
  }
  static std::string uuid(int device) { return fmt::format("GPU-00000000-1111-2222-3333-{:012}", device); }
  FakeNvml fake_;
};

TEST_F(RankGpusOnFourDevices, FourRanksGetOneEachByUuidTwoGetTwoEachAndFiveAreRefused) {
  const auto one = [](bool) { return 1; };
  for (int rank = 1; rank <= 4; ++rank) {
    const RankGpus gpus = assign_rank_gpus(hosts(4), rank, one);
    EXPECT_TRUE(gpus.node_has_gpus);
    ASSERT_EQ(gpus.devices.size(), 1U);
    EXPECT_EQ(gpus.devices[0].visible_id, uuid(rank - 1));
    EXPECT_EQ(gpus.devices[0].nvml_index, rank - 1);
    EXPECT_EQ(gpus.devices[0].name, "Fake GPU 80GB");
    EXPECT_EQ(gpus.driver_version, "999.12.34");
    EXPECT_EQ(gpus.source, "NVML");
  }
  const RankGpus second = assign_rank_gpus(hosts(2), 2, [](bool) { return 2; });
  ASSERT_EQ(second.devices.size(), 2U);
  EXPECT_EQ(second.devices[0].visible_id, uuid(2));
  EXPECT_EQ(second.devices[1].visible_id, uuid(3));
  EXPECT_TRUE(assign_rank_gpus(hosts(4), 0, one).devices.empty()) << "rank 0 hands out trials";
  try {
    (void)assign_rank_gpus(hosts(5), 3, one);
    FAIL() << "5 ranks on 4 devices";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("5 ranks train on n1"));
    EXPECT_THAT(error.what(), ::testing::HasSubstr("the node has 4 (0,1,2,3 from NVML)"));
  }
}

TEST_F(RankGpusOnFourDevices, SlurmsIndicesAndCudasUuidsNameTheDevicesTheJobWasGiven) {
  ::setenv(std::string(kJobGpusVariable).c_str(), "2,3", 1);
  EXPECT_EQ(assign_rank_gpus(hosts(2), 1, [](bool) { return 1; }).devices.at(0).visible_id, uuid(2));
  EXPECT_EQ(assign_rank_gpus(hosts(2), 2, [](bool) { return 1; }).devices.at(0).visible_id, uuid(3));
  ::unsetenv(std::string(kJobGpusVariable).c_str());
  // A UUID's prefix, as CUDA takes it, is the whole device.
  ::setenv(std::string(kVisibleDevicesVariable).c_str(), "GPU-00000000-1111-2222-3333-000000000001", 1);
  const RankGpus alone = assign_rank_gpus({"n1"}, 0, [](bool has) { return has ? 1 : 0; });
  ASSERT_EQ(alone.devices.size(), 1U) << "a rank alone trains";
  EXPECT_EQ(alone.devices[0].nvml_index, 1);
  // A job given no GPU: the default asks for none, and a trial that
  // asks for one is refused.
  ::setenv(std::string(kVisibleDevicesVariable).c_str(), "", 1);
  EXPECT_FALSE(assign_rank_gpus({"n1"}, 0, [](bool has) { return has ? 1 : 0; }).node_has_gpus);
  EXPECT_THROW((void)assign_rank_gpus({"n1"}, 0, [](bool) { return 1; }), InputError);
}

}  // namespace
}  // namespace memsweep::gpu
