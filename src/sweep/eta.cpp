// The sweep's ETA from the trials' predicted work, scaled by what finished
// trials took (memsweep/eta.hpp). Pure: no clock (the callers give the
// time), no I/O.

#include "memsweep/eta.hpp"

#include "common/duration_text.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/model_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <queue>
#include <utility>

namespace memsweep {
namespace {

// Backward is two products of the forward's size (the gradients of the
// inputs and of the weights): a training example costs three forward passes.
constexpr double kTrainingPassesPerExample = 3.0;

std::size_t limited(std::size_t count, std::size_t limit) { return limit == 0 ? count : std::min(count, limit); }

// Sums of the trials that trained an epoch, for one group of like trials.
struct Fit {
  std::size_t trials = 0;
  double variable_seconds = 0.0;  // wall time less process start
  double work_done = 0.0;
  std::size_t starts = 0;  // trials whose start was measured
  double start_seconds = 0.0;

  void add(const FinishedTrial& trial) {
    const int epochs = std::max(trial.cost.epochs, 1);
    const int epochs_done = trial.ran_to_end ? epochs : std::min(trial.epochs_done, epochs);
    const double done = trial.cost.work * static_cast<double>(epochs_done) / epochs;
    const double start = std::max(trial.start_seconds, 0.0);
    ++trials;
    variable_seconds += std::max(trial.wall_seconds - start, 0.0);
    work_done += done;
    if (trial.start_seconds >= 0.0) {
      ++starts;
      start_seconds += trial.start_seconds;
    }
  }
  CostRate rate() const {
    return {starts > 0 ? start_seconds / static_cast<double>(starts) : 0.0,
            work_done > 0.0 ? variable_seconds / work_done : 0.0};
  }
};

// The four levels a trial's rate comes from, most specific first.
struct Fits {
  std::map<std::string, Fit> by_configuration;
  std::map<std::string, Fit> by_kind;
  std::map<std::string, Fit> by_trainer;
  Fit all;

