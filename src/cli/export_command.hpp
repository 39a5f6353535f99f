#pragma once
// `memsweep export results.h5 [more.h5 ...] --table trials|epochs|samples
// --format csv|tsv [-o FILE [--force]]`: a table of results files as
// delimited text, units in the column names, for spreadsheets, R and pandas
// (docs/results-file.md, "Export").

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct ExportOptions {
  std::vector<std::string> results_files;
  std::string table = "trials";
  std::string format = "csv";
  std::string output;  // empty: stdout
  bool force = false;
};

void add_export_command(CLI::App& app, ExportOptions& options);

int run_export_command(const ExportOptions& options);

}  // namespace memsweep::cli
