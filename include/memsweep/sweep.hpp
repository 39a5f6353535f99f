#pragma once
// The sweep scheduler: rank 0 hands out trials on request (dynamic
// scheduling) and writes what the workers stream back; workers run trials
// through a TrialRunner. With one rank, that rank runs the trials in turn and
// writes them itself. See docs/sweep.md (process model) and
// docs/architecture.md.
//
// Everything goes through three small interfaces, so that this module runs
// without MPI (a serial communicator), without oneDNN (a scripted runner) and
// without HDF5 (any result sink):
// - Communicator: point-to-point messages and two collectives;
// - TrialRunner: runs one trial, streaming its samples and epochs;
// - ResultSink: where rank 0 puts rows (the results file).

#include "memsweep/config.hpp"
#include "memsweep/eta.hpp"
#include "memsweep/flush_interval.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sample_chunk.hpp"
#include "memsweep/search.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep {

// ---- communication ----------------------------------------------------------

inline constexpr int kAnySource = -1;

struct Message {
  int source = 0;
  int tag = 0;
  std::vector<std::byte> bytes;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Returns when `bytes` may be reused.
  virtual void send(int destination, int tag, std::span<const std::byte> bytes) = 0;
  // The next message from `source` (or kAnySource), in the order each sender
  // sent them; nullopt after `timeout`. Waiting must not keep a core busy.
  virtual std::optional<Message> receive(int source, std::chrono::milliseconds timeout) = 0;
  // Collective: every rank's `value`, in rank order, on every rank.
  virtual std::vector<std::string> all_gather(const std::string& value) = 0;
  // Collective: rank 0's `value` on every rank.
  virtual void broadcast(std::string& value) = 0;
  virtual std::string host_name() const = 0;
  virtual std::string library_version() const = 0;  // "Open MPI v4.1.4, ...", or "none (serial)"
  // Ends every rank at once with `status`: for an error after which the
  // ranks can no longer agree (one may be waiting for another that left).
  [[noreturn]] virtual void abort(int status) = 0;
};

// One rank, no MPI: size() == 1; send and receive throw std::logic_error;
// abort() ends the process with the status.
std::unique_ptr<Communicator> make_serial_communicator();

// ---- running one trial --------------------------------------------------------

// Where a running trial's series go. A runner calls it from its own threads,
// one call at a time.
class TrialSink {
 public:
  virtual ~TrialSink() = default;
  virtual void samples(std::span<const SampleRow> rows) = 0;
  virtual void epoch(const EpochRow& row) = 0;
  // A program's metric row (/metrics), when its epoch ends and at the
  // trial's end; a sink that keeps none ignores it.
  virtual void metric(const MetricRow& row) { (void)row; }
};

struct TrialContext {
  std::int32_t attempt = 0;
  std::int32_t run = 0;
  std::int32_t rank = 0;
  std::string host;
  // --mem-budget: per rank, on the process's RSS. The trial's own
  // mem_budget_bytes applies as well; the smaller one wins.
  std::optional<std::uint64_t> mem_budget_bytes;
  // Set when the trial must end at its next step (signal): status interrupted.
  const std::atomic<bool>* stop = nullptr;
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // Runs `trial` to its end and returns its row: trial_row_for() plus the
  // result, and its whole message (set_message). A trial's own failure (an
  // exception, bad_alloc included, divergence, the budget, a missing
  // dataset) is a status and a message, never an exception out of run().
  virtual TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) = 0;
};

// ---- rank 0's output ----------------------------------------------------------

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual void samples(std::span<const SampleRow> rows) = 0;
  // A worker's whole chunk of one attempt's samples, compressed in the
  // file's format (sample_chunk.hpp). The results file stores it as it is;
  // any other sink takes its rows.
  virtual void compressed_samples(const CompressedSampleChunk& chunk) { samples(inflate_sample_chunk(chunk)); }
  virtual void epoch(const EpochRow& row) = 0;
  // A program's metric row (/metrics, schema 11); ignored unless kept.
  virtual void metric(const MetricRow& row) { (void)row; }
  // The trial's row and its whole message (the row's message column holds
  // its first bytes). Durable (flushed) when it returns, together with
  // every sample row given before it: a row never stands in the file
  // without its series.
  virtual void trial(const TrialRow& row, const std::string& message) = 0;
  // A search's row (/searches), when it ends: durable when it returns.
  virtual void search(const SearchRow& row) { (void)row; }
  // Called by rank 0 about every 100 ms, whether or not messages arrive:
  // rows that have waited long enough in memory go to the file, so that
  // killing rank 0 loses seconds of samples at most.
  virtual void tick() {}
  // The sweep begins to stop (a signal reached rank 0 or a worker), written
  // at once and durable when it returns: a resume then knows that rank 0
  // outlived whatever ended the run (plan_resume's LostAttempts).
  virtual void stopping() {}
};

// ---- progress on rank 0's stderr ----------------------------------------------

enum class Verbosity { quiet, normal, verbose };

