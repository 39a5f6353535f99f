#pragma once
// What the scheduler tests run the scheduler with: trials built by hand, a
// scripted TrialRunner (durations, statuses, exceptions, streamed samples)
// and a ResultSink that keeps everything in memory, with the time each row
// arrived.

#include "memsweep/sweep.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::testing {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// `count` distinct trials with real ids (trial_id of their content).
std::vector<TrialSpec> make_trials(std::size_t count);

// Every trial, as attempt `attempt`.
std::vector<PendingTrial> all_pending(std::size_t count, std::int32_t attempt = 0);

enum class Throws { nothing, runtime_error, bad_alloc };

// What one trial does in the FakeRunner.
struct Script {
  milliseconds duration{20};
  TrialStatus status = TrialStatus::ok;
  std::string message{};
  Throws throws = Throws::nothing;
  milliseconds sample_every{0};  // 0: no samples
  std::size_t burst = 0;         // samples streamed at once before the duration starts
  std::int64_t baseline = 100 << 20;
  std::int64_t footprint = 50 << 20;
};

// Sleeps through each trial in small steps (ending it as `interrupted` when
// its stop flag is set), streaming samples and one epoch row.
class FakeRunner final : public TrialRunner {
 public:
  explicit FakeRunner(Script default_script = {}) : default_(std::move(default_script)) {}
  void script(const std::string& trial_id, Script script) { scripts_[trial_id] = std::move(script); }

  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) override;

  // What this rank's runner saw.
  std::vector<TrialContext> contexts() const;
  std::size_t samples_sent() const;

 private:
  Script default_;
  std::map<std::string, Script> scripts_;
  mutable std::mutex mutex_;
  std::vector<TrialContext> contexts_;
  std::size_t samples_sent_ = 0;
};

// Rank 0's sink: every row, and for each, when it arrived.
class MemorySink final : public ResultSink {
 public:
  struct Arrival {
    enum class Kind { samples, epoch, trial } kind;
    std::string trial_id;
    std::int32_t attempt;
    Clock::time_point when;
  };

  void samples(std::span<const SampleRow> rows) override;
  void epoch(const EpochRow& row) override;
  void trial(const TrialRow& row, const std::string& message) override;
  void search(const SearchRow& row) override { searches.push_back(row); }

  // trial() throws std::runtime_error("disk full") from its `n`th call on.
  void fail_from_trial(std::size_t n) { fail_from_ = n; }

  std::vector<TrialRow> trials;
  std::vector<std::string> messages;  // each trial row's whole message
  std::vector<SampleRow> sample_rows;
  std::vector<EpochRow> epochs;
  std::vector<SearchRow> searches;
  std::vector<Arrival> arrivals;

 private:
  std::optional<std::size_t> fail_from_;
  std::size_t trial_calls_ = 0;
};

std::string status_of(const TrialRow& row);

}  // namespace memsweep::testing
