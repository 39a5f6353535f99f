#pragma once
// `memsweep estimate`: a trial's predicted memory, part by part, for the
// trials of a sweep file or one trial described on the command line
// (docs/estimate.md).

#include "memsweep/config.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::cli {

struct EstimateOptions {
  std::string sweep_file;  // empty: the trial is described by the options below
  std::string trial_id;    // with a sweep file: only this trial
  // A trial on the command line; what is not given keeps the sweep file's default.
  std::optional<std::string> dataset, model, optimizer;
  // --hidden, --channels as given ("128,64"): split here, so that an empty
  // item ("8,,8") is refused rather than dropped.
  std::optional<std::string> hidden, channels;
  std::optional<int> batch, epochs;
  // The memory plan to predict: a field of the trial described, or, with a
  // sweep file, every trial's plan replaced (the ids are made again).
  std::optional<std::string> memory_plan;
  std::optional<int> recompute_every;
  std::string rule = "full";  // full | qa
  // --calibrate: measure the trial process's cost here instead (runs of each trial).
  bool calibrate = false;
  // --if-uncalibrated: only when this CPU model has no calibration yet (a
  // first run on a machine: ci/run-default.sh).
  bool only_if_uncalibrated = false;
  int calibration_repeats = 5;
  // Split sizes; default: the dataset's published sizes.
  std::optional<std::size_t> train_examples, test_examples;
};

void add_estimate_command(CLI::App& app, EstimateOptions& options);

// The trial the command-line options describe, checked by the sweep file's
// own parser (a one-trial sweep is written and parsed), so every check and
// message is the same; errors name the option (--batch, --hidden, ...).
TrialSpec trial_from_options(const EstimateOptions& options);

// One trial's report as `estimate` prints it: a heading, the table of parts
// and the total, and (full mode) the resident dataset outside the total.
// With `process_cost` (full mode), the trial process is a part of the total.
std::string format_trial_estimate(const TrialSpec& trial, ExampleCounts counts, bool rule,
                                  const std::optional<TrialProcessCost>& process_cost = std::nullopt);

int run_estimate_command(const EstimateOptions& options);

}  // namespace memsweep::cli
