// The trial process's cost (memsweep/trial_process_cost.hpp): the shape a
// trial's cost depends on, the fit of the calibration's measures, and the
// calibration file. The calibration run itself and the accuracy it gives
// are tests/run/test_trial_process_prediction.cpp.

#include "memsweep/calibrate.hpp"
#include "memsweep/error.hpp"
#include "memsweep/results.hpp"
#include "memsweep/trial_process_cost.hpp"

#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kMiB = 1024.0 * 1024.0;

TrialProcessCost known_cost() {
  TrialProcessCost cost;
  cost.base_bytes = 4.5 * kMiB;
  cost.per_layer_bytes = 0.125 * kMiB;
  cost.per_batch_size_bytes = 0.375 * kMiB;
  cost.per_layer_batch_size_bytes = 0.0625 * kMiB;
  cost.convolution_bytes = 8.0 * kMiB;
  cost.cpu = this_cpu_model();
  cost.threads = 2;
  cost.source = "a test's";
  return cost;
}

TEST(TrialProcessShape, CountsWeightedLayersBatchSizesAndConvolutions) {
  TrialSpec mlp;
  mlp.hidden = {128, 64};
  mlp.batch_size = 32;
  // 1000 = 31 x 32 + 8: two training batch sizes; 200 = 6 x 32 + 8: two for evaluation.
  EXPECT_EQ(trial_process_shape(mlp, {1000, 200}), (TrialProcessShape{3, 4, false}));
  // Splits that are multiples of the batch: one size each.
  EXPECT_EQ(trial_process_shape(mlp, {1024, 256}), (TrialProcessShape{3, 2, false}));
  TrialSpec cnn = mlp;
  cnn.model = ModelKind::cnn;
  cnn.channels = {16, 32};
  EXPECT_EQ(trial_process_shape(cnn, {1024, 256}), (TrialProcessShape{5, 2, true}));
}

// Each calibration trial moves the cost's terms from the first: the
// layers, the batch sizes, both, the convolutions (and the layers: a
// convolution is one).
TEST(CalibrationTrials, VaryEachTermFromTheBase) {
  const std::vector<TrialSpec> trials = calibration_trials();
  ASSERT_EQ(trials.size(), 5U);
  std::vector<TrialProcessShape> shapes;
  for (const TrialSpec& trial : trials) {
    EXPECT_EQ(trial.dataset.kind, DatasetKind::synthetic);
    shapes.push_back(trial_process_shape(trial, {static_cast<std::size_t>(trial.dataset.synthetic.train_size),
                                                 static_cast<std::size_t>(trial.dataset.synthetic.test_size)}));
  }
  EXPECT_EQ(shapes[0], (TrialProcessShape{2, 2, false}));
  EXPECT_EQ(shapes[1], (TrialProcessShape{9, 2, false}));
  EXPECT_EQ(shapes[2], (TrialProcessShape{2, 4, false}));
  EXPECT_EQ(shapes[3], (TrialProcessShape{9, 4, false}));
  EXPECT_EQ(shapes[4], (TrialProcessShape{3, 2, true}));
}

TEST(TrialProcessCost, IsTheBaseForTheBaseShapeAndAddsEachTerm) {
  const TrialProcessCost cost = known_cost();
  EXPECT_EQ(trial_process_bytes(cost, {2, 2, false}), static_cast<std::uint64_t>(4.5 * kMiB));
  EXPECT_EQ(trial_process_bytes(cost, {6, 5, true}),
            static_cast<std::uint64_t>((4.5 + 4 * 0.125 + 3 * 0.375 + 4 * 3 * 0.0625 + 8.0) * kMiB));
  // A one-layer network is below the base shape, never below nothing.
  TrialProcessCost steep = cost;
  steep.per_layer_bytes = 10 * kMiB;
  EXPECT_EQ(trial_process_bytes(steep, {1, 1, false}), 0U);
}

// The fit finds the coefficients the measures were made with, from the
// calibration's four shapes or from more.
TEST(FitTrialProcessCost, RecoversTheCoefficientsOfExactMeasures) {
  const TrialProcessCost truth = known_cost();
  std::vector<CalibrationMeasure> measures;
  for (const TrialProcessShape shape :
       {TrialProcessShape{2, 2, false}, TrialProcessShape{9, 2, false}, TrialProcessShape{2, 4, false},
        TrialProcessShape{9, 4, false}, TrialProcessShape{3, 2, true}, TrialProcessShape{7, 3, true}})
    measures.push_back({shape, static_cast<double>(trial_process_bytes(truth, shape))});
  const TrialProcessCost fitted = fit_trial_process_cost(measures);
  EXPECT_NEAR(fitted.base_bytes, truth.base_bytes, 2.0);
  EXPECT_NEAR(fitted.per_layer_bytes, truth.per_layer_bytes, 2.0);
  EXPECT_NEAR(fitted.per_batch_size_bytes, truth.per_batch_size_bytes, 2.0);
  EXPECT_NEAR(fitted.per_layer_batch_size_bytes, truth.per_layer_batch_size_bytes, 2.0);
  EXPECT_NEAR(fitted.convolution_bytes, truth.convolution_bytes, 2.0);
}

