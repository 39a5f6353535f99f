// What one finished trial of a search says about its value and the limit
// (docs/search.md): the search's only reading of a trial row.

#include "memsweep/results.hpp"
#include "memsweep/search.hpp"

#include <optional>
#include <string>

namespace memsweep {

ProbeOutcome probe_outcome(const TrialRow& row) {
  const std::optional<TrialStatus> status = parse_status(get_fixed(row.status));
  if (!status) return ProbeOutcome::failed;
  if (*status == TrialStatus::interrupted) return ProbeOutcome::retry;
  // The program's own out-of-memory (a GPU's included) is memory, whatever
  // status the trial ended with.
  if (row.reported_oom == 1) return ProbeOutcome::does_not_fit;
  const bool oom_killer = row.oom_killed == 1 || get_fixed(row.end_cause) == end_cause::kOom;
  const bool gpu = get_fixed(row.search_device) == "gpu";
  switch (*status) {
    case TrialStatus::ok:
      // Within a GPU limit: the tree's GPU peak, its contexts included,
      // measured and no more than the limit (the whole device's: gpu_limit).
      if (gpu)
        return row.gpu_peak < 0 || row.gpu_limit < 0 ? ProbeOutcome::failed
               : row.gpu_peak <= row.gpu_limit       ? ProbeOutcome::fits
                                                     : ProbeOutcome::does_not_fit;
      // rss_peak -1: not measured, so nothing says it passed the limit.
      return row.search_limit < 0 || row.rss_peak <= row.search_limit ? ProbeOutcome::fits : ProbeOutcome::does_not_fit;
    case TrialStatus::over_budget: return ProbeOutcome::does_not_fit;
    case TrialStatus::killed:
      // Killed with its rank, stopped or by a stray signal: not a result.
      return oom_killer ? ProbeOutcome::does_not_fit : ProbeOutcome::retry;
    case TrialStatus::failed: return oom_killer ? ProbeOutcome::does_not_fit : ProbeOutcome::failed;
    default: return ProbeOutcome::failed;  // diverged, timeout
  }
}

}  // namespace memsweep
