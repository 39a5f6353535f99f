#pragma once
// One `memsweep run` on every rank (src/sweep/session.cpp): the ranks agree
// on their input, rank 0 decides the run's row of /runs and opens the
// results file, every rank learns the outcome, the sweep runs, and every
// rank exits with rank 0's status, so that mpirun's and srun's is the same.
// docs/sweep.md draws the steps.
//
// The session owns the order of the steps and what the ranks tell each
// other; what each step does with the command line, the results file and
// the trainer is the caller's (SessionSteps), so that this module needs
// neither HDF5 nor oneDNN, and the steps can be tested with threads as ranks.

#include "memsweep/results.hpp"
#include "memsweep/sweep.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memsweep {

// Rank 0's results file, once open.
struct OpenedResults {
  ResultSink* sink = nullptr;  // owned by the steps; written until close_results()
  PendingTrials pending;
  std::vector<CounterRequest> counter_columns;  // each from the source that served it on rank 0
  std::int32_t run_index = 0;                   // this invocation's row of /runs
  SearchHistory search_history;                 // what the file holds of a [search]'s probes (a resume)
};

// What a rank's trial runner needs from the session.
struct RunnerSetup {
  std::vector<CounterRequest> counter_columns;  // rank 0's choice: every rank writes the same columns
  std::chrono::milliseconds flush_interval{};   // RunRow::flush_interval
  ProgressReporter* notes = nullptr;            // rank 0 (alone) only; may be null
};

// The steps of a run that are not the session's own. A step that throws
// InputError ends every rank with exit status 2; another exception, 1.
class SessionSteps {
 public:
  virtual ~SessionSteps() = default;
  // Every rank: checks the options and reads the sweep file; returns the
  // sweep's hash (sweep_hash()), which the ranks compare.
  virtual std::string load() = 0;
  // After a load() that succeeded on every rank.
  virtual const SweepSpec& sweep() const = 0;
  virtual Verbosity verbosity() const = 0;
  virtual std::vector<std::string> notes() const = 0;  // rank 0 shows them before anything else
  virtual std::string results_path() const = 0;        // for the last lines
  // Rank 0: this run's row of /runs (what it measures with).
  virtual RunRow decide_run_row(int ranks, const std::vector<std::string>& hosts, ProgressReporter& notes) = 0;
  // Every rank, with the agreed row: this rank's datasets are there.
  virtual void check_datasets(const RunRow& run) = 0;
  // Every rank, once every rank has its datasets: this rank's GPUs
  // (rank_gpus.hpp), from every rank's host. InputError when its node's do
  // not go round its training ranks.
  virtual void assign_gpus(const std::vector<std::string>& hosts, int rank) {
    (void)hosts;
    (void)rank;
  }
  // Rank 0: the results file created or reopened, with `run`.
  virtual OpenedResults open_results(const RunRow& run, const Communicator& comm, const std::vector<std::string>& hosts,
                                     ProgressReporter& notes) = 0;
  // The ranks that train (every rank but 0, or rank 0 alone).
  virtual std::unique_ptr<TrialRunner> make_runner(const RunRow& run, const RunnerSetup& setup) = 0;
  // Rank 0 after the sweep: the run's end recorded (`complete`: every trial
  // ran), the file closed.
  virtual void close_results(bool complete) = 0;
  // --worker-silence (SweepOptions::worker_silence).
  virtual std::chrono::milliseconds worker_silence() const { return kDefaultWorkerSilence; }
  // Rank 0, as the session ends with `exit_status` (before the job is
  // aborted, too): a launcher may report another status than memsweep's own
  // (mpirun's is 1 after a Ctrl-C, README "Exit statuses"). `trials_left`:
  // the trials without a final status once the sweep ran (unknown after an
  // error), for a job script that decides whether to requeue.
  virtual void ending(int exit_status, std::optional<std::size_t> trials_left) {
    (void)exit_status;
    (void)trials_left;
  }
};

// Collective: runs the session on every rank of `comm` and returns the exit
// status, the same on every rank. Rank 0 prints the errors (once) and the
// last lines. An error during the sweep that leaves the ranks unable to
// agree (a protocol error, a rank's failure) aborts the job with status 1
// (Communicator::abort); rank 0's results file failing (the disk full)
// does not: every rank returns its status (2 when the store says input).
int run_session(Communicator& comm, SessionSteps& steps);

// RunRow::flush_interval as the sweep's and the runner's interval (at least 1 ms).
std::chrono::milliseconds flush_interval_of(const RunRow& run);

}  // namespace memsweep