TEST(FitTrialProcessCost, ANegativeCoefficientFromNoiseIsZero) {
  // More layers measured less: no cost per layer, not a negative one.
  const std::vector<CalibrationMeasure> measures{{{2, 2, false}, 5 * kMiB},
                                                 {{9, 2, false}, 4.9 * kMiB},
                                                 {{2, 4, false}, 5.5 * kMiB},
                                                 {{9, 4, false}, 5.4 * kMiB},
                                                 {{3, 2, true}, 13 * kMiB}};
  const TrialProcessCost fitted = fit_trial_process_cost(measures);
  EXPECT_EQ(fitted.per_layer_bytes, 0.0);
  EXPECT_NEAR(fitted.base_bytes, 5 * kMiB, 1.0);
  EXPECT_NEAR(fitted.per_batch_size_bytes, 0.25 * kMiB, 1.0);
}

TEST(FitTrialProcessCost, MeasuresOfOneShapeDetermineNothing) {
  const std::vector<CalibrationMeasure> measures(4, {{2, 2, false}, 5 * kMiB});
  try {
    fit_trial_process_cost(measures);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_THAT(error.what(), HasSubstr("do not determine"));
  }
}

// A stand-in for the trial runner (the real one: test_trial_process_prediction.cpp):
// each trial's footprint is its estimate plus `cost`, or it fails.
class FootprintRunner final : public TrialRunner {
 public:
  FootprintRunner(TrialProcessCost cost, bool fail) : cost_(std::move(cost)), fail_(fail) {}
  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink&) override {
    ++runs;
    TrialRecord record{trial_row_for(trial, context.attempt), {}};
    if (fail_) {
      set_fixed(record.row.status, status_name(TrialStatus::failed));
      record.message = "no memory for the test";
      return record;
    }
    const ExampleCounts counts{static_cast<std::size_t>(trial.dataset.synthetic.train_size),
                               static_cast<std::size_t>(trial.dataset.synthetic.test_size)};
    set_fixed(record.row.status, status_name(TrialStatus::ok));
    record.row.rss_footprint = static_cast<std::int64_t>(
        estimate_trial(trial, counts).total() + trial_process_bytes(cost_, trial_process_shape(trial, counts)));
    return record;
  }
  int runs = 0;

 private:
  TrialProcessCost cost_;
  bool fail_;
};

TEST(CalibrateTrialProcess, FitsTheFootprintsLessTheEstimatesOfEachTrialsRuns) {
  FootprintRunner runner(known_cost(), false);
  const Calibration calibration = calibrate_trial_process(runner, 3, 2, "a CPU", "node7");
  EXPECT_EQ(runner.runs, 15);
  ASSERT_EQ(calibration.trials.size(), 5U);
  EXPECT_EQ(calibration.trials[0].footprints.size(), 3U);
  EXPECT_NEAR(calibration.cost.base_bytes, known_cost().base_bytes, 4.0);
  EXPECT_NEAR(calibration.cost.per_layer_batch_size_bytes, known_cost().per_layer_batch_size_bytes, 4.0);
  EXPECT_NEAR(calibration.cost.convolution_bytes, known_cost().convolution_bytes, 4.0);
  EXPECT_EQ(calibration.cost.cpu, "a CPU");
  EXPECT_EQ(calibration.cost.threads, 2);
  EXPECT_THAT(calibration.cost.source, HasSubstr("calibrated on node7"));
}

TEST(CalibrateTrialProcess, ATrialThatFailsStopsItNamingTheTrial) {
  FootprintRunner runner(known_cost(), true);
  try {
    calibrate_trial_process(runner, 3, 1, "a CPU", "node7");
    FAIL() << "no error";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("calibration trial " + calibration_trials().front().id));
    EXPECT_THAT(error.what(), HasSubstr("failed: no memory for the test"));
  }
  EXPECT_EQ(runner.runs, 1);
}

