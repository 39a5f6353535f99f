#pragma once
// How long a sweep has left, from what its trials will do rather than from
// how many there are (docs/sweep.md, "ETA"). The progress lines and `memsweep
// watch` both show SweepEta's; only where they learn the sweep's state
// differs (the coordinator's events, the results file).
//
// Each trial has a predicted work: its training's floating-point operations
// (forward pass × 3 for each training example, × 1 for each test example,
// every epoch). Finished trials turn work into seconds: a ratio fitted per
// group of like trials, the most alike that has a finished trial: the same
// configuration (its repeats, a search's probes), then the same trainer and
// model kind, then the same trainer, then every trial. A FLOP of a small MLP
// and one of a CNN do not take the same time, and neither do a batch of 8 and
// one of 512 of the same network, nor a program's FLOPs (counted from fields
// its command may not even use) and memsweep's. A sweep whose slow trials
// come last is then not mistaken for a quick one, and a repeat is expected
// to take what its first run took.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memsweep {

// --max-train-examples / --max-test-examples; 0: the whole split.
struct ExampleLimits {
  std::size_t train = 0;
  std::size_t test = 0;
};

// What the cost model knows of one trial before it runs.
struct TrialCost {
  std::string trial_id;
  std::string trainer;  // "memsweep" or the program's name
  std::string kind;     // trainer and model: "memsweep mlp", "memsweep cnn", "torch cnn"
  int epochs = 1;
  double work = 0.0;  // predicted floating-point operations of the whole trial
  // The trainer and everything that defines the trial but its repeat (of a
  // search's probe: the search): trials alike enough to take the same time.
  std::string configuration;
  // Whether `work` counts the network the trial trains. Not for a program
  // that is passed no `model` (word_language_model's Transformer and LSTM):
  // its FLOPs would be of memsweep's default MLP, the same for every trial,
  // and one trial's time would be taken for all (a sweep of long and short
  // ones said 26 min at its start for a 7 min 44 s run). Such a trial's work
  // is its epochs (where the program is passed them), its kind its trainer
  // and its text-valued params ("wlm arch=LSTM"), and its rate comes only from
  // its configuration or its kind: until a trial of each such kind has
  // ended, the ETA is unknown rather than borrowed from another kind.
  bool network_known = true;
};

// The trial's predicted work on its dataset's published split sizes (a
// synthetic dataset's own), cut to `limits`. A program's trial is costed
// from the same fields (its placeholders), its ratio fitted apart.
TrialCost trial_cost(const TrialSpec& trial, ExampleLimits limits);

// The trials a run will hand out, as the ETA sees them: the first ones in
// dispatch order, each costed; of a large sweep, the rest as a count and a
// sample spread over them (costing 10^7 trials would take a minute).
struct WaitingCosts {
  std::vector<TrialCost> first;
  std::size_t beyond = 0;                // trials after `first`
  std::vector<TrialCost> beyond_sample;  // a sample of them, spread evenly
};

// The waiting trials' time after the first ones: the sample's mean
// predicted time, times how many it stands for, shared by the workers.
struct WaitingTail {
  std::size_t trials = 0;
  std::span<const TrialCost> sample;
};

// Trials costed one by one for the ETA; of a larger sweep, the rest from a
// sample of this many.
inline constexpr std::size_t kCostedWaitingTrials = 10'000;
inline constexpr std::size_t kSampledWaitingTrials = 1'000;

// What the ETA needs of `pending`'s trials: the first kCostedWaitingTrials
// costed in dispatch order, the rest counted and sampled.
WaitingCosts waiting_costs(const SweepTrials& trials, const PendingTrials& pending, ExampleLimits limits);

// A trial that ended in this run.
struct FinishedTrial {
  TrialCost cost;
  double wall_seconds = 0.0;
  double start_seconds = -1.0;  // spawn to ready (TrialRow::start_seconds); -1: not measured
  int epochs_done = 0;
  bool ran_to_end = false;  // `ok`: did all its work, whatever epochs a program reported
};

// `row` (a final row of this run) as the cost model reads it.
FinishedTrial finished_trial(TrialCost cost, const TrialRow& row);

// A trial running now, `elapsed_seconds` since it started.
struct RunningTrial {
  TrialCost cost;
  double elapsed_seconds = 0.0;
};

