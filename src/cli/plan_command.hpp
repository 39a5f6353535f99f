#pragma once
// `memsweep plan SWEEP.toml`: the expanded trials as a table, without MPI.

#include "memsweep/config.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

namespace memsweep::cli {

struct PlanOptions {
  std::string sweep_file;
};

void add_plan_command(CLI::App& app, PlanOptions& options);

// The table and its header line, as `plan` prints it.
std::string format_plan(const SweepSpec& sweep);

int run_plan_command(const PlanOptions& options);

}  // namespace memsweep::cli
