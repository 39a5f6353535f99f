#pragma once
// `memsweep summary results.h5 [more.h5 ...]`: prints format_summary()
// (memsweep/summary_text.hpp) of the files.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct SummaryOptions {
  std::vector<std::string> results_files;
};

void add_summary_command(CLI::App& app, SummaryOptions& options);

int run_summary_command(const SummaryOptions& options);

}  // namespace memsweep::cli
