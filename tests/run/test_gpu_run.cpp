// GPU memory in a real run on this machine, which has no NVIDIA driver:
// one line says so, the run goes on and exits 0, NVML's columns stay "not
// measured", and the program's own {"gpu": ...} events line is kept.

#include "run/results_file.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <dlfcn.h>

#include <gtest/gtest.h>

#include <fstream>

namespace memsweep::testing {
namespace {

constexpr char kNoDriverLine[] = "no NVIDIA driver: GPU memory not sampled";

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t count = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++count;
  return count;
}

TEST(GpuRun, WithoutADriverOneLineSaysSoAndTheColumnsAreNotMeasured) {
  // Loaded, not only looked up (RTLD_NOLOAD asks whether this process already
  // has it, which a test process never does): a GPU node skips, loudly.
  if (void* driver = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL); driver != nullptr) {
    ::dlclose(driver);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  const TempDir dir;
  std::ofstream(dir.path() / "gpu.toml")
      << "[sweep]\nname = \"gpu-absent\"\nseed = 1\n\n[programs.reporter]\ncommand = [\"/bin/sh\", \"-c\", "
         "\"echo '{{\\\"gpu\\\": {{\\\"device\\\": 0, \\\"allocated_peak\\\": 1000, \\\"reserved_peak\\\": 2048}}}}' "
         ">&3; sleep 0.1\"]\n\n[defaults]\nprogram = \"reporter\"\n\n[grid]\nbatch_size = [8, 16]\n";
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_TEST_NVML_LIBRARY"] = "";  // the real library's name, not a test's
  const CommandResult run =
      run_command({MEMSWEEP_EXECUTABLE, "run", "gpu.toml", "-o", "gpu.h5"}, dir.path().string(), environment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  EXPECT_EQ(occurrences(run.out + run.err, kNoDriverLine), 1U) << run.out << run.err;

  const TsvTable trials = h5py_table(dir.path() / "gpu.h5", "trials");
  ASSERT_EQ(trials.rows.size(), 2U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_EQ(trials.at(row, "status"), "ok");
    EXPECT_EQ(trials.at(row, "gpu_peak"), "-1");
    EXPECT_EQ(trials.at(row, "gpu_devices"), "");
    EXPECT_EQ(trials.at(row, "gpu_peak_source"), "");
    EXPECT_EQ(trials.at(row, "torch_allocated_peak"), "1000");
    EXPECT_EQ(trials.at(row, "torch_reserved_peak"), "2048");
  }
  const TsvTable samples = h5py_table(dir.path() / "gpu.h5", "samples");
  ASSERT_FALSE(samples.rows.empty());
  for (std::size_t row = 0; row < samples.rows.size(); ++row) {
    EXPECT_EQ(samples.at(row, "gpu_used"), "-1") << row;
    EXPECT_EQ(samples.at(row, "gpu_tree_used"), "-1") << row;
  }
}

}  // namespace
}  // namespace memsweep::testing
