#include "cli/run_command.hpp"

#include "support/temp_dir.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace memsweep::testing {
namespace {

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const std::string& working_dir,
                          const std::map<std::string, std::string>& environment) {
  // Output goes to files rather than pipes so a chatty child cannot block on
  // a full pipe while we wait for it.
  const TempDir capture;
  const std::string out_file = (capture.path() / "out").string();
  const std::string err_file = (capture.path() / "err").string();
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = ::open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || null < 0) ::_exit(126);
    ::dup2(null, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    if (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0) ::_exit(126);
    for (const auto& [name, value] : environment) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  CommandResult result;
  result.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = slurp(out_file);
  result.err = slurp(err_file);
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
