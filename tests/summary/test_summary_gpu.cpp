// `memsweep summary` shows GPU memory (schema 7) only when some trial has a
// figure: NVML's peak, its source and devices, and the program's PyTorch peaks.

#include "memsweep/summary_text.hpp"
#include "store/store_fixtures.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SummaryGpu, NoSectionWhenNoTrialHasGpuMemory) {
  const SummaryInput input{"results.h5", example_header(), {without_gpu_memory(example_trial(0))}, {}, {}};
  EXPECT_THAT(format_summary({input}), Not(HasSubstr("GPU memory")));
}

TEST(SummaryGpu, TheTrialsWithGpuMemoryAndTheirFigures) {
  TrialRow gpu = without_gpu_memory(example_trial(1));
  gpu.gpu_peak = 1536LL << 20;
  set_fixed(gpu.gpu_devices, "0,2");
  set_fixed(gpu.gpu_peak_source, "tree");
  gpu.torch_reserved_peak = 1024LL << 20;
  gpu.torch_allocated_peak = 512LL << 20;
  const SummaryInput input{"results.h5", example_header(), {without_gpu_memory(example_trial(0)), gpu}, {}, {}};
  const std::string out = format_summary({input});
  ASSERT_THAT(out, HasSubstr("GPU memory (MiB)"));
  const std::string section = out.substr(out.find("GPU memory (MiB)"));
  EXPECT_THAT(section, HasSubstr("1536.0"));
  EXPECT_THAT(section, HasSubstr("0,2"));
  EXPECT_THAT(section, HasSubstr("1024.0"));
  EXPECT_THAT(section, HasSubstr("512.0"));
  EXPECT_THAT(section, HasSubstr(get_fixed(gpu.trial_id)));
  EXPECT_THAT(section, Not(HasSubstr(get_fixed(example_trial(0).trial_id)))) << "a trial without GPU memory";
}

}  // namespace
}  // namespace memsweep::testing
