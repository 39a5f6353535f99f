#include "search/board.hpp"

#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace memsweep::search {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A probe that comes back killed without a result this often (its process
// killed by a signal, its rank lost) is a failure of the search, not a retry.
constexpr int kMaxLostAttempts = 3;

bool same_probe(const NextProbe& probe, const TrialRow& row) {
  return probe.value == row.axis_value && probe.full == (row.full_run == 1);
}

// The estimate's answer: the largest value whose estimated footprint is
// within the limit. It leaves out the trial process's own baseline
// (docs/estimate.md), so it is a value to start from, not an answer.
std::int64_t predicted_answer(const std::optional<AxisEstimate>& estimate, const SearchSpec& spec, double limit) {
  if (!estimate || estimate->slope <= 0.0) return -1;
  const double value = std::floor((limit - estimate->intercept) / estimate->slope);
  if (value < static_cast<double>(spec.low)) return spec.low - 1;
  return static_cast<std::int64_t>(std::min(value, static_cast<double>(spec.high)));
}

// The estimate along the axis, where memsweep can make one. One that
// fails (oneDNN refusing a shape) leaves the model strategy to start from
// a line through the origin, as for a program; the row's `predicted` is -1.
std::optional<AxisEstimate> axis_estimate_of(const TrialSpec& configuration, const SearchSpec& spec) {
  try {
    return estimate_along_axis(configuration, spec, canonical_example_counts(configuration.dataset));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

SearchBoard::SearchBoard(const SweepTrials& configurations, const SearchSpec& spec, const SearchHistory* history,
                         std::int32_t run, int workers)
    : spec_(spec), run_(run), workers_(std::max(1, workers)) {
  for (std::size_t position = 0; position < configurations.size(); ++position) {
    made_.push_back(configurations[position]);
    const TrialSpec& configuration = made_.back();
    estimates_.push_back(axis_estimate_of(configuration, spec));
    // A probe as long as the trial itself is its own verification.
    const bool probes_are_full = spec.axis == search_axis::kEpochs || spec.probe_epochs >= configuration.epochs;
    for (std::size_t limit = 0; limit < spec.limits.size(); ++limit) {
      Search search;
      search.configuration = position;
      search.limit_index = limit;
      search.settings = search_settings(spec, limit, probes_are_full);
      // The estimate is of host memory: a GPU search has none to start from.
      if (estimates_.back() && spec.device == SearchDevice::host)
        search.settings.estimated_slope = estimates_.back()->slope;
      searches_.push_back(std::move(search));
    }
  }
  left_ = searches_.size();
  if (history != nullptr) {
    written_ = history->written;
    for (const auto& [id, attempt] : history->next_attempt) next_attempt_[id] = attempt;
    for (const TrialRow& row : history->rows) {
      if (row.search < 0 || static_cast<std::size_t>(row.search) >= searches_.size()) continue;
      Search& search = searches_[static_cast<std::size_t>(row.search)];
      search.probes = std::max(search.probes, row.probe + 1);
      add_result(search, row);
    }
  }
  for (std::size_t index = 0; index < searches_.size(); ++index) end_if_done(index);
}

// A finished attempt's result joins its search's, unless it was no result
// (interrupted, its rank lost): then the same probe runs again.
void SearchBoard::add_result(Search& search, const TrialRow& row) {
  const std::string id = get_fixed(row.trial_id);
  next_attempt_[id] = std::max(next_attempt_[id], row.attempt + 1);
  search.isolation = get_fixed(row.isolation);
  const bool gpu = spec_.device == SearchDevice::gpu;
  if (gpu && row.gpu_limit >= 0) {
    search.gpu_mechanism = get_fixed(row.gpu_limit_mechanism);
    search.gpu_name = get_fixed(row.gpu_name);
    search.gpu_total = row.gpu_total;
    // "device": the limit is the size the trials' rows report.
    if (search.settings.limit_bytes <= 0) search.settings.limit_bytes = static_cast<double>(row.gpu_limit);
  }
  ProbeResult result{.value = row.axis_value,
                     .full = row.full_run == 1,
                     .outcome = probe_outcome(row),
                     .peak_bytes = static_cast<double>(gpu ? row.gpu_peak : row.rss_peak),
                     .seconds = row.wall_seconds,
                     .status = parse_status(get_fixed(row.status)),
                     .message = get_fixed(row.message)};
  if (result.outcome == ProbeOutcome::retry) {
    // A stop (a signal, a Slurm requeue) interrupts a probe through no
    // fault of its own: only a probe killed without a result counts.
    if (result.status == TrialStatus::interrupted || ++lost_[id] < kMaxLostAttempts) return;
    result.outcome = ProbeOutcome::failed;
    result.message = fmt::format("no result in {} attempts; the last: {}", kMaxLostAttempts, result.message);
  }
  // One result per probe: a later row of the same trial (a retry) replaces it.
  const auto same = std::find_if(search.finished.begin(), search.finished.end(), [&](const ProbeResult& earlier) {
    return earlier.value == result.value && earlier.full == result.full;
  });
  if (same != search.finished.end())
    *same = std::move(result);
  else
    search.finished.push_back(std::move(result));
}

std::optional<Job> SearchBoard::next() {
  const std::size_t count = searches_.size();
  if (left_ == 0) return std::nullopt;
  // Free workers share the searches still going; with fewer searches than
  // workers, each search gets several probes of its bracket at once.
  const int share = std::max(1, workers_ / static_cast<int>(left_));
  for (std::size_t step = 0; step < count; ++step) {
    const std::size_t index = (turn_ + step) % count;
    Search& search = searches_[index];
    if (search.ended) continue;
    if (search.queued.empty()) {
      // A k-section spends trials k at a time: it keeps a third of what
      // is left of max_trials for each round, so that it has rounds left.
      const int left = search.settings.max_trials - static_cast<int>(search.finished.size() + search.running.size());
      const int wanted = std::min(share, std::max(1, left / 3)) - static_cast<int>(search.running.size());
      if (wanted <= 0) continue;
      const SearchStep next = next_probes(search.settings, search.finished, search.running, wanted);
      if (next.standing.state != SearchState::running) {
        end_if_done(index);
        continue;
      }
      if (next.next.empty() && search.running.empty()) {
        // Nothing running and nothing to try: the strategy has nothing
        // more to say, and the search ends with what it has.
        SearchStanding standing = next.standing;
        standing.state = SearchState::stopped;
        standing.message = "the strategy proposed no further value; " + standing.message;
        end(index, standing);
        continue;
      }
      search.queued.assign(next.next.begin(), next.next.end());
    }
    if (search.queued.empty()) continue;
    const NextProbe probe = search.queued.front();
    search.queued.pop_front();
    turn_ = (index + 1) % count;
    return job_for(index, probe);
  }
  return std::nullopt;
}

std::optional<Job> SearchBoard::job_for(std::size_t index, const NextProbe& probe) {
  Search& search = searches_[index];
  search.running.push_back(probe);
  const SearchPoint point{.search = static_cast<std::int32_t>(index),
                          .probe = search.probes++,
                          .value = probe.value,
                          .limit_bytes = spec_.limits[search.limit_index],
                          .full = probe.full,
                          .gpu = spec_.device == SearchDevice::gpu};
  TrialSpec trial = search_trial(made_[search.configuration], spec_, point);
  const auto attempt = next_attempt_.find(trial.id);
  const std::int32_t number = attempt == next_attempt_.end() ? 0 : attempt->second;
  return Job{PendingTrial{search.configuration, number}, std::move(trial)};
}

bool SearchBoard::waits() const {
  return std::any_of(searches_.begin(), searches_.end(),
                     [](const Search& search) { return !search.ended && !search.running.empty(); });
}

void SearchBoard::finished(const TrialRow& row) {
  if (row.search < 0 || static_cast<std::size_t>(row.search) >= searches_.size()) return;
  const std::size_t index = static_cast<std::size_t>(row.search);
  Search& search = searches_[index];
  const auto running = std::find_if(search.running.begin(), search.running.end(),
                                    [&](const NextProbe& probe) { return same_probe(probe, row); });
  if (running != search.running.end()) search.running.erase(running);
  add_result(search, row);
  // What was planned before this result may no longer be worth a trial.
  search.queued.clear();
  end_if_done(index);
}

void SearchBoard::end_if_done(std::size_t index) {
  Search& search = searches_[index];
  if (search.ended || !search.running.empty()) return;
  const SearchStep step = next_probes(search.settings, search.finished, {}, 1);
  if (step.standing.state != SearchState::running) end(index, step.standing);
}

void SearchBoard::end(std::size_t index, const SearchStanding& standing) {
  Search& search = searches_[index];
  search.ended = true;
  search.queued.clear();
  --left_;
  if (!written_.contains(static_cast<std::int32_t>(index))) ended_.push_back(row_of(index, standing));
}

std::size_t SearchBoard::left() const { return left_; }

std::vector<SearchRow> SearchBoard::take_ended() { return std::exchange(ended_, {}); }

SearchRow SearchBoard::row_of(std::size_t index, const SearchStanding& standing) const {
  const Search& search = searches_[index];
  const TrialSpec& configuration = made_[search.configuration];
  const TrialRow trial = trial_row_for(configuration, 0);
  // The configuration as its trial row names it.
  SearchRow row{.search = static_cast<std::int32_t>(index),
                .configuration = static_cast<std::int32_t>(search.configuration),
                .limit_index = static_cast<std::int32_t>(search.limit_index),
                .run = run_,
                .configuration_id = trial.trial_id,
                .trainer = trial.trainer,
                .dataset = trial.dataset,
                .model = trial.model,
                .optimizer = trial.optimizer,
                .learning_rate = trial.learning_rate,
                .epochs = trial.epochs,
                .batch_size = trial.batch_size,
                .depth = trial.depth,
                .hidden = trial.hidden,
                .channels = trial.channels,
                .repeat = trial.repeat,
                .params = trial.params,
                .definition = trial.definition,
                .range_low = spec_.low,
                .range_high = spec_.high,
                .limit = static_cast<std::int64_t>(spec_.limits[search.limit_index]),
                .memory_plan = trial.memory_plan,
                .recompute_every = trial.recompute_every};
  set_fixed(row.axis, spec_.axis);
  const double limit = static_cast<double>(spec_.limits[search.limit_index]);
  // The runner put each probe in a cgroup with the limit as its memory.max
  // where the node allowed it; the rank's budget kill holds it otherwise.
  set_fixed(row.enforced_by, search.isolation.starts_with("cgroup") ? search.isolation : std::string("budget"));
  if (spec_.device == SearchDevice::gpu) {
    // The limit as bytes ("device": the device's size) and what held it.
    row.limit = static_cast<std::int64_t>(search.settings.limit_bytes);
    set_fixed(row.enforced_by, search.gpu_mechanism);
    set_fixed(row.device, "gpu");
    set_fixed(row.gpu_name, search.gpu_name);
    row.gpu_total = search.gpu_total;
  }
  set_fixed(row.strategy, strategy_name(spec_.strategy));
  set_fixed(row.status, search_state_name(standing.state));
  row.fits = standing.fits.value_or(-1);
  row.fits_verified = standing.fits_verified ? 1 : 0;
  row.does_not_fit = standing.does_not_fit.value_or(-1);
  if (standing.fitted) {
    row.fit_a_mib = standing.fitted->a / kMiB;
    row.fit_b_mib = standing.fitted->b / kMiB;
  }
  if (spec_.device == SearchDevice::host)
    row.predicted = predicted_answer(estimates_[search.configuration], spec_, limit);
  row.trials = standing.trials;
  for (const ProbeResult& result : search.finished) row.seconds += result.seconds;
  set_fixed(row.message, standing.message);
  return row;
}

std::string search_note(const SearchRow& row) {
  const std::string axis = get_fixed(row.axis);
  std::string text = fmt::format("search {} (configuration {} {}, limit {}): {}", row.search, row.configuration + 1,
                                 get_fixed(row.configuration_id),
                                 format_byte_size(static_cast<std::uint64_t>(row.limit)), get_fixed(row.status));
  if (row.fits >= 0)
    text += fmt::format(", {} {} fits{}", axis, row.fits, row.fits_verified == 1 ? " (verified)" : " (unverified)");
  if (row.does_not_fit >= 0) text += fmt::format(", {} does not", row.does_not_fit);
  text += fmt::format("; {} trial{}", row.trials, row.trials == 1 ? "" : "s");
  const std::string message = get_fixed(row.message);
  if (row.fits < 0 && !message.empty()) text += ": " + message;
  return text;
}

}  // namespace memsweep::search
