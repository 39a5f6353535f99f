#pragma once
// `memsweep watch results.h5`: a live view of a sweep while rank 0 writes its
// results file (docs/watch.md). Full-screen on a terminal; plain-text
// snapshots with --once or when the output is not a terminal.

#include <CLI/CLI.hpp>

#include <string>

namespace memsweep::cli {

struct WatchOptions {
  std::string results_file;
  double interval_seconds = 1.0;
  std::string trial_id;  // --trial: one trial large
  bool once = false;
  bool wait = false;  // for a file that is not there yet
};

void add_watch_command(CLI::App& app, WatchOptions& options);

int run_watch_command(const WatchOptions& options);

}  // namespace memsweep::cli
