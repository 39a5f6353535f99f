#pragma once
// `memsweep summary results.h5 [more.h5 ...]`: per dataset, the trials in the source
// paper's table layout (hyperparameters, then the average system memory used
// as the paper computed it) beside the per-process figures, then failures.

#include "memsweep/store.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct SummaryOptions {
  std::vector<std::string> results_files;
};

void add_summary_command(CLI::App& app, SummaryOptions& options);

// One results file as `summary` reads it.
struct SummaryInput {
  std::string path;  // as given
  FileHeader header;
  std::vector<TrialRow> rows;
  std::vector<RunRow> runs;  // empty: the command that continues the sweep is not shown
};

// The whole summary as `summary` prints it. A file that holds one part of a
// sweep (FileHeader::part) counts only that part's trials as planned or not
// run yet. Several files: each file's header lines, their totals, then one
// table per dataset across the files (with a `file` column), in the sweep's
// order when every file holds the same sweep text (an array job's parts).
std::string format_summary(const std::vector<SummaryInput>& files);

int run_summary_command(const SummaryOptions& options);

}  // namespace memsweep::cli
