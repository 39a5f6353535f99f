#pragma once
// What runs beside a training trial, on one thread of the runner's: it
// forwards the sampler's chunks to the sink as sample rows, watches the
// process's RSS against the budget, and passes a stop request (signal) on to
// the training loop. And the sink's gate: the training thread (epoch rows)
// and the monitor (samples) both write to the sink, one call at a time.

#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/sweep.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace memsweep::runner_detail {

// Serialises calls to a TrialSink. A sink that throws is the caller's
// problem, not the trial's: the first exception is kept, the trial is asked
// to stop, later calls are skipped, and rethrow_if_failed() passes it on
// once the trial's threads are done.
class SerialSink {
 public:
  SerialSink(TrialSink& sink, std::atomic<bool>& stop_trial) : sink_(sink), stop_trial_(stop_trial) {}
  void samples(std::span<const SampleRow> rows) noexcept;
  void epoch(const EpochRow& row) noexcept;
  void rethrow_if_failed();

 private:
  template <typename Call>
  void guarded(Call&& call) noexcept;

  TrialSink& sink_;
  std::atomic<bool>& stop_trial_;
  std::mutex mutex_;
  std::exception_ptr error_;
};

// Identity of the rows and what the monitor watches.
struct MonitorSettings {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t rank = -1;
  std::vector<int> counter_sources;  // results.hpp counter_sources(): sampler slot per file column
  std::chrono::milliseconds check_interval{20};
  std::optional<std::uint64_t> budget_bytes;
  const std::atomic<bool>* external_stop = nullptr;  // TrialContext::stop
};

class TrialMonitor {
 public:
  // Starts the thread. `probe` is the monitor's own (a probe's reads are not
  // safe from two threads at once); `epoch` is the phase the trial is in.
  TrialMonitor(MonitorSettings settings, Sampler& sampler, SerialSink& sink, MemoryProbe& probe,
               std::atomic<bool>& stop_trial, const std::atomic<int>& epoch);
  // Joins the thread (without forwarding what is left: finish() does that).
  ~TrialMonitor();
  TrialMonitor(const TrialMonitor&) = delete;
  TrialMonitor& operator=(const TrialMonitor&) = delete;

  // The trial's clock starts now (right after the sampler's region began).
  void trial_started() noexcept;
  // After the sampler stopped: joins the thread, then forwards the chunks
  // the sampler handed over last. Idempotent.
  void finish();

  // Why the budget stopped the trial; nullopt when it did not. After finish().
  const std::optional<std::string>& budget_message() const { return budget_message_; }

 private:
  void loop();
  void join() noexcept;
  void forward_chunks();
  void check_budget();

  MonitorSettings settings_;
  Sampler& sampler_;
  SerialSink& sink_;
  MemoryProbe& probe_;
  std::atomic<bool>& stop_trial_;
  const std::atomic<int>& epoch_;
  std::vector<SampleRow> rows_;  // reused for every chunk
  std::atomic<std::int64_t> start_ns_;
  std::optional<std::string> budget_message_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool quit_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace memsweep::runner_detail
