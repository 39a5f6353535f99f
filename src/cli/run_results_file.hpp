#pragma once
// `memsweep run`'s results file, as the session's steps (session.hpp) use
// it: this run's row of /runs (what it measures with; on a resume, what the
// file's last run did), and the file created or reopened for the sweep.

#include "cli/run_command.hpp"
#include "memsweep/results_file_policy.hpp"
#include "memsweep/session.hpp"
#include "memsweep/store.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::cli {

// The checked form of the options. `given` holds the options that decide
// what the run measures (each given, or its default); a resume may replace
// those not given with what the file's last run used (decide_run_row).
struct RunSettings {
  std::filesystem::path output;  // set once the sweep (and the part's label) is known
  RunRow given;
  GivenOptions which;
  RetryPolicy retry;
  std::optional<CounterSourceChoice> counter_source;  // overrides the sweep file's [sampler] counter_source
  Verbosity verbosity = Verbosity::normal;
  std::chrono::milliseconds worker_silence = kDefaultWorkerSilence;  // --worker-silence; not recorded in /runs
};

// What a run is: its options, and the sweep (or part) it runs.
struct RunInput {
  const RunOptions& options;
  const RunSettings& settings;
  const SweepSpec& sweep;
  const std::string& part;                     // SweepPart::name() when the run is one part of the sweep, else empty
  const std::string& hash;                     // sweep_hash(sweep)
  const TrialProcessCost& trial_process_cost;  // this rank's, added to its predictions; /runs records rank 0's
};

std::string join(std::span<const std::string> parts, std::string_view separator);

// Rank 0, before anything is written: this run's row of /runs, with what it
// measures with. A resume takes what the file's last run measured with,
// except the options given, and refuses (InputError) one that changes what
// a trial measures unless --allow-changed-options (decide_resume). The file
// a resume continues is read once, for that decision, and held (its
// writer's lock taken) until open_results_file() starts writing it.
struct DecidedRun {
  RunRow run;
  std::optional<ResultStore::HeldForResume> held;  // a resume's file; none for a new one
  ResumeDecision resume;                           // a resume's decision (when `held`)
};
DecidedRun decide_run_row(const RunInput& input, int ranks, const std::vector<std::string>& hosts,
                          ProgressReporter& notes);

// Rank 0's open results file, and the attempts still to run.
struct OpenedStore {
  std::optional<ResultStore> store;
  PendingTrials pending;
  std::vector<CounterRequest> counter_columns;  // each from the source that served it on rank 0
  SearchHistory search_history;                 // a resume's, of a sweep with [search]
};

// Rank 0 before the sweep: the results file created (with `run`, the row
// decide_run_row() gave) or, with the file `decided` holds, continued; and
// the attempts still to run.
OpenedStore open_results_file(const RunInput& input, const RunRow& run, DecidedRun decided, const Communicator& comm,
                              const std::vector<std::string>& hosts, ProgressReporter& notes);

// Rank 0's writer behind the scheduler's sink interface.
class StoreSink final : public ResultSink {
 public:
  explicit StoreSink(ResultStore& store) : store_(store) {}
  void samples(std::span<const SampleRow> rows) override { store_.append_samples(rows); }
  void compressed_samples(const CompressedSampleChunk& chunk) override { store_.append_compressed_samples(chunk); }
  void epoch(const EpochRow& row) override { store_.append_epoch(row); }
  void metric(const MetricRow& row) override { store_.append_metric(row); }
  void trial(const TrialRow& row, const std::string& message) override { store_.append_trial(row, message); }
  void search(const SearchRow& row) override { store_.append_search(row); }
  void tick() override { store_.write_waiting_samples(); }
  void stopping() override { store_.mark_run(run_end_state::kStopping); }

 private:
  ResultStore& store_;
};

}  // namespace memsweep::cli