// Sets an environment variable for the test's life.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedVariable() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CalibrationFile, RoundTripsTheCostAndNamesItselfInTheSource) {
  const TempDir dir;
  const auto path = dir.path() / "cache" / "trial-process.toml";
  write_calibration_file(path, known_cost());
  const std::optional<TrialProcessCost> read = read_calibration_file(path);
  ASSERT_TRUE(read.has_value());
  EXPECT_NEAR(read->base_bytes, known_cost().base_bytes, 1.0);
  EXPECT_NEAR(read->per_layer_bytes, known_cost().per_layer_bytes, 1.0);
  EXPECT_NEAR(read->per_batch_size_bytes, known_cost().per_batch_size_bytes, 1.0);
  EXPECT_NEAR(read->convolution_bytes, known_cost().convolution_bytes, 1.0);
  EXPECT_EQ(read->cpu, this_cpu_model());
  EXPECT_EQ(read->threads, 2);
  EXPECT_THAT(read->source, HasSubstr("a test's"));
  EXPECT_THAT(read->source, HasSubstr(path.string()));
  EXPECT_FALSE(read_calibration_file(dir.path() / "none.toml").has_value());
}

struct BadCalibrationFile {
  const char* name;
  const char* text;
  const char* expected;  // in the message, after the file's name
};

class BadCalibrationFiles : public ::testing::TestWithParam<BadCalibrationFile> {};

TEST_P(BadCalibrationFiles, NameTheFileAndWhatIsWrong) {
  const TempDir dir;
  const auto path = dir.write("trial-process.toml", GetParam().text);
  try {
    read_calibration_file(path);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
    EXPECT_THAT(error.what(), HasSubstr(GetParam().expected));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadCalibrationFiles,
    ::testing::Values(
        BadCalibrationFile{"missing", "cpu = \"x\"\nthreads = 1\n", "base_bytes: missing"},
        BadCalibrationFile{"negative",
                           "base_bytes = -5\ncpu = \"x\"\nthreads = 1\nper_layer_bytes = 1\n"
                           "per_batch_size_bytes = 1\nper_layer_batch_size_bytes = 1\nconvolution_bytes = 1\n",
                           ":1: base_bytes: expected a number of bytes from 0, found -5"},
        BadCalibrationFile{"text",
                           "base_bytes = \"lots\"\ncpu = \"x\"\nthreads = 1\nper_layer_bytes = 1\n"
                           "per_batch_size_bytes = 1\nper_layer_batch_size_bytes = 1\nconvolution_bytes = 1\n",
                           "base_bytes: expected a number of bytes from 0"},
        BadCalibrationFile{"threads",
                           "base_bytes = 5\ncpu = \"x\"\nthreads = 0\nper_layer_bytes = 1\n"
                           "per_batch_size_bytes = 1\nper_layer_batch_size_bytes = 1\nconvolution_bytes = 1\n",
                           ":3: threads: expected a whole number from 1, found 0"},
        BadCalibrationFile{"syntax", "base_bytes = = 5\n", "not a calibration file (TOML)"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(MachineTrialProcessCost, IsTheFilesOnThisCpuElseTheBuiltInOneSayingWhy) {
  const TempDir dir;
  const auto path = dir.path() / "trial-process.toml";
  const ScopedVariable variable("MEMSWEEP_CALIBRATION", path.string());
  EXPECT_EQ(calibration_file_path(), path);

  EXPECT_EQ(machine_trial_process_cost().source, builtin_trial_process_cost().source) << "no file: built in";

  write_calibration_file(path, known_cost());
  const TrialProcessCost here = machine_trial_process_cost();
  EXPECT_NEAR(here.convolution_bytes, 8.0 * kMiB, 1.0);
  EXPECT_THAT(here.source, HasSubstr(path.string()));

  TrialProcessCost elsewhere = known_cost();
  elsewhere.cpu = "a CPU this machine is not";
  write_calibration_file(path, elsewhere);
  const TrialProcessCost fallback = machine_trial_process_cost();
  EXPECT_EQ(fallback.base_bytes, builtin_trial_process_cost().base_bytes);
  EXPECT_THAT(fallback.source, HasSubstr("measured on another CPU: a CPU this machine is not"));
}

TEST(CalibrationFilePath, FollowsXdgCacheHomeThenHome) {
  const ScopedVariable unset_override("MEMSWEEP_CALIBRATION", "");
  {
    const ScopedVariable cache("XDG_CACHE_HOME", "/somewhere/cache");
    EXPECT_EQ(calibration_file_path(), std::filesystem::path("/somewhere/cache/memsweep/trial-process.toml"));
  }
  const ScopedVariable no_cache("XDG_CACHE_HOME", "");
  const ScopedVariable home("HOME", "/home/someone");
  EXPECT_EQ(calibration_file_path(), std::filesystem::path("/home/someone/.cache/memsweep/trial-process.toml"));
}

}  // namespace
}  // namespace memsweep::testing
