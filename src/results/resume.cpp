// Which trials a resumed sweep still runs, from what the results file holds:
// its trial rows and, for attempts lost with their rank or with rank 0
// before a row was written, the series of samples they left behind. A lost
// rank, node or link is no result of the trial's: such an attempt is
// interrupted and runs again, unless it was the second in a row.

#include "memsweep/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace memsweep {
namespace {

// What the file says about one trial of the sweep.
struct TrialHistory {
  std::set<std::int32_t> attempts_with_row;
  std::int32_t max_attempt = -1;
  bool has_final = false;
  std::size_t killed = 0;
  std::optional<TrialStatus> last_status;  // of the row with the largest attempt
  std::int32_t last_row_attempt = -1;
  std::map<std::int32_t, bool> lost_by_attempt;  // whether each attempt with a row was lost with its rank
};

void add_row(TrialHistory& trial, std::int32_t attempt, std::optional<TrialStatus> status, bool lost) {
  trial.attempts_with_row.insert(attempt);
  trial.max_attempt = std::max(trial.max_attempt, attempt);
  if (status && is_final(*status)) trial.has_final = true;
  if (status == TrialStatus::killed) ++trial.killed;
  if (attempt >= trial.last_row_attempt) {
    trial.last_row_attempt = attempt;
    trial.last_status = status;
  }
  trial.lost_by_attempt[attempt] = lost;
}

// Whether the latest attempt before `attempt` that has a row was lost with
// its rank too.
bool previous_attempt_lost(const TrialHistory& trial, std::int32_t attempt) {
  const auto after = trial.lost_by_attempt.lower_bound(attempt);
  return after != trial.lost_by_attempt.begin() && std::prev(after)->second;
}

TrialRecord lost_row(const TrialSpec& trial, const SeriesSummary& series, int run, LostAttempts lost,
                     std::string_view cause, bool lost_before) {
  if (lost_before)
    return row_from_series(
        trial, series, run, TrialStatus::killed, cause,
        fmt::format("its rank died both times it ran: the trial itself is the likely cause (e.g. the node's own OOM "
                    "killer); run it again with --retry-killed; {}",
                    series_text(series)));
  if (lost == LostAttempts::writer_died)
    return row_from_series(
        trial, series, run, TrialStatus::interrupted, cause,
        fmt::format("interrupted: rank 0 died while rank {} ran the trial, whose process was not seen to fail; {}",
                    series.rank, series_text(series)));
  return row_from_series(
      trial, series, run, TrialStatus::interrupted, cause,
      fmt::format("interrupted: rank {} was lost during the trial ({}): no result, it runs again; {}", series.rank,
                  cause == end_cause::kNodeLost ? "a node of the job was lost"
                                                : "it died, or its node, or the launcher ended it",
                  series_text(series)));
}

}  // namespace

bool lost_with_its_rank(std::string_view status, std::string_view cause) {
  return status == status_name(TrialStatus::interrupted) &&
         (cause == end_cause::kRankLost || cause == end_cause::kNodeLost || cause == end_cause::kSilent);
}