// One line per finished trial (id, status, seconds, peak memory) with a
// running count and an ETA. quiet: nothing but failures; verbose: also each
// trial's start and its hyperparameters.
class ProgressReporter {
 public:
  using Clock = std::chrono::steady_clock;
  // `pending`: the trials to run, in dispatch order (waiting_costs().first, eta.hpp).
  ProgressReporter(std::ostream& out, Verbosity verbosity, std::vector<TrialCost> pending, int workers);
  // Of a sweep too large to cost each trial (waiting_costs()): a trial
  // beyond the costed ones is costed when it starts, on `limits`.
  ProgressReporter(std::ostream& out, Verbosity verbosity, WaitingCosts pending, int workers, ExampleLimits limits);
  // Without costs: `total_trials` trials taken as alike.
  ProgressReporter(std::ostream& out, Verbosity verbosity, std::size_t total_trials, int workers);
  void trial_started(const TrialSpec& trial, int attempt, int rank);
  void trial_finished(const TrialRow& row);
  void note(const std::string& text);  // shown unless quiet
  // Trials of a large sweep that will not run after all (their ids were
  // handed out before): fewer to wait for.
  void trials_skipped(std::size_t count);
  // SweepEta's (eta.hpp) of this run's finished, running and waiting
  // trials; nullopt until a finished trial did some work.
  std::optional<std::chrono::seconds> eta() const;

 private:
  struct Running {
    TrialCost cost;
    Clock::time_point start;
  };
  TrialCost take_waiting(const TrialSpec* trial, const std::string& id);

  std::ostream& out_;
  Verbosity verbosity_;
  std::size_t total_;
  std::size_t finished_ = 0;
  int workers_;
  // Not started: waiting_[waiting_front_..]. Trials mostly start in
  // dispatch order; taking the first moves the front instead of shifting
  // 10^6 costs.
  std::vector<TrialCost> waiting_;
  std::size_t waiting_front_ = 0;
  std::size_t beyond_ = 0;  // waiting after waiting_, of a large sweep
  std::vector<TrialCost> beyond_sample_;
  ExampleLimits limits_;
  std::map<std::string, Running> running_;  // by trial id
  std::vector<FinishedTrial> finished_trials_;
  Clock::time_point start_ = Clock::now();
  mutable SweepEta eta_;  // throttled with many trials waiting
};

// ---- the sweep ----------------------------------------------------------------

enum class Dispatch {
  dynamic,            // the next pending trial to whichever worker asks (the default)
  static_round_robin  // trial k to worker k mod P, for the benchmark's comparison only
};

inline constexpr std::chrono::milliseconds kDefaultWorkerSilence{30000};

struct SweepOptions {
  std::int32_t run = 0;
  std::optional<std::uint64_t> mem_budget_bytes;
  // Workers compress whole chunks of samples in this format and send the
  // rest as rows; nullopt: rows only (sample_chunk.hpp).
  std::optional<SampleChunkFormat> sample_chunks;
  // A worker sends what its trial streamed at least this often.
  std::chrono::milliseconds flush_interval =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(kDefaultFlushSeconds));
  // Set by a signal (stop_signals.hpp): no new trials, running ones interrupted.
  const std::atomic<bool>* stop = nullptr;
  ProgressReporter* progress = nullptr;  // rank 0; may be null
  Dispatch dispatch = Dispatch::dynamic;
  // A worker rank 0 heard nothing from for `worker_silence` (a running
  // worker sends at least every second), while its trial is also past its
  // time limit (`trial_timeout`, or the trial's own `timeout`, the smaller)
  // by as much, is given up: stopped (SIGSTOP) or hung, it can no longer
  // enforce its trial's limits. Its attempt is recorded `interrupted` and
  // runs again on another worker (docs/sweep.md, "A silent worker").
  std::chrono::milliseconds worker_silence = kDefaultWorkerSilence;
  std::optional<std::chrono::milliseconds> trial_timeout;
  // [search] (docs/search.md): `trials` are its configurations, and rank 0
  // makes each probe as results come in; every rank passes the same spec.
  // Rank 0 also passes what the results file holds of the searches (a
  // resume replays them); null: nothing yet.
  const SearchSpec* search = nullptr;
  const SearchHistory* search_history = nullptr;
};

struct SweepResult {
  std::size_t finished = 0;  // trial rows written in this run
  std::map<std::string, std::size_t> by_status;
  std::size_t not_started = 0;  // pending trials left when the sweep stopped (of a search sweep: searches not ended)
  bool stopped = false;         // by a signal (on any rank)
  // Workers rank 0 gave up on (SweepOptions::worker_silence), in the order
  // it did; they are no longer in the sweep, so the job cannot end with the
  // ranks agreeing (run_session ends it).
  std::vector<int> silent_ranks;
  // Of by_status["interrupted"]: the silent ranks' attempts, queued again.
  std::size_t silent_attempts = 0;
};

// Thrown by run_sweep on rank 0 of several when its sink failed, once every
// worker has been told to finish and has returned: the ranks can still
// agree on how the run ends. what() is the sink's message; cause() its
// exception (an InputError for a full disk).
class SinkFailure : public std::runtime_error {
 public:
  explicit SinkFailure(std::exception_ptr cause);
  const std::exception_ptr& cause() const { return cause_; }

 private:
  std::exception_ptr cause_;
};

// Every rank must pass the same `trials` (check_same_sweep first); rank 0's
// `pending` and `sink` are used, other ranks' ignored. Rank 0 makes each
// trial as it hands it out and sends its position; the worker makes the
// same trial from it (docs/sweep.md, "Large sweeps"). `runner` is used on
// the ranks that train: every rank but 0 when size() > 1, rank 0 otherwise.
// A sink's exception: itself alone, SinkFailure on rank 0 of several.
// Collective: returns on every rank when the sweep is over or stopped; the
// result is complete on rank 0.
SweepResult run_sweep(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending, TrialRunner* runner,
                      ResultSink* sink, const SweepOptions& options);

// Collective: throws InputError on every rank, naming the ranks whose
// `sweep_hash` differs from rank 0's, when they do not all agree.
void check_same_sweep(Communicator& comm, const std::string& sweep_hash);

}  // namespace memsweep
