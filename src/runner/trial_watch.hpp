#pragma once
// The rank's side of a running trial process, on the runner's thread: it
// reads the process's reports (phases, epochs, the result), forwards the
// sampler's chunks to the sink, and every check interval reads the
// process's RSS and peak to enforce the budget and the time limit, and
// passes a stop request on. It kills the process (SIGKILL) itself for the
// budget, the time limit, or a stop request not answered in time.

#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/sweep.hpp"
#include "runner/child_process.hpp"
#include "runner/trial_ending.hpp"
#include "runner/trial_protocol.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace memsweep::runner::detail {

struct WatchSettings {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t rank = -1;
  std::vector<int> counter_slots;  // results.hpp counter_slots(): sampler slot per file column
  std::chrono::milliseconds check_interval{20};
  std::optional<std::uint64_t> budget_bytes;
  // The trial's GPU limit over its devices (TrialRow::gpu_limit): the
  // backstop behind the reserve, read from the sampler's per-process reads.
  std::optional<std::int64_t> gpu_limit_bytes;
  std::optional<std::chrono::milliseconds> time_limit;
  std::chrono::milliseconds stop_grace{10000};
  const std::atomic<bool>* external_stop = nullptr;  // TrialContext::stop
  // A user's program: watched until it exits (its events channel may close
  // earlier, or stay open in a descendant), asked to stop with SIGTERM, and
  // killed as a whole process group.
  bool program = false;
  // Called every check interval, on the watch's thread (a program's
  // metrics read from its output: output_metrics.hpp); may be empty.
  std::function<void()> on_check;
};

// What the watch saw, for decide_ending() and the row.
struct WatchReport {
  ProcessOutcome outcome;       // result, failure, the rank's kill, time and phase (not yet `end`)
  std::int64_t last_peak = -1;  // the last VmHWM read while it ran
};

class TrialWatch {
 public:
  // `probe` reads the trial process's files on this thread (the sampler has
  // its own); `reports` is the process's report pipe.
  TrialWatch(WatchSettings settings, ChildProcess& process, ReportSource& reports, Sampler& sampler, MemoryProbe& probe,
             TrialSink& sink);

  // Watches from the go-ahead until the process has reported its result or
  // failure, or has ended (a program: until it has ended). The sink's exceptions pass through (after the
  // process is killed: a trial without a destination for its rows stops).
  WatchReport run();

  // Forwards what the sampler handed over (after it stopped: its last chunks).
  void forward_chunks();

 private:
  void handle(const Frame& frame);
  void check(std::chrono::steady_clock::time_point now);
  void kill(RankKill why, std::string message);
  void signal_trial(int signal_number);
  double seconds_since_go(std::chrono::steady_clock::time_point now) const;

  WatchSettings settings_;
  ChildProcess& process_;
  ReportSource& reports_;
  Sampler& sampler_;
  MemoryProbe& probe_;
  TrialSink& sink_;
  WatchReport report_;
  std::chrono::steady_clock::time_point go_;
  std::optional<std::chrono::steady_clock::time_point> stop_deadline_;
  std::vector<SampleRow> rows_;  // reused for every chunk
};

}  // namespace memsweep::runner::detail
