#pragma once
// The summary's program metrics section: for each trial attempt whose
// program printed a [programs] metric, the last value of each
// (docs/sweep-file.md, "Metrics"; the values per epoch are in /metrics,
// `memsweep export --table metrics`).

#include "memsweep/results.hpp"

#include <string>
#include <vector>

namespace memsweep {

// One results file's rows, as the section needs them.
struct MetricsInput {
  std::string path;  // as given: the `file` column when there are several
  std::vector<TrialRow> trials;
  std::vector<MetricRow> metrics;  // /metrics, in file order
};

// Empty when no file has a metric row.
std::string metrics_section(const std::vector<MetricsInput>& files);

// An attempt's last value of each metric, by name: its last row of the
// metric in file order (rows of one attempt come in the order matched).
struct FinalMetrics {
  std::string trial_id;
  std::int32_t attempt = 0;
  std::int32_t last_epoch = 0;     // the largest epoch of its rows
  std::vector<std::string> names;  // sorted
  std::vector<double> values;      // as names
};
std::vector<FinalMetrics> final_metrics(const std::vector<MetricRow>& rows);

}  // namespace memsweep
