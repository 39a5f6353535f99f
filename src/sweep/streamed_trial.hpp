#pragma once
// One trial, run on a thread of its own, while the calling thread (the only
// one that may use MPI: MPI_THREAD_FUNNELED) moves the rows the trial
// streams to where they go, at least every flush interval, and checks
// whether the trial must stop. A worker sends the rows to rank 0; a single
// rank writes them itself. Both use this, so a trial behaves the same way
// on one rank as on many.

#include "memsweep/sweep.hpp"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace memsweep::sweep::detail {

// What a trial streamed since the last delivery.
// With chunks: whole chunks of samples, compressed, older than `samples`.
struct StreamedRows {
  std::vector<CompressedSampleChunk> chunks;
  std::vector<SampleRow> samples;
  std::vector<EpochRow> epochs;
  std::vector<MetricRow> metrics;  // a program's, after its epochs of the same delivery
  bool empty() const { return chunks.empty() && samples.empty() && epochs.empty() && metrics.empty(); }
};

struct StreamHooks {
  // Takes the rows on the calling thread. If it throws, the trial is told to
  // stop, its further rows are dropped, and the exception is rethrown once
  // the trial's thread has ended.
  std::function<void(StreamedRows&)> deliver;
  // Asked at every wake-up (kWakeInterval): true when the trial must end at
  // its next step (a signal, rank 0's STOP). Once true, no longer asked.
  std::function<bool()> should_stop;
  // Called when nothing was delivered for kAliveInterval while the trial
  // runs (may be empty): a worker tells rank 0 it still lives, so that rank
  // 0 can tell a quiet trial from a stopped or hung rank.
  std::function<void()> alive;
  // Set: samples go as whole chunks of this format, compressed on the
  // calling thread as soon as a chunk's rows are queued; the rows short of
  // a chunk go as rows at the flush interval and at the trial's end.
  std::optional<SampleChunkFormat> chunks;
};

inline constexpr std::chrono::milliseconds kAliveInterval{1000};

// The calling thread wakes this often (and at once when the trial ends or
// kRowsPerMessage samples are queued): it bounds how late a STOP or a
// signal reaches the trial.
inline constexpr std::chrono::milliseconds kWakeInterval{20};

// The thread trials run on, one after the other, for a whole sweep. Not a
// new thread per trial: OpenMP (libgomp) ties its thread team to the thread
// that starts parallel work, so a fresh thread would build a fresh team
// inside every trial's measured region, and each trial's footprint would
// hold the team's start-up.
class TrialThread {
 public:
  TrialThread();
  ~TrialThread();
  TrialThread(const TrialThread&) = delete;
  TrialThread& operator=(const TrialThread&) = delete;
  // Runs `job` on the thread; call wait() before the next run().
  void run(std::function<void()> job);
  void wait();

 private:
  void loop();
  std::mutex mutex_;
  std::condition_variable changed_;
  std::function<void()> job_;
  bool busy_ = false;
  bool quit_ = false;
  std::thread thread_;
};

// Runs `trial` with `runner` on `thread` and returns its row and message,
// with rank, host, run and attempt from `context` (context.stop is replaced
// by the trial's own flag). The runner's exceptions become a `failed` row: a
// trial is never lost.
TrialRecord run_streamed_trial(TrialThread& thread, TrialRunner& runner, const TrialSpec& trial, TrialContext context,
                               std::chrono::milliseconds flush_interval, const StreamHooks& hooks);

// The `failed` record of a trial whose runner threw `message`.
TrialRecord failed_row(const TrialSpec& trial, int attempt, const std::string& message, double start_time,
                       double end_time);

}  // namespace memsweep::sweep::detail
