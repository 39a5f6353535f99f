// The trial process's cost, end to end (issue 32): `memsweep estimate
// --calibrate` measures it on this machine and keeps it; `memsweep run`
// then predicts each built-in trial's footprint within the issue's target
// (10 % or 1 MiB, whichever is larger) for MLPs and CNNs under each memory
// plan, where the buffers alone fell 5 to 13 MiB short, and records the
// cost in /runs (schema 9); `estimate` shows the part and its source.

#include "run/results_file.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kMiB = 1024.0 * 1024.0;

// Small shapes, where the trial process is most of the footprint: the
// quickstart's MLPs, a deeper one with short last batches, a CNN; each
// under every memory plan.
std::string shapes_sweep() {
  std::string text = R"([sweep]
name = "trial-process"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 1000, test_size = 200 }
epochs = 1
learning_rate = 0.01
)";
  for (const char* plan : {"keep", "reuse", "recompute"})
    for (const char* shape : {"hidden = [64]\nbatch_size = 32", "hidden = [128, 64]\nbatch_size = 128",
                              "hidden = [64, 64, 64, 64, 64, 64]\nbatch_size = 48",
                              "model = \"cnn\"\nchannels = [8, 16]\nhidden = [32]\nbatch_size = 16"})
      text += fmt::format("[[trial]]\n{}\nmemory_plan = \"{}\"\n", shape, plan);
  return text;
}

