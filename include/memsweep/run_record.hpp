#pragma once
// The command that continues a stopped sweep, built from its run's row of
// /runs (store.hpp RunRow): the launcher with its rank count, and every
// option that matters. What a resume takes from the row and what it refuses
// to change are results_file_policy.hpp's. Pure functions: no MPI, no file.

#include "memsweep/results.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

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
