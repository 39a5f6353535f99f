#pragma once
// The real TrialRunner (sweep.hpp): each trial trains with the oneDNN trainer
// while the sampler records the process, following DESIGN.md's measurement
// semantics: the dataset is loaded before the trial's baseline and kept for
// the next trials that use it; the previous trial's memory is freed and
// returned to the OS, the kernel's peak is reset, the baseline recorded; the
// sampler's chunks are streamed to the sink as they fill (or age).
// docs/runner.md describes a trial's steps and the budget.

#include "memsweep/dataset.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/sweep.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace memsweep {

struct TrainingRunnerOptions {
  std::vector<std::filesystem::path> data_dirs;  // where real datasets are looked for
  int threads = 0;                               // OpenMP threads; 0: default_thread_count()
  std::chrono::milliseconds sampler_interval{kDefaultSamplerIntervalMs};
  // The file's counter columns (FileHeader::counter_columns): the events to
  // open, in this order. Empty: memory only.
  std::vector<std::string> counter_columns;
  // Hand partial sample chunks over at least this often (SweepOptions::flush_interval).
  std::chrono::milliseconds max_chunk_age{2000};
  // How often the budget watcher reads the process's RSS.
  std::chrono::milliseconds budget_check_interval{20};
  // Use only the first N examples of each split (0: all), for quick runs.
  std::size_t max_train_examples = 0;
  std::size_t max_test_examples = 0;
};

// Where the runner's own time went in the last run(), in seconds: what a
// sweep pays per trial on top of training.
struct RunnerTimings {
  double dataset_seconds = 0.0;  // loading or generating the dataset; 0 when it was kept
  double setup_seconds = 0.0;    // run() entry to training start, the dataset excluded
  double training_seconds = 0.0;
  double teardown_seconds = 0.0;  // training end to return
};

class TrainingRunner final : public TrialRunner {
 public:
  // Opens the counters and builds the sampler once, for every trial to come.
  // Throws std::invalid_argument for an interval outside the sampler's range
  // or a non-positive chunk age or budget check interval.
  explicit TrainingRunner(const TrainingRunnerOptions& options);
  ~TrainingRunner() override;
  TrainingRunner(const TrainingRunner&) = delete;
  TrainingRunner& operator=(const TrainingRunner&) = delete;

  // A trial's failure is its row's status; only a failing `sink` (the
  // scheduler's, not the trial's problem) throws, after the sampler stopped.
  // Call from one thread at a time.
  TrialRow run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) override;

  // Each requested counter column: opened, or why not (for the run's notes).
  const std::vector<EventStatus>& counter_events() const;
  // How many times a dataset was loaded or generated since construction.
  std::size_t dataset_loads() const;
  const RunnerTimings& last_timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<TrainingRunner> make_training_runner(const TrainingRunnerOptions& options);

}  // namespace memsweep
