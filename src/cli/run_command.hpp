#pragma once
// `memsweep run SWEEP.toml -o results.h5`: the sweep as one MPI job (or one
// process). The only place besides the scheduler that touches MPI: it starts
// the session, agrees on the sweep and the file with every rank, and wires
// the scheduler to the trainer (workers) and the results file (rank 0).

#include "memsweep/sweep.hpp"

#include <CLI/CLI.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::cli {

// --threads: at most this many per rank. More than any node memsweep runs
// on has CPUs (the largest have a few hundred hardware threads); a number
// past it is a typo (--threads 99999999 used to start as asked, each rank's
// OpenMP pool and a program's {threads} then taking it as given).
inline constexpr int kMaxThreads = 4096;

struct RunOptions {
  std::string sweep_file;
  std::string output;  // default: the sweep file's stem + ".h5" (+ ".LABEL.h5" for a part), in the working directory
  std::optional<std::string> split_by;  // --split-by FIELD: run one part of the sweep (sweep_split.hpp) ...
  std::optional<int> part;              // ... --part K, from 0
  bool resume = false;
  bool force = false;
  int retry_killed = 0;
  std::optional<std::string> retry;  // --retry STATUS[,STATUS...]
  bool retry_failed = false;         // --retry-failed: --retry failed
  bool allow_changed_options = false;
  // --lost-cause: what ended the previous start, as the job script knows it
  // (rank_lost or node_lost), recorded for the attempts it lost.
  std::string lost_cause = "rank_lost";
  // Unset: a resume takes the value the file's last run measured with, a
  // new file the default (run_record.hpp).
  std::optional<std::string> mem_budget;      // as written; parsed with parse_byte_size, or "none"
  std::optional<std::string> trial_timeout;   // as written; parsed with parse_duration, or "none"
  std::optional<std::string> counter_source;  // --counter-source: auto, papi or kernel
  std::optional<std::string> data_dir;
  std::optional<int> threads;
  std::optional<double> flush_seconds;
  std::optional<std::string> worker_silence;  // as written; parsed with parse_duration
  bool no_swmr = false;
  bool quiet = false;
  bool verbose = false;
  std::optional<std::size_t> max_train_examples;
  std::optional<std::size_t> max_test_examples;
  std::vector<std::string> command_line;  // set by main, for the results file
};

void add_run_command(CLI::App& app, RunOptions& options);

int run_run_command(const RunOptions& options);

}  // namespace memsweep::cli
