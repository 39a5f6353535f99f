#include "cli/summary_command.hpp"

#include "cli/results_path.hpp"
#include "memsweep/error.hpp"
#include "memsweep/store.hpp"
#include "memsweep/summary_metrics.hpp"
#include "memsweep/summary_text.hpp"

#include <fmt/format.h>

#include <vector>

namespace memsweep::cli {

void add_summary_command(CLI::App& app, SummaryOptions& options) {
  add_results_command(
      app, "summary",
      "Tables of results files: memory per trial, per dataset (several files, e.g. an array job's parts: "
      "one table per dataset across them)",
      options.results_files, kResultsFilesHelp);
}

int run_summary_command(const SummaryOptions& options) {
  std::vector<SummaryInput> files;
  std::vector<MetricsInput> metrics;
  for (const std::string& path : options.results_files) {
    ResultReader reader(path);
    files.push_back({path, reader.header(), reader.trials(), reader.runs(), reader.searches()});
    metrics.push_back({path, files.back().rows, reader.metrics()});
  }
  // The programs' own figures after the memory tables (summary_metrics.hpp).
  fmt::print("{}{}", format_summary(files), metrics_section(metrics));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
