#include "memsweep/calibrate.hpp"

#include "memsweep/results.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>

namespace memsweep {
namespace {

// The calibration's samples are not kept: only each run's row counts.
class DiscardingSink final : public TrialSink {
 public:
  void samples(std::span<const SampleRow>) override {}
  void epoch(const EpochRow&) override {}
};

double median(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? static_cast<double>(values[middle])
                                : (static_cast<double>(values[middle - 1]) + static_cast<double>(values[middle])) / 2;
}

}  // namespace

Calibration calibrate_trial_process(TrialRunner& runner, int repeats, int threads, const std::string& cpu,
                                    const std::string& host) {
  if (repeats < 1) throw std::invalid_argument("calibration: repeats must be at least 1");
  Calibration calibration;
  std::vector<CalibrationMeasure> measures;
  DiscardingSink sink;
  for (const TrialSpec& trial : calibration_trials()) {
    const ExampleCounts counts{static_cast<std::size_t>(trial.dataset.synthetic.train_size),
                               static_cast<std::size_t>(trial.dataset.synthetic.test_size)};
    CalibrationTrial measured;
    measured.trial = trial;
    measured.shape = trial_process_shape(trial, counts);
    measured.estimate_bytes = estimate_trial(trial, counts).total();
    // A trial's runs back to back: each is a fresh process, so none
    // inherits another's kernels or pages.
    for (int repeat = 0; repeat < repeats; ++repeat) {
      TrialContext context;
      context.attempt = repeat;
      const TrialRecord record = runner.run(trial, context, sink);
      const std::string status = get_fixed(record.row.status);
      if (status != status_name(TrialStatus::ok) || record.row.rss_footprint < 0)
        throw std::runtime_error(fmt::format("calibration trial {} ({}): {}: {}", trial.id,
                                             describe_layers(model_spec(trial)), status, record.message));
      measured.footprints.push_back(record.row.rss_footprint);
    }
    measured.median_footprint_bytes = median(measured.footprints);
    measures.push_back(
        {measured.shape, measured.median_footprint_bytes - static_cast<double>(measured.estimate_bytes)});
    calibration.trials.push_back(std::move(measured));
  }
  calibration.cost = fit_trial_process_cost(measures);
  calibration.cost.cpu = cpu;
  calibration.cost.threads = threads;
  const std::time_t now = std::time(nullptr);
  calibration.cost.source = fmt::format("calibrated on {}, {:%Y-%m-%d}, {} thread{}", host.empty() ? "?" : host,
                                        fmt::localtime(now), threads, threads == 1 ? "" : "s");
  return calibration;
}

}  // namespace memsweep
