#pragma once
// What a run measured with, as its row of /runs records it (store.hpp
// RunRow), and the rules a resume follows with it:
//  - it reuses what the last run measured with unless told otherwise;
//  - it refuses an option that changes what a trial measures (the example
//    limits, the threads, the counters' source) and differs from the stored
//    one, unless --allow-changed-options, which /runs then records;
//  - a stopped sweep is continued by one command, built from the row
//    (the launcher with its rank count, and every option that matters).
// Pure functions: no MPI, no file.

#include "memsweep/store.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// Which of a run's options were given on its command line (the others take
// the stored run's values on a resume, the defaults on a new file).
struct GivenOptions {
  bool data_dir = false;
  bool max_train_examples = false;
  bool max_test_examples = false;
  bool threads = false;
  bool counter_source = false;
  bool mem_budget = false;
  bool trial_timeout = false;
  bool flush_interval = false;
};

// One option whose value differs between the stored run and this one.
struct OptionChange {
  std::string option;  // as on the command line: "--max-train-examples"
  std::string stored;  // the value the stored run used, as the option takes it
  std::string given;
  bool allowed = false;  // true: --allow-changed-options may let it differ
};

// `given` (this run's row with its options and defaults) with the options
// not given taken from `stored`, the last run's row.
RunRow reuse_stored_options(const RunRow& given, const RunRow& stored, const GivenOptions& which);

// The options that differ between `stored` and `resumed` and change what a
// trial measures. The counters' source is never allowed to differ: the
// file's columns stay opened from the sources that created them.
std::vector<OptionChange> measurement_changes(const RunRow& stored, const RunRow& resumed);

// "--threads 2 (run 0) -> 4; ...": for RunRow::changed_options.
std::string changes_text(const std::vector<OptionChange>& changes, int stored_run);

// The command that continues the run's sweep in the same file, as a shell
// would take it: the launcher with the run's rank count (Open MPI's mpirun
// with --allow-run-as-root for root and --oversubscribe for more ranks than
// `cpus`; srun; mpiexec when the launcher is not known), then memsweep run
// with the sweep, its part, -o, --resume and every option the run measured
// with.
struct CommandContext {
  bool as_root = false;
  unsigned cpus = 0;  // the node's CPUs; 0: unknown
};
std::string continue_command(const RunRow& run, const std::string& output, const CommandContext& context);

// `text` as one shell word: unchanged when it has nothing a shell would
// read, else in single quotes.
std::string shell_word(std::string_view text);

// The /runs launcher name for this process's environment: "mpirun" (Open
// MPI's), "srun", or empty (alone, or not known).
std::string launcher_from_environment();

}  // namespace memsweep
