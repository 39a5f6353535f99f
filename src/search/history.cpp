// What a results file holds of a sweep's searches, for a resume to replay.

#include "memsweep/search.hpp"

#include <algorithm>

namespace memsweep {

SearchHistory search_history(const std::vector<TrialRow>& rows, const std::vector<SeriesSummary>& series,
                             const std::vector<SearchRow>& searches) {
  SearchHistory history;
  const auto seen_attempt = [&](const std::string& id, std::int32_t attempt) {
    std::int32_t& next = history.next_attempt[id];
    next = std::max(next, attempt + 1);
  };
  for (const TrialRow& row : rows) {
    if (row.search < 0) continue;
    history.rows.push_back(row);
    seen_attempt(get_fixed(row.trial_id), row.attempt);
  }
  // An attempt lost with its rank left samples and no row: its probe runs
  // again under the next attempt number, so that the two series stay apart.
  for (const SeriesSummary& summary : series) seen_attempt(summary.trial_id, summary.attempt);
  for (const SearchRow& row : searches) history.written.insert(row.search);
  return history;
}

}  // namespace memsweep
