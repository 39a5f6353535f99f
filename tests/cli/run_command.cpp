#include "cli/run_command.hpp"

#include "support/background_process.hpp"
#include "support/temp_dir.hpp"

namespace memsweep::testing {

CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir,
                          const std::map<std::string, std::string>& environment) {
  // Output goes to files rather than pipes so a chatty child cannot block on
  // a full pipe while we wait for it.
  const TempDir capture;
  BackgroundProcess process(argv, capture.path(), environment, working_dir);
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

CommandResult run_memsweep(const std::vector<std::string>& args, const std::string& working_dir) {
  std::vector<std::string> argv{MEMSWEEP_EXECUTABLE};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_command(argv, working_dir);
}

}  // namespace memsweep::testing