  explicit Fits(std::span<const FinishedTrial> finished) {
    for (const FinishedTrial& trial : finished) {
      // A trial that never finished an epoch (failed at start, skipped over
      // its budget, diverged in the first) says nothing of its work's cost.
      if ((!trial.ran_to_end && trial.epochs_done < 1) || trial.cost.work <= 0.0) continue;
      by_configuration[trial.cost.configuration].add(trial);
      by_kind[trial.cost.kind].add(trial);
      by_trainer[trial.cost.trainer].add(trial);
      all.add(trial);
    }
  }
  std::optional<CostRate> rate(const TrialCost& cost) const {
    if (const auto same = by_configuration.find(cost.configuration); same != by_configuration.end())
      return same->second.rate();
    if (const auto kind = by_kind.find(cost.kind); kind != by_kind.end()) return kind->second.rate();
    if (!cost.network_known) return std::nullopt;  // another kind's time says nothing of it
    if (const auto trainer = by_trainer.find(cost.trainer); trainer != by_trainer.end()) return trainer->second.rate();
    if (all.trials > 0) return all.rate();
    return std::nullopt;
  }
};

double predicted_seconds(const CostRate& rate, const TrialCost& cost) {
  return rate.fixed_seconds + rate.seconds_per_flop * cost.work;
}

double seconds_left_of(const CostRate& rate, const RunningTrial& trial) {
  const double elapsed = std::max(trial.elapsed_seconds, 0.0);
  const double left = predicted_seconds(rate, trial.cost) - elapsed;
  return std::max({left, -kOverrunShare * left, kMinRunningSeconds});
}

// A search's probes are one configuration whatever their value on the axis
// (their work follows the value); repeats differ only in their repeat.
std::string configuration_key(const TrialSpec& trial) {
  if (trial.search) return fmt::format("{} search {}", trial.trainer(), trial.search->search);
  TrialSpec first = trial;
  first.repeat = 0;
  return fmt::format("{} {}", trial.trainer(), first.canonical_text());
}

// A program's params that name a variant rather than scale one (text and
// true/false: arch = "LSTM"), as "name=value": what tells its kinds apart.
std::string variant_params(const TrialSpec& trial) {
  std::string text;
  for (const auto& [name, value] : trial.params) {
    const bool variant = value.json.starts_with('"') || value.json == "true" || value.json == "false";
    if (variant) text += fmt::format(" {}={}", name, value.text);
  }
  return text;
}

TrialCost network_cost(const TrialSpec& trial, ExampleLimits limits) {
  const ExampleCounts published = canonical_example_counts(trial.dataset);
  const double train = static_cast<double>(limited(published.train, limits.train));
  const double test = static_cast<double>(limited(published.test, limits.test));
  const double forward = static_cast<double>(forward_flops_per_example(model_spec(trial)));
  TrialCost cost;
  cost.trial_id = trial.id;
  cost.trainer = std::string(trial.trainer());
  cost.kind = cost.trainer + " " + std::string(model_name(trial.model));
  cost.epochs = std::max(trial.epochs, 1);
  cost.configuration = configuration_key(trial);
  // Every epoch trains on the train split and then evaluates the test split.
  cost.work = static_cast<double>(cost.epochs) * forward * (kTrainingPassesPerExample * train + test);
  return cost;
}

}  // namespace

TrialCost trial_cost(const TrialSpec& trial, ExampleLimits limits) {
  if (trial.program && !trial.shows_field("model")) {
    // Its network is not memsweep's to count (TrialCost::network_known).
    TrialCost cost;
    cost.trial_id = trial.id;
    cost.trainer = std::string(trial.trainer());
    cost.kind = cost.trainer + variant_params(trial);
    cost.epochs = trial.shows_field("epochs") ? std::max(trial.epochs, 1) : 1;
    cost.configuration = configuration_key(trial);
    cost.work = static_cast<double>(cost.epochs);
    cost.network_known = false;
    return cost;
  }
  return network_cost(trial, limits);
}

WaitingCosts waiting_costs(const SweepTrials& trials, const PendingTrials& pending, ExampleLimits limits) {
  WaitingCosts costs;
  if (const auto& listed = pending.listed()) {
    for (const PendingTrial& trial : *listed)
      if (trial.index < trials.size()) costs.first.push_back(trial_cost(trials[trial.index], limits));
    return costs;
  }
  // In dispatch order, as the scheduler will hand them out (a large sweep's
  // duplicates counted: an upper bound, as the progress lines' total).
  std::size_t position = 0;
  for (; position < trials.size() && costs.first.size() < kCostedWaitingTrials; ++position) {
    const std::optional<TrialSpec> trial = trials.made(position);
    if (trial && pending.runs(trial->id)) costs.first.push_back(trial_cost(*trial, limits));
  }
  const std::size_t count = pending.count(trials.size());
  if (position >= trials.size() || count <= costs.first.size()) return costs;
  costs.beyond = count - costs.first.size();
  const std::size_t rest = trials.size() - position;
  const std::size_t step = std::max<std::size_t>(rest / kSampledWaitingTrials, 1);
  for (std::size_t at = position; at < trials.size(); at += step) {
    const std::optional<TrialSpec> trial = trials.made(at);
    if (trial && pending.runs(trial->id)) costs.beyond_sample.push_back(trial_cost(*trial, limits));
  }
  return costs;
}

FinishedTrial finished_trial(TrialCost cost, const TrialRow& row) {
  FinishedTrial trial;
  trial.cost = std::move(cost);
  trial.wall_seconds = row.wall_seconds;
  trial.start_seconds = row.start_seconds;
  trial.epochs_done = row.epochs_done;
  trial.ran_to_end = parse_status(get_fixed(row.status)) == TrialStatus::ok;
  return trial;
}

std::optional<CostRate> fitted_rate(std::span<const FinishedTrial> finished, const TrialCost& cost) {
  return Fits(finished).rate(cost);
}

std::optional<double> remaining_seconds(const EtaInputs& inputs) {
  return remaining_seconds(inputs.finished, inputs.running, inputs.waiting, inputs.workers);
}

std::optional<double> remaining_seconds(std::span<const FinishedTrial> finished, std::span<const RunningTrial> running,
                                        std::span<const TrialCost> waiting, int workers, WaitingTail tail) {
  if (running.empty() && waiting.empty() && (tail.trials == 0 || tail.sample.empty())) return 0.0;
  const Fits fits(finished);
  if (fits.all.trials == 0) return std::nullopt;

  // Each worker's time until it is free; the running trials first (one
  // each), then the waiting ones in dispatch order to the first free worker.
  // Summing and dividing by the workers would ignore the tail: the last
  // long trial runs on one worker while the others idle.
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int worker = 0; worker < std::max(workers, 1); ++worker) free_at.push(0.0);
  double last_end = 0.0;
  const auto assign = [&](double seconds) {
    const double end = free_at.top() + seconds;
    free_at.pop();
    free_at.push(end);
    last_end = std::max(last_end, end);
  };
  // A trial whose kind has no rate yet (TrialCost::network_known) leaves
  // the whole ETA unknown.
  for (const RunningTrial& trial : running) {
    const std::optional<CostRate> rate = fits.rate(trial.cost);
    if (!rate) return std::nullopt;
    assign(seconds_left_of(*rate, trial));
  }
  for (const TrialCost& cost : waiting) {
    const std::optional<CostRate> rate = fits.rate(cost);
    if (!rate) return std::nullopt;
    assign(predicted_seconds(*rate, cost));
  }
  if (tail.trials == 0 || tail.sample.empty()) return last_end;
  // So many trials that the workers end together: their busy time shared.
  double sample_seconds = 0.0;
  for (const TrialCost& cost : tail.sample) {
    const std::optional<CostRate> rate = fits.rate(cost);
    if (!rate) return std::nullopt;
    sample_seconds += predicted_seconds(*rate, cost);
  }
  double busy = sample_seconds / static_cast<double>(tail.sample.size()) * static_cast<double>(tail.trials);
  while (!free_at.empty()) {
    busy += free_at.top();
    free_at.pop();
  }
  return std::max(last_end, busy / std::max(workers, 1));
}

