#pragma once
// The summary of results files as text: per dataset, the trials in the source
// paper's table layout (hyperparameters, then the average system memory used
// as the paper computed it) beside the per-process figures, then failures.
// `memsweep summary` prints it; `memsweep watch` shows it once a sweep ended.

#include "memsweep/results.hpp"

#include <string>
#include <vector>

namespace memsweep {

// One results file as the summary reads it.
struct SummaryInput {
  std::string path;  // as given
  FileHeader header;
  std::vector<TrialRow> rows;
  std::vector<RunRow> runs;         // empty: the command that continues the sweep is not shown
  std::vector<SearchRow> searches;  // /searches (schema 6): a capacity table when there are any
};

// The whole summary. A file that holds one part of a sweep
// (FileHeader::part) counts only that part's trials as planned or not run
// yet. Several files: each file's header lines, their totals, then one table
// per dataset across the files (with a `file` column), in the sweep's order
// when every file holds the same sweep text (an array job's parts). Files
// with searches get a capacity table: each search's answer.
std::string format_summary(const std::vector<SummaryInput>& files);

}  // namespace memsweep
