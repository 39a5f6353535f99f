#pragma once
// Runs a program as a user would (no shell) and captures what it printed.

#include <map>
#include <string>
#include <vector>

namespace memsweep::testing {

// What the tests add to the environment of the memsweep processes they
// start: one OpenMP thread per rank, since ranks share this machine's two
// cores.
inline const std::map<std::string, std::string> kEnvironment{{"OMP_NUM_THREADS", "1"}};

struct CommandResult {
  int exit_status = -1;  // -1 if it did not exit normally
  std::string out;
  std::string err;
};

// `environment` entries are added to (or replace) the test's own environment.
// `signal_on_test_death`: sent to the program if this test process dies
// first (a ctest timeout), 0 for none.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir = "",
                          const std::map<std::string, std::string>& environment = {}, int signal_on_test_death = 0);

// `args` with every "@" replaced by `file` (bad-input tables name the file
// they write as "@").
std::vector<std::string> with_file(const std::vector<std::string>& args, const std::string& file);

// The memsweep executable under test with `args`, as an argv.
std::vector<std::string> memsweep_argv(const std::vector<std::string>& args);

// `argv` started on `ranks` MPI ranks by `mpiexec`, as the tests run here:
// as root, and with more ranks than this machine's two cores.
std::vector<std::string> on_ranks(const std::string& mpiexec, int ranks, const std::vector<std::string>& argv);

// The memsweep executable under test, with `args`.
CommandResult run_memsweep(const std::vector<std::string>& args, const std::string& working_dir = "");

}  // namespace memsweep::testing