TEST(TrialProcessPrediction, CalibratedItPredictsSmallTrialsWithinTenPercentOrOneMiB) {
  const TempDir dir;
  const std::filesystem::path calibration = dir.path() / "cache" / "trial-process.toml";
  const std::map<std::string, std::string> environment{{"MEMSWEEP_CALIBRATION", calibration.string()},
                                                       {"OMP_NUM_THREADS", "1"}};
  const CommandResult calibrated =
      run_command(memsweep_argv({"estimate", "--calibrate"}), dir.path().string(), environment);
  ASSERT_EQ(calibrated.exit_status, 0) << calibrated.err;
  EXPECT_TRUE(std::filesystem::exists(calibration)) << calibrated.out;
  EXPECT_THAT(calibrated.out, HasSubstr("written to " + calibration.string()));
  std::cout << calibrated.out;

  const auto sweep = dir.write("shapes.toml", shapes_sweep());
  const auto results = dir.path() / "shapes.h5";
  const CommandResult run = run_command(memsweep_argv({"run", sweep.string(), "-o", results.string(), "-q"}),
                                        dir.path().string(), environment);
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const TsvTable trials = h5py_table(results, "trials");
  ASSERT_EQ(trials.rows.size(), 12U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    ASSERT_EQ(trials.at(row, "status"), "ok") << trials.at(row, "message");
    const double predicted = std::stod(trials.at(row, "predicted_bytes"));
    const double measured = std::stod(trials.at(row, "rss_footprint"));
    const double allowed = std::max(0.10 * measured, kMiB);
    std::cout << fmt::format("{} hidden {} channels {} batch {} {}: predicted {:.2f} MiB, measured {:.2f} MiB\n",
                             trials.at(row, "model"), trials.at(row, "hidden"), trials.at(row, "channels"),
                             trials.at(row, "batch_size"), trials.at(row, "memory_plan"), predicted / kMiB,
                             measured / kMiB);
    EXPECT_LE(std::abs(predicted - measured), allowed)
        << trials.at(row, "model") << " " << trials.at(row, "hidden") << " batch " << trials.at(row, "batch_size")
        << " " << trials.at(row, "memory_plan") << ": predicted " << predicted / kMiB << " MiB, measured "
        << measured / kMiB << " MiB";
  }

  // The file keeps what the predictions added, and where it came from.
  const std::string recorded = h5py_table(results, "runs").at(0, "trial_process_cost");
  EXPECT_THAT(recorded, HasSubstr("with convolutions; calibrated on")) << recorded;

  // estimate shows the part, calibrated, inside its total.
  const CommandResult estimate =
      run_command(memsweep_argv({"estimate", "--dataset", "synthetic", "--hidden", "64", "--batch", "32",
                                 "--train-examples", "1000", "--test-examples", "200"}),
                  dir.path().string(), environment);
  ASSERT_EQ(estimate.exit_status, 0) << estimate.err;
  EXPECT_THAT(estimate.out, HasSubstr("trial process"));
  EXPECT_THAT(estimate.out, HasSubstr("calibrated on"));
  EXPECT_THAT(estimate.out, HasSubstr("in a fresh trial process"));
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The run command (ci/run-default.sh) calibrates a machine on its first run
// only: later runs, and a machine already calibrated, keep the calibration;
// one measured on another CPU model is measured again.
TEST(TrialProcessPrediction, IfUncalibratedMeasuresOncePerCpuModel) {
  const TempDir dir;
  const std::filesystem::path calibration = dir.path() / "cache" / "trial-process.toml";
  const std::map<std::string, std::string> environment{{"MEMSWEEP_CALIBRATION", calibration.string()},
                                                       {"OMP_NUM_THREADS", "1"}};
  const auto calibrate = [&] {
    const CommandResult result =
        run_command(memsweep_argv({"estimate", "--calibrate", "--if-uncalibrated", "--calibration-runs", "1"}),
                    dir.path().string(), environment);
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return result.out;
  };
  EXPECT_THAT(calibrate(), HasSubstr("written to " + calibration.string()));
  const std::string first = file_text(calibration);
  ASSERT_THAT(first, HasSubstr("cpu = "));
  const std::string again = calibrate();
  EXPECT_THAT(again, HasSubstr("calibrated already (" + calibration.string()));
  EXPECT_THAT(again, Not(HasSubstr("written to")));
  EXPECT_EQ(file_text(calibration), first) << "the kept calibration is left as it was";

  // Measured on another CPU: set aside, and measured again here.
  std::string other = first;
  const std::size_t cpu = other.find("cpu = ");
  other.replace(cpu, other.find('\n', cpu) - cpu, "cpu = \"another CPU\"");
  std::ofstream(calibration) << other;
  EXPECT_THAT(calibrate(), HasSubstr("written to " + calibration.string()));
  EXPECT_THAT(file_text(calibration), Not(HasSubstr("another CPU")));

  const CommandResult alone =
      run_command(memsweep_argv({"estimate", "--if-uncalibrated"}), dir.path().string(), environment);
  EXPECT_EQ(alone.exit_status, 2);
  EXPECT_THAT(alone.err, HasSubstr("--if-uncalibrated goes with --calibrate"));
}

TEST(TrialProcessPrediction, ABadCalibrationFileStopsTheRunNamingIt) {
  const TempDir dir;
  const auto calibration = dir.write("trial-process.toml", "base_bytes = \"lots\"\n");
  const auto sweep = dir.write("shapes.toml", "[[trial]]\ndataset = \"synthetic\"\nhidden = [8]\n");
  const auto results = dir.path() / "shapes.h5";
  const CommandResult run =
      run_command(memsweep_argv({"run", sweep.string(), "-o", results.string()}), dir.path().string(),
                  {{"MEMSWEEP_CALIBRATION", calibration.string()}, {"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(run.exit_status, 2) << run.err;
  EXPECT_THAT(run.err, HasSubstr(calibration.string()));
  EXPECT_FALSE(std::filesystem::exists(results)) << "nothing written";
}

TEST(TrialProcessPrediction, CalibrateTakesNoTrial) {
  const CommandResult result = run_command(memsweep_argv({"estimate", "--calibrate", "--hidden", "8"}));
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_THAT(result.err, HasSubstr("--calibrate measures this machine"));
}

}  // namespace
}  // namespace memsweep::testing
