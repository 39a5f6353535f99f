// Which trials a resumed sweep still runs, from what the results file holds:
// its trial rows and, for attempts lost with their rank or with rank 0
// before a row was written, the series of samples they left behind.

#include "memsweep/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
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
};

void add_row(TrialHistory& trial, std::int32_t attempt, std::optional<TrialStatus> status) {
  trial.attempts_with_row.insert(attempt);
  trial.max_attempt = std::max(trial.max_attempt, attempt);
  if (status && is_final(*status)) trial.has_final = true;
  if (status == TrialStatus::killed) ++trial.killed;
  if (attempt >= trial.last_row_attempt) {
    trial.last_row_attempt = attempt;
    trial.last_status = status;
  }
}

TrialRecord lost_row(const TrialSpec& trial, const SeriesSummary& series, int run, LostAttempts lost) {
  if (lost == LostAttempts::rank_died)
    return row_from_series(
        trial, series, run, TrialStatus::killed,
        fmt::format("rank {} died during the trial, its trial process with it (no result was received); {}",
                    series.rank, series_text(series)));
  return row_from_series(
      trial, series, run, TrialStatus::interrupted,
      fmt::format("interrupted: rank 0 died while rank {} ran the trial, whose process was not seen to fail; {}",
                  series.rank, series_text(series)));
}

}  // namespace

ResumePlan plan_resume(const std::vector<TrialSpec>& trials, const std::vector<TrialRow>& rows,
                       const std::vector<SeriesSummary>& series, const RetryPolicy& retry, int run, LostAttempts lost) {
  std::unordered_map<std::string, std::size_t> index_of;
  for (std::size_t i = 0; i < trials.size(); ++i) index_of.emplace(trials[i].id, i);

  ResumePlan plan;
  std::vector<TrialHistory> history(trials.size());
  for (const TrialRow& row : rows) {
    const auto found = index_of.find(get_fixed(row.trial_id));
    if (found == index_of.end()) {
      ++plan.unknown_rows;
      continue;
    }
    // An unreadable status is neither final nor killed: the trial runs again.
    add_row(history[found->second], row.attempt, parse_status(get_fixed(row.status)));
  }

  // Attempts that streamed samples but never sent a row: their rank died,
  // or rank 0 did.
  // Ordered by the sweep's order, then attempt, so the rows appended are the
  // same whatever order the samples table holds them in.
  std::map<std::pair<std::size_t, std::int32_t>, const SeriesSummary*> orphans;
  for (const SeriesSummary& summary : series) {
    const auto found = index_of.find(summary.trial_id);
    if (found == index_of.end()) continue;  // another sweep's trial: nothing to build a row from
    TrialHistory& trial = history[found->second];
    trial.max_attempt = std::max(trial.max_attempt, summary.attempt);
    if (!trial.attempts_with_row.contains(summary.attempt))
      orphans.emplace(std::pair{found->second, summary.attempt}, &summary);
  }
  for (const auto& [key, summary] : orphans) {
    plan.lost_rows.push_back(lost_row(trials[key.first], *summary, run, lost));
    add_row(history[key.first], key.second, parse_status(get_fixed(plan.lost_rows.back().row.status)));
  }

  const std::size_t killed_limit = retry.killed < 0 ? 0 : static_cast<std::size_t>(retry.killed);
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const TrialHistory& trial = history[i];
    if (trial.last_status && retry.statuses.contains(*trial.last_status)) {
      ++plan.retried[std::string(status_name(*trial.last_status))];
      plan.pending.push_back(PendingTrial{i, trial.max_attempt + 1});
    } else if (trial.has_final) {
      ++plan.already_final;
    } else if (trial.killed > killed_limit) {
      ++plan.killed_not_retried;
    } else {
      plan.pending.push_back(PendingTrial{i, trial.max_attempt + 1});
    }
  }
  return plan;
}

}  // namespace memsweep