ResumePlan plan_resume(const SweepTrials& trials, const std::vector<TrialRow>& rows,
                       const std::vector<SeriesSummary>& series, const RetryPolicy& retry, int run, LostAttempts lost,
                       std::string_view lost_cause) {
  // Keyed by trial id, so that what is kept grows with what ran, not with
  // the sweep: the sweep itself is walked once, a trial made at a time.
  std::unordered_map<std::string, TrialHistory> history;
  std::unordered_map<std::string, std::size_t> rows_of;
  for (const TrialRow& row : rows) {
    const std::string id = get_fixed(row.trial_id);
    // An unreadable status is neither final nor killed: the trial runs again.
    const std::string status = get_fixed(row.status);
    add_row(history[id], row.attempt, parse_status(status), lost_with_its_rank(status, get_fixed(row.end_cause)));
    ++rows_of[id];
  }
  // Attempts that streamed samples but never sent a row: their rank died,
  // or rank 0 did. By attempt, so the rows appended follow the sweep's
  // order, then the attempt's, whatever order the samples table holds them in.
  std::unordered_map<std::string, std::map<std::int32_t, const SeriesSummary*>> orphans;
  for (const SeriesSummary& summary : series) {
    const auto found = history.find(summary.trial_id);
    if (found != history.end() && found->second.attempts_with_row.contains(summary.attempt)) continue;
    orphans[summary.trial_id].emplace(summary.attempt, &summary);
  }

  ResumePlan plan;
  const std::size_t killed_limit = retry.killed < 0 ? 0 : static_cast<std::size_t>(retry.killed);
  std::unordered_set<std::string> seen;  // ids the file knows, met in the walk
  std::unordered_set<std::string> done;
  std::unordered_map<std::string, std::int32_t> next_attempt;
  std::size_t count = 0;
  for (std::size_t position = 0; position < trials.size(); ++position) {
    const std::optional<TrialSpec> made = trials.made(position);
    if (!made) continue;  // the scheduler skips it, and says why
    const TrialSpec& trial = *made;
    if (!history.contains(trial.id) && !orphans.contains(trial.id)) {
      ++count;
      continue;
    }
    if (!seen.insert(trial.id).second) continue;  // a duplicate of a large sweep: decided at its first place
    TrialHistory& past = history[trial.id];
    if (const auto lost_attempts = orphans.find(trial.id); lost_attempts != orphans.end()) {
      for (const auto& [attempt, summary] : lost_attempts->second) {
        past.max_attempt = std::max(past.max_attempt, attempt);
        plan.lost_rows.push_back(
            lost_row(trial, *summary, run, lost, lost_cause, previous_attempt_lost(past, attempt)));
        const TrialRow& row = plan.lost_rows.back().row;
        const std::string status = get_fixed(row.status);
        add_row(past, attempt, parse_status(status), lost_with_its_rank(status, get_fixed(row.end_cause)));
      }
    }
    if (past.last_status && retry.statuses.contains(*past.last_status)) {
      ++plan.retried[std::string(status_name(*past.last_status))];
    } else if (past.has_final) {
      ++plan.already_final;
      done.insert(trial.id);
      continue;
    } else if (past.killed > killed_limit) {
      ++plan.killed_not_retried;
      done.insert(trial.id);
      continue;
    }
    next_attempt.emplace(trial.id, past.max_attempt + 1);
    ++count;
  }
  for (const auto& [id, count_of_rows] : rows_of)
    if (!seen.contains(id)) plan.unknown_rows += count_of_rows;
  plan.pending = PendingTrials(std::move(done), std::move(next_attempt), count);
  return plan;
}

PendingTrials::PendingTrials(std::vector<PendingTrial> listed) : listed_(std::move(listed)) {}

PendingTrials::PendingTrials(std::unordered_set<std::string> done,
                             std::unordered_map<std::string, std::int32_t> next_attempt, std::size_t count)
    : done_(std::move(done)), next_attempt_(std::move(next_attempt)), count_(count) {}

std::int32_t PendingTrials::attempt(const std::string& id) const {
  const auto found = next_attempt_.find(id);
  return found == next_attempt_.end() ? 0 : found->second;
}

std::size_t PendingTrials::count(std::size_t sweep_trials) const {
  if (listed_) return listed_->size();
  return count_.value_or(sweep_trials);
}

std::vector<PendingTrial> PendingTrials::expand(const SweepTrials& trials) const {
  if (listed_) return *listed_;
  std::vector<PendingTrial> attempts;
  std::unordered_set<std::string> handed;
  for (std::size_t position = 0; position < trials.size(); ++position) {
    const TrialSpec trial = trials[position];
    if (!runs(trial.id) || !handed.insert(trial.id).second) continue;
    attempts.push_back({position, attempt(trial.id)});
  }
  return attempts;
}

}  // namespace memsweep
