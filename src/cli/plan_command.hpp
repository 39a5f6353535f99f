#pragma once
// `memsweep plan SWEEP.toml`: the expanded trials as a table, without MPI;
// with --split-by, the parts an array job runs and the file each writes;
// then the real datasets the trials need, found where `memsweep run` would
// look or not (exit 2 when one is missing or malformed).

#include "memsweep/config.hpp"
#include "memsweep/sweep_split.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::cli {

struct PlanOptions {
  std::string sweep_file;
  std::optional<std::string> split_by;  // --split-by FIELD
  std::string output;                   // -o, as `memsweep run` takes it
  bool outputs = false;                 // --outputs: only the results file paths
  std::optional<std::string> data_dir;  // --data-dir, as `memsweep run` takes it
  bool all = false;                     // --all: every trial's line, however many
};

// A sweep of more trials than this is shown by its first and last trials
// and its sections' values, unless --all.
inline constexpr std::size_t kPlanListedTrials = 1000;
inline constexpr std::size_t kPlanShownAtEachEnd = 10;

void add_plan_command(CLI::App& app, PlanOptions& options);

// A part of the sweep and the results file `memsweep run --split-by ... --part K` writes for it.
struct PlannedPart {
  SweepPart part;
  std::string results;
};

// The header line, the parts (when split) and the trials' table, as `plan`
// prints it; with parts, the trials' table has a `part` column.
void write_plan(std::FILE* out, const SweepSpec& sweep, const std::vector<PlannedPart>& parts = {}, bool all = false);

int run_plan_command(const PlanOptions& options);

}  // namespace memsweep::cli
