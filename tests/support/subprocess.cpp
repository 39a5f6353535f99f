#include "support/subprocess.hpp"

#include "support/background_process.hpp"
#include "support/temp_dir.hpp"

namespace memsweep::testing {

CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir,
                          const std::map<std::string, std::string>& environment, int signal_on_test_death) {
  // Output goes to files rather than pipes so a chatty child cannot block on
  // a full pipe while we wait for it.
  const TempDir capture;
  BackgroundProcess process(argv, capture.path(), environment, working_dir, signal_on_test_death);
  const int status = process.wait();
  CommandResult result;
  result.exit_status = process.ended_by_signal() ? -1 : status;
  result.out = process.out();
  result.err = process.err();
  return result;
}

std::vector<std::string> with_file(const std::vector<std::string>& args, const std::string& file) {
  std::vector<std::string> out;
  for (const std::string& arg : args) out.push_back(arg == "@" ? file : arg);
  return out;
}

std::vector<std::string> memsweep_argv(const std::vector<std::string>& args) {
  std::vector<std::string> argv{MEMSWEEP_EXECUTABLE};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

std::vector<std::string> on_ranks(const std::string& mpiexec, int ranks, const std::vector<std::string>& argv) {
  std::vector<std::string> launched{mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", std::to_string(ranks)};
  launched.insert(launched.end(), argv.begin(), argv.end());
  return launched;
}

CommandResult run_memsweep(const std::vector<std::string>& args, const std::string& working_dir) {
  return run_command(memsweep_argv(args), working_dir);
}

}  // namespace memsweep::testing
