#pragma once
// `memsweep summary results.h5`: per dataset, the trials in the source
// paper's table layout (hyperparameters, then the average system memory used
// as the paper computed it) beside the per-process figures, then failures.

#include "memsweep/store.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace memsweep::cli {

struct SummaryOptions {
  std::string results_file;
};

void add_summary_command(CLI::App& app, SummaryOptions& options);

// The whole summary as `summary` prints it.
std::string format_summary(const FileHeader& header, const std::vector<TrialRow>& rows);

int run_summary_command(const SummaryOptions& options);

}  // namespace memsweep::cli
