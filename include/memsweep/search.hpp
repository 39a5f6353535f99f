#pragma once
// The search for the largest value along an axis that trains within a
// memory limit (docs/search.md), as pure functions: what a finished trial
// says about the limit, and which values to try next given every result
// so far. Rank 0's scheduler (src/search/board.*) asks them after
// each result; so does a resume, replaying the file's rows, and the tests,
// on synthetic peak curves. Nothing here depends on the order results
// came in: the state is a function of the set of finished probes.

#include "memsweep/results.hpp"
#include "memsweep/search_spec.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace memsweep {

// What one finished trial says about its value.
enum class ProbeOutcome {
  fits,          // ended ok, its peak within the limit
  does_not_fit,  // the OOM killer under the limit, over_budget, a program's own out-of-memory, or ok past the limit
  failed,        // anything else (failed for another reason, diverged, timeout): ends the search
  retry          // not a result (interrupted, killed with its rank): the same trial runs again
};

// A trial row of a search (row.search >= 0) judged against its limit
// (row.search_limit).
ProbeOutcome probe_outcome(const TrialRow& row);

struct ProbeResult {
  std::int64_t value = 0;
  bool full = false;  // trained the configuration's own epochs: a fit is verified
  ProbeOutcome outcome = ProbeOutcome::fits;
  double peak_bytes = -1.0;  // the trial's peak (rss_peak) where it fits; -1: not known
  double seconds = 0.0;      // its wall time
  // The row's status (nullopt: a status this memsweep does not know) and
  // message, for `failed`.
  std::optional<TrialStatus> status;
  std::string message;
};

// peak(x) = a + b·x, in bytes.
struct PeakLine {
  double a = 0.0;
  double b = 0.0;
};

// One search: its configuration's [search] at one limit.
struct SearchSettings {
  std::int64_t low = 1;
  std::int64_t high = 1;
  double limit_bytes = 0.0;
  double resolution = 0.02;
  int max_trials = 12;
  bool verify = true;
  // Probes already train the configuration's own epochs (probe_epochs >=
  // epochs, or the axis is epochs): every fit is a verified one.
  bool probes_are_full = false;
  SearchStrategy strategy = SearchStrategy::model;
  // The estimate's slope along the axis (bytes per unit), where memsweep
  // has one (built-in trials): model's prediction before two points fit.
  std::optional<double> estimated_slope;
};

SearchSettings search_settings(const SearchSpec& spec, std::size_t limit_index, bool probes_are_full);

// A value to train next: a probe (probe_epochs), or the answer's
// verification (full).
struct NextProbe {
  std::int64_t value = 0;
  bool full = false;
  auto operator<=>(const NextProbe&) const = default;
};

enum class SearchState { running, found, below_range, above_range, stopped, failed };
std::string_view search_state_name(SearchState state);  // search_status names; "running"

// Where a search stands, from its finished probes.
struct SearchStanding {
  SearchState state = SearchState::running;
  std::optional<std::int64_t> fits;  // largest value that fit (verified, when verify); the answer
  bool fits_verified = false;
  std::optional<std::int64_t> does_not_fit;  // smallest value that did not fit
  std::optional<PeakLine> fitted;            // least squares on the fits' peaks (>= 2 distinct values)
  int trials = 0;                            // finished probes (retry outcomes left out)
  std::string message;                       // why it failed or stopped; what the answer is
};

struct SearchStep {
  SearchStanding standing;
  std::vector<NextProbe> next;  // empty: wait for the running ones (or done, when standing.state != running)
};

// The search's standing and up to `wanted` new values to train, none of
// them in `running` nor already finished. A search is done (state !=
// running) only when nothing of it runs. `wanted` > 1 (free workers, one
// search) asks for a k-section of the bracket.
SearchStep next_probes(const SearchSettings& settings, std::span<const ProbeResult> finished,
                       std::span<const NextProbe> running, int wanted);

// ---- resume ---------------------------------------------------------------

// What a results file already holds of a sweep's searches: a search's
// state is a function of its probes' rows, so a resume replays it.
struct SearchHistory {
  std::vector<TrialRow> rows;  // the file's rows of probes (search >= 0), in file order
  // By trial id: one past the largest attempt of a probe in the rows or
  // in /samples (an attempt lost with its rank), its next attempt's number.
  std::unordered_map<std::string, std::int32_t> next_attempt;
  std::set<std::int32_t> written;  // searches that have their row in /searches
};

SearchHistory search_history(const std::vector<TrialRow>& rows, const std::vector<SeriesSummary>& series,
                             const std::vector<SearchRow>& searches);

}  // namespace memsweep
