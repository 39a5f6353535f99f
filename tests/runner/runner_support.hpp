#pragma once
// Helpers for the runner's tests: a sink that records what it receives (and
// notices overlapping calls), small synthetic trials, and a runner that
// starts the memsweep binary built beside the tests for its trial processes,
// sharing datasets in a folder of the test's own.

#include "memsweep/sweep.hpp"
#include "memsweep/training_runner.hpp"
#include "support/background_process.hpp"
#include "support/temp_dir.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace memsweep::testing {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

class RecordingSink : public TrialSink {
 public:
  using Clock = std::chrono::steady_clock;

  void samples(std::span<const SampleRow> rows) override {
    const Entered entered(*this);
    const std::lock_guard lock(mutex_);
    sample_rows.insert(sample_rows.end(), rows.begin(), rows.end());
    sample_calls.push_back(Clock::now());
  }
  void epoch(const EpochRow& row) override {
    {
      const Entered entered(*this);
      const std::lock_guard lock(mutex_);
      epoch_rows.push_back(row);
    }
    if (on_epoch) on_epoch(row);
  }

  std::vector<SampleRow> sample_rows;
  std::vector<Clock::time_point> sample_calls;
  std::vector<EpochRow> epoch_rows;
  std::function<void(const EpochRow&)> on_epoch;  // on the training thread, after recording
  std::atomic<int> overlapping_calls{0};          // the runner must call one at a time

 private:
  struct Entered {
    explicit Entered(RecordingSink& sink) : sink_(sink) {
      if (sink_.inside_.fetch_add(1) != 0) ++sink_.overlapping_calls;
    }
    ~Entered() { sink_.inside_.fetch_sub(1); }
    RecordingSink& sink_;
  };
  std::atomic<int> inside_{0};
  std::mutex mutex_;
};

// MNIST's shape, few examples: an epoch of a small MLP takes milliseconds.
inline SyntheticSpec small_data(std::uint64_t seed = 1, int train_size = 1000, int test_size = 200) {
  SyntheticSpec spec;  // 1x28x28, 10 classes
  spec.train_size = train_size;
  spec.test_size = test_size;
  spec.seed = seed;
  return spec;
}

inline TrialSpec synthetic_trial(std::vector<int> hidden = {32}, int epochs = 2, int batch = 32,
                                 const SyntheticSpec& data = small_data()) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;
  trial.dataset.synthetic = data;
  trial.hidden = std::move(hidden);
  trial.epochs = epochs;
  trial.batch_size = batch;
  trial.learning_rate = 0.05;
  trial.id = trial_id(trial);
  return trial;
}

// Runner options for a test: the memsweep binary, a shared-dataset folder
// that lives as long as the fixture.
struct RunnerFixture {
  TempDir shared;
  TrainingRunnerOptions options() const {
    TrainingRunnerOptions options;
    options.trial_executable = MEMSWEEP_EXECUTABLE;
    options.shared_dir = shared.path();
    return options;
  }
};

// The trial processes this test process started (a runner that left one
// running would show here).
inline std::vector<pid_t> child_processes() {
  std::vector<pid_t> children;
  for (const auto& [pid, id] : trial_processes_below(::getpid())) children.push_back(pid);
  return children;
}

inline TrialContext plain_context() {
  TrialContext context;
  context.rank = 0;
  context.host = "test-host";
  return context;
}

}  // namespace memsweep::testing
