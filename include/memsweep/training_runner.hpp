#pragma once
// The real TrialRunner (sweep.hpp): each trial trains in a fresh process of
// its own (`memsweep trial`, an exec of the memsweep binary) that the rank
// starts and watches from outside, as docs/runner.md says (why a process per trial):
// the dataset is shared once per node and mapped by the process; the
// baseline is the process's memory once it is ready, the peak its own
// VmHWM; the sampler reads /proc/PID and counts the process's threads; a
// trial that runs out of memory, passes its budget or time limit, crashes
// or hangs ends with its own status while the rank goes on.
// docs/runner.md describes a trial's steps.

#include "memsweep/rank_gpus.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/sweep.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memsweep {

struct TrainingRunnerOptions {
  std::vector<std::filesystem::path> data_dirs;  // where real datasets are looked for
  // Where decoded datasets are shared on the node; empty: $MEMSWEEP_SHM, else /dev/shm.
  std::filesystem::path shared_dir;
  // The memsweep binary to exec for each trial (`memsweep trial`): the
  // running one by default; tests that are not memsweep name it.
  std::string trial_executable = "/proc/self/exe";
  int threads = 0;  // OpenMP threads of a trial process; 0: default_thread_count()
  std::chrono::milliseconds sampler_interval{kDefaultSamplerIntervalMs};
  // The file's counter columns (FileHeader::counter_columns), each from the
  // source that served it on rank 0: the events to open, in this order.
  // Empty: memory only.
  std::vector<CounterRequest> counter_columns;
  // Hand partial sample chunks over at least this often (SweepOptions::flush_interval).
  std::chrono::milliseconds max_chunk_age{2000};
  // How often the rank reads the trial process's RSS and peak (budget, time
  // limit, stop requests).
  std::chrono::milliseconds check_interval{20};
  // --trial-timeout: per trial, wall time from the go-ahead. The trial's own
  // `timeout` applies as well; the smaller one wins.
  std::optional<std::chrono::milliseconds> trial_timeout;
  // After a stop request, how long a trial process has to stop at its next
  // step before it is killed (still `interrupted`).
  std::chrono::milliseconds stop_grace{10000};
  // How long a trial process may take to map its data and say it is ready.
  std::chrono::milliseconds start_timeout{120000};
  // One memory cgroup per trial where the node allows it (docs/runner.md).
  bool use_cgroups = true;
  // Added to each built-in trial's prediction: what its fresh process
  // takes beyond its buffers (machine_trial_process_cost()). nullopt: the
  // prediction is the buffers alone.
  std::optional<TrialProcessCost> trial_process_cost;
  // Use only the first N examples of each split (0: all), for quick runs.
  std::size_t max_train_examples = 0;
  std::size_t max_test_examples = 0;
  // Where a program trial's output goes: <log_dir>/<trial id>-<attempt>.out
  // and .err (docs/runner.md, "Programs"). Empty: not kept (its stderr's end
  // still makes a failure's message).
  std::filesystem::path log_dir;
  // This rank's GPUs (assign_rank_gpus()): each trial runs on the first
  // TrialSpec::gpus_needed() of them. Empty: none.
  RankGpus gpus;
};

// Where the runner's own time went in the last run(), in seconds: what a
// sweep pays per trial on top of training.
struct RunnerTimings {
  double dataset_seconds = 0.0;  // opening (decoding, or finding) the shared dataset; 0 when held
  double start_seconds = 0.0;    // spawn to ready: the trial process's start
  double setup_seconds = 0.0;    // run() entry to the go-ahead, the dataset excluded
  double training_seconds = 0.0;
  double teardown_seconds = 0.0;  // the result (or the end) to return
};

class TrainingRunner final : public TrialRunner {
 public:
  // Resolves the counters and finds the cgroup trials can go in, once.
  // Throws std::invalid_argument for an interval outside the sampler's range
  // or a non-positive chunk age, check interval or grace.
  explicit TrainingRunner(const TrainingRunnerOptions& options);
  ~TrainingRunner() override;
  TrainingRunner(const TrainingRunner&) = delete;
  TrainingRunner& operator=(const TrainingRunner&) = delete;

  // A trial's failure is its row's status; only a failing `sink` (the
  // scheduler's, not the trial's problem) throws, after the trial process
  // was ended. Call from one thread, the same for every trial: a trial
  // process dies with the thread that started it.
  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) override;

  // Each requested counter column: opened, or why not (for the run's notes).
  const std::vector<EventStatus>& counter_events() const;
  // "cgroup1", "cgroup2" or "proc", and why not a cgroup (empty otherwise).
  std::string isolation() const;
  std::string isolation_problem() const;
  // Why GPU memory is not sampled ("no NVIDIA driver: GPU memory not
  // sampled"); empty when NVML answers.
  std::string gpu_problem() const;
  // Shared datasets opened since construction, and how many of them this
  // runner decoded (the others it found on the node).
  std::size_t dataset_opens() const;
  std::size_t dataset_decodes() const;
  const RunnerTimings& last_timings() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<TrainingRunner> make_training_runner(const TrainingRunnerOptions& options);

// `memsweep trial`: the trial process's whole life, on the descriptors its
// rank set up (docs/runner.md). Never returns: the process ends with it.
[[noreturn]] void run_trial_process();

// `memsweep guard`: the trial guard a rank starts, on the socket the rank
// passed as descriptor 3 (docs/runner.md, "When the rank dies"). Never
// returns: it ends when the rank does, after ending what the rank left.
[[noreturn]] void run_trial_guard();

// `memsweep gpu-reserve LIMIT`: the helper that holds what its device has
// free beyond LIMIT bytes while a trial runs (src/runner/gpu_reserve.hpp),
// on the device its CUDA_VISIBLE_DEVICES names. Never returns.
[[noreturn]] void run_gpu_reserve_process(const char* limit_text);

}  // namespace memsweep