std::optional<double> capped_by_time_limits(std::optional<double> seconds, std::span<const TimeLimited> running,
                                            std::span<const TimeLimited> waiting, int workers) {
  if (!seconds) return seconds;
  const auto unlimited = [](const TimeLimited& trial) { return !trial.limit_seconds; };
  if (std::any_of(running.begin(), running.end(), unlimited) || std::any_of(waiting.begin(), waiting.end(), unlimited))
    return seconds;
  std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
  for (int worker = 0; worker < std::max(workers, 1); ++worker) free_at.push(0.0);
  double last_end = 0.0;
  const auto assign = [&](double trial_seconds) {
    const double end = free_at.top() + std::max(trial_seconds, kMinRunningSeconds);
    free_at.pop();
    free_at.push(end);
    last_end = std::max(last_end, end);
  };
  for (const TimeLimited& trial : running) assign(*trial.limit_seconds - trial.elapsed_seconds);
  for (const TimeLimited& trial : waiting) assign(*trial.limit_seconds);
  return std::min(*seconds, last_end);
}

std::string eta_text(std::optional<double> seconds) {
  if (!seconds || std::isnan(*seconds)) return "unknown";
  return format_duration(std::ceil(std::max(*seconds, 0.0)));
}

std::optional<double> SweepEta::seconds_left(std::span<const FinishedTrial> finished,
                                             std::span<const RunningTrial> running, std::span<const TrialCost> waiting,
                                             int workers, double now_seconds, WaitingTail tail) {
  const double since_last = now_seconds - last_at_;
  if (waiting.size() + tail.trials > kWaitingWorkedOutEachTime && last_ && since_last < kRefreshSeconds)
    return std::max(*last_ - since_last, 0.0);
  const std::optional<double> seconds = remaining_seconds(finished, running, waiting, workers, tail);
  if (seconds) {
    last_ = seconds;
    last_at_ = now_seconds;
  }
  return seconds;
}

}  // namespace memsweep
