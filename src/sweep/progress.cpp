// Progress lines on rank 0's stderr, e.g.
//   [ 3/40] 5e1f0c2a9b7d ok 12.4s peak 1.50 GiB rank 2 ETA 3m20s
// One line per finished trial, flushed at once so that a job's log follows
// the sweep.

#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace memsweep {
namespace {

// A trial of a reporter made without costs: unnamed, all alike.
TrialCost alike_trial() {
  TrialCost cost;
  cost.work = 1.0;
  return cost;
}

}  // namespace

ProgressReporter::ProgressReporter(std::ostream& out, Verbosity verbosity, std::vector<TrialCost> pending, int workers)
    : out_(out),
      verbosity_(verbosity),
      total_(pending.size()),
      workers_(std::max(workers, 1)),
      waiting_(std::move(pending)) {}

ProgressReporter::ProgressReporter(std::ostream& out, Verbosity verbosity, WaitingCosts pending, int workers,
                                   ExampleLimits limits)
    : ProgressReporter(out, verbosity, std::move(pending.first), workers) {
  beyond_ = pending.beyond;
  beyond_sample_ = std::move(pending.beyond_sample);
  total_ += beyond_;
  limits_ = limits;
}

ProgressReporter::ProgressReporter(std::ostream& out, Verbosity verbosity, std::size_t total_trials, int workers)
    : ProgressReporter(out, verbosity, std::vector<TrialCost>(total_trials, alike_trial()), workers) {}

TrialCost ProgressReporter::take_waiting(const TrialSpec* trial, const std::string& id) {
  // Its own cost, or one of the anonymous ones of a reporter made without costs.
  const auto first = waiting_.begin() + static_cast<std::ptrdiff_t>(waiting_front_);
  auto waiting = std::find_if(first, waiting_.end(), [&](const TrialCost& c) { return c.trial_id == id; });
  if (waiting == waiting_.end())
    waiting = std::find_if(first, waiting_.end(), [](const TrialCost& c) { return c.trial_id.empty(); });
  if (waiting == waiting_.end() && beyond_ > 0 && trial != nullptr) {
    --beyond_;
    return trial_cost(*trial, limits_);
  }
  if (waiting == waiting_.end()) {
    TrialCost unplanned;  // no work known: not fitted
    unplanned.trial_id = id;
    unplanned.work = 0.0;
    return unplanned;
  }
  TrialCost cost = std::move(*waiting);
  if (waiting == first)
    ++waiting_front_;
  else
    waiting_.erase(waiting);
  return cost;
}

void ProgressReporter::trial_started(const TrialSpec& trial, int attempt, int rank) {
  running_[trial.id] = Running{take_waiting(&trial, trial.id), Clock::now()};
  if (verbosity_ != Verbosity::verbose) return;
  out_ << fmt::format("start {} attempt {} on rank {}: {}\n", trial.id, attempt, rank, trial.summary_text())
       << std::flush;
}

void ProgressReporter::trial_finished(const TrialRow& row) {
  ++finished_;
  const std::string id = get_fixed(row.trial_id);
  if (const auto running = running_.find(id); running != running_.end()) {
    finished_trials_.push_back(finished_trial(std::move(running->second.cost), row));
    running_.erase(running);
  } else {
    finished_trials_.push_back(finished_trial(take_waiting(nullptr, id), row));
  }
  const std::string status = get_fixed(row.status);
  // Every other status (failed, diverged, over_budget, timeout, interrupted,
  // killed) is shown with its message, even when quiet.
  const bool ok = status == status_name(TrialStatus::ok);
  if (verbosity_ == Verbosity::quiet && ok) return;

  const int width = static_cast<int>(std::to_string(std::max(total_, finished_)).size());
  std::string line = fmt::format("[{:>{}}/{}] {} {} {:.1f}s", finished_, width, total_, get_fixed(row.trial_id), status,
                                 row.wall_seconds);
  line += row.rss_peak >= 0 ? " peak " + format_byte_size(static_cast<std::uint64_t>(row.rss_peak)) : " peak -";
  line += fmt::format(" rank {}", row.rank);
  if (finished_ >= total_) {
    line += " done in " + format_duration(std::chrono::duration<double>(Clock::now() - start_).count());
  } else {
    const std::optional<std::chrono::seconds> left = eta();
    line += " ETA " + eta_text(left ? std::optional<double>(static_cast<double>(left->count())) : std::nullopt);
  }
  if (!ok) {
    // The row's message column: the message's first bytes, enough for a line.
    const std::string message = one_line_message(get_fixed(row.message), kMessageChars);
    if (!message.empty()) line += ": " + message;
  }
  out_ << line << '\n' << std::flush;
}

void ProgressReporter::trials_skipped(std::size_t count) {
  total_ -= std::min(count, total_ - std::min(total_, finished_));
  beyond_ -= std::min(count, beyond_);
}

void ProgressReporter::note(const std::string& text) {
  if (verbosity_ == Verbosity::quiet) return;
  out_ << text << '\n' << std::flush;
}

std::optional<std::chrono::seconds> ProgressReporter::eta() const {
  const Clock::time_point now = Clock::now();
  std::vector<RunningTrial> running;
  for (const auto& [id, trial] : running_)
    running.push_back({trial.cost, std::chrono::duration<double>(now - trial.start).count()});
  const std::optional<double> seconds = eta_.seconds_left(
      finished_trials_, running, std::span<const TrialCost>(waiting_).subspan(waiting_front_), workers_,
      std::chrono::duration<double>(now.time_since_epoch()).count(), WaitingTail{beyond_, beyond_sample_});
  if (!seconds || std::isnan(*seconds)) return std::nullopt;
  // llround past 2^63 has no answer; an ETA past ten years is only "long".
  // Rounded up: a sweep with work left has not 0 s left.
  return std::chrono::seconds(static_cast<long long>(std::ceil(std::clamp(*seconds, 0.0, kMaxDurationSeconds))));
}

}  // namespace memsweep
