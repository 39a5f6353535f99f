// A tiny program's recorded peak is the program's, not memsweep's
// (docs/runner.md, "Programs": what a program's peak is). The trial's child
// is a fork of its rank until it execs; neither a sample nor a peak from
// before the exec may count. `/bin/sleep 0.5` and a program touching 2 MiB
// (tests/runner/hwm_program.cpp), each as a one-trial sweep, run by
// `memsweep run` alone and under mpirun on three ranks, read back with
// h5py: the recorded peak within 0.3 MiB of the program's own VmHWM, read
// by the program itself (or, for sleep, by a reader of its own /proc
// status), never from memsweep's figures; and its samples' mean not pulled
// down by samples of nothing (RSS 0 at the exec) nor up by the rank's.

#include "run/results_file.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace memsweep::testing {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// The issue's bound (memsweep recorded 10 to 15 MiB for a 1.6 MiB sleep).
constexpr double kPeakToleranceBytes = 0.3 * kMiB;
// The program's RSS climbs while it loads (a sample or two at the exec);
// its mean stays near its peak unless samples of nothing pull it down.
constexpr double kMeanFloor = 0.75;
// At 10 ms, a 0.3 to 0.5 s program gets about 30 to 50 samples.
constexpr std::size_t kMinSamples = 10;

enum class Launch { alone, mpirun };

struct PeakCase {
  const char* name;
  bool sleep;  // /bin/sleep 0.5; otherwise hwm_program touching 2 MiB for 300 ms
  Launch launch;
};

// VmHWM of a `/bin/sleep 0.5` started by a shell, read from its status
// while it sleeps: sleep's own peak, by no code of memsweep's.
double sleep_own_peak_bytes() {
  const CommandResult read =
      run_command({"/bin/sh", "-c", "/bin/sleep 0.5 & p=$!; /bin/sleep 0.3; grep VmHWM /proc/$p/status; wait $p"});
  EXPECT_EQ(read.exit_status, 0) << read.err;
  const std::size_t colon = read.out.find(':');
  if (colon == std::string::npos) return -1;
  return std::stod(read.out.substr(colon + 1)) * 1024;  // "VmHWM:	    1636 kB"
}

class ProgramPeaks : public ::testing::TestWithParam<PeakCase> {};

TEST_P(ProgramPeaks, AreTheProgramsOwnWithinAThirdOfAMiB) {
  const PeakCase& test = GetParam();
  const TempDir dir;
  const std::string own_file = (dir.path() / "own.txt").string();
  const std::string command =
      test.sleep ? R"("/bin/sleep", "0.5")" : fmt::format(R"("{}", "2", "300", "{}")", MEMSWEEP_HWM_PROGRAM, own_file);
  const std::string sweep =
      dir.write("peak.toml", fmt::format("[sweep]\nname = \"peak\"\n[[trial]]\ndataset = \"synthetic\"\n"
                                         "program = [{}]\n",
                                         command))
          .string();
  const std::string file = (dir.path() / "peak.h5").string();
  const std::vector<std::string> run_argv = memsweep_argv({"run", sweep, "-o", file});
  const CommandResult run =
      run_command(test.launch == Launch::mpirun ? on_ranks(MEMSWEEP_MPIEXEC, 3, run_argv) : run_argv,
                  dir.path().string(), kEnvironment);
  ASSERT_EQ(run.exit_status, 0) << run.err;

  const std::string own_text = test.sleep ? std::string() : slurp(own_file);
  ASSERT_TRUE(test.sleep || !own_text.empty()) << "hwm_program wrote no " << own_file;
  const double own = test.sleep ? sleep_own_peak_bytes() : std::stod(own_text);
  ASSERT_GT(own, 0.5 * kMiB) << "the program's own peak";

  const TsvTable trials = h5py_table(file, "trials");
  ASSERT_EQ(trials.rows.size(), 1U);
  ASSERT_EQ(trials.at(0, "status"), "ok") << trials.at(0, "message");
  const double peak = trials.number(0, "rss_peak");
  EXPECT_NEAR(peak, own, kPeakToleranceBytes)
      << "recorded " << peak / kMiB << " MiB, the program's own VmHWM " << own / kMiB << " MiB";
  EXPECT_NEAR(trials.number(0, "process_peak_max"), own, kPeakToleranceBytes);
  EXPECT_DOUBLE_EQ(trials.number(0, "rss_footprint"), peak);

  // Every readable sample is the program's: none reads nothing, none
  // reads the rank's image; their mean is near the program's peak.
  const TsvTable samples = h5py_table(file, "samples");
  std::size_t readable = 0;
  for (std::size_t row = 0; row < samples.rows.size(); ++row) {
    const double rss = samples.number(row, "rss");
    if (rss < 0) continue;  // unreadable: the program had exited
    ++readable;
    EXPECT_GT(rss, 0) << "sample " << row << " at " << samples.at(row, "t") << " s";
    EXPECT_LE(rss, own + kPeakToleranceBytes) << "sample " << row << " at " << samples.at(row, "t") << " s";
  }
  EXPECT_GE(readable, kMinSamples);
  const double mean = trials.number(0, "rss_mean");
  EXPECT_GE(mean, kMeanFloor * own) << "mean " << mean / kMiB << " MiB";
  EXPECT_LE(mean, own + kPeakToleranceBytes) << "mean " << mean / kMiB << " MiB";
  std::printf("%s: recorded peak %.3f MiB, own %.3f MiB (%+.3f MiB), mean %.3f MiB, %zu samples\n", test.name,
              peak / kMiB, own / kMiB, (peak - own) / kMiB, mean / kMiB, readable);
}

INSTANTIATE_TEST_SUITE_P(SleepAndTwoMiB, ProgramPeaks,
                         ::testing::Values(PeakCase{"sleep_alone", true, Launch::alone},
                                           PeakCase{"sleep_mpirun", true, Launch::mpirun},
                                           PeakCase{"touch_2mib_alone", false, Launch::alone},
                                           PeakCase{"touch_2mib_mpirun", false, Launch::mpirun}),
                         [](const ::testing::TestParamInfo<PeakCase>& tested) {
                           return std::string(tested.param.name);
                         });

}  // namespace
}  // namespace memsweep::testing