struct EtaInputs {
  std::vector<FinishedTrial> finished;  // this run's: earlier runs may have run on other machines
  std::vector<RunningTrial> running;
  std::vector<TrialCost> waiting;  // not started, in dispatch order
  int workers = 1;
};

// The fitted model: seconds for a trial = fixed + per_flop × work.
struct CostRate {
  double fixed_seconds = 0.0;  // process start, measured (start_seconds)
  double seconds_per_flop = 0.0;
};

// The rate for trials like `cost`: fitted from the finished trials of its
// configuration that did some work, else of its kind, else of its trainer,
// else of all; nullopt when none did. A trial that ran to its end did its whole work; one that
// ended early (diverged, over its budget, timed out) did the epochs it
// finished, and one that finished none (failed at start, skipped over its
// budget) is left out, so that its short time does not make the others look
// cheap.
std::optional<CostRate> fitted_rate(std::span<const FinishedTrial> finished, const TrialCost& cost);

// A running trial past its predicted time is expected to overrun by this
// share again of what it has overrun so far, and to have at least
// kMinRunningSeconds left: the prediction was wrong and nothing says by how
// much, but it has not ended (an ETA of 0 while trials run is the one answer
// known to be wrong). Growing from the prediction on, not a share of all its
// time: that jumped a trial's last fifth up to a quarter of its length (a
// 7-minute trial said 1m47s two seconds before it ended).
inline constexpr double kOverrunShare = 0.5;
inline constexpr double kMinRunningSeconds = 1.0;

// Seconds until the last trial ends: the running trials' predicted time
// left (kOverrunShare of their overrun once past it), then the waiting ones handed in order to whichever
// worker frees first, as the dynamic scheduler does; the latest finish.
// Exactly 0 when nothing runs or waits, and more than 0 otherwise; nullopt
// while the model has nothing to fit (no finished trial trained an epoch):
// there is no prior for this machine's speed.
std::optional<double> remaining_seconds(const EtaInputs& inputs);
// The same, for a caller that holds the trials itself (rank 0's progress
// lines: copying 10^6 waiting trials for every line cost more than the ETA).
std::optional<double> remaining_seconds(std::span<const FinishedTrial> finished, std::span<const RunningTrial> running,
                                        std::span<const TrialCost> waiting, int workers, WaitingTail tail = {});

// A trial's time limit, for the ETA's cap: a trial is killed at its limit
// (docs/runner.md), so no trial takes longer than it.
struct TimeLimited {
  std::optional<double> limit_seconds;  // nullopt: none
  double elapsed_seconds = 0.0;         // a running trial's time so far
};

// `seconds` (an ETA), never past the latest end if every trial took its
// whole time limit (the running ones their limit less their elapsed time,
// the waiting ones in order to the first free worker): a cost model that
// goes wrong (a unit mistaken for FLOPs once said 18 million hours) is then
// still bounded. Unchanged when some trial has no limit.
std::optional<double> capped_by_time_limits(std::optional<double> seconds, std::span<const TimeLimited> running,
                                            std::span<const TimeLimited> waiting, int workers);

// The ETA that the progress lines and `memsweep watch` show: remaining_seconds()
// of the sweep as they see it, worked out at most once a second while more
// than kWaitingWorkedOutEachTime trials wait (a pass over 10^6 of them took
// 80 ms, more than a small trial's run), and counted down from the last one
// in between.
// The ETA as the progress lines and `memsweep watch` write it: "unknown"
// without an estimate, whole seconds rounded up (a sweep with work left is
// never "0s"), then minutes and hours as format_duration() writes them.
std::string eta_text(std::optional<double> seconds);

class SweepEta {
 public:
  static constexpr std::size_t kWaitingWorkedOutEachTime = 10'000;
  static constexpr double kRefreshSeconds = 1.0;

  // `now_seconds`: the time on a clock the caller keeps the same (its origin
  // does not matter).
  std::optional<double> seconds_left(std::span<const FinishedTrial> finished, std::span<const RunningTrial> running,
                                     std::span<const TrialCost> waiting, int workers, double now_seconds,
                                     WaitingTail tail = {});

 private:
  std::optional<double> last_;
  double last_at_ = 0.0;
};

}  // namespace memsweep
