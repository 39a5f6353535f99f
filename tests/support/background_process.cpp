#include "support/background_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "support/file_text.hpp"

namespace memsweep::testing {

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::filesystem::path& output_dir,
                                     const std::map<std::string, std::string>& environment,
                                     const std::filesystem::path& working_dir, int parent_death_signal)
    : out_file_(output_dir / "background.out"), err_file_(output_dir / "background.err") {
  // Emptied here, before the constructor returns, not by the child: a test
  // that starts a second program in the same folder would otherwise read the
  // first one's output until the child got round to truncating it (a killed
  // rank's test found the old run's finished trial and looked for a worker
  // of a run that had not started yet).
  const int out = ::open(out_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = ::open(err_file_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0 || err < 0) throw std::runtime_error("cannot create " + out_file_.string() + " or " + err_file_.string());
  pid_ = ::fork();
  if (pid_ < 0) {
    ::close(out);
    ::close(err);
    throw std::runtime_error("fork failed");
  }
  if (pid_ == 0) {
    if (parent_death_signal != 0 && ::prctl(PR_SET_PDEATHSIG, parent_death_signal) != 0) ::_exit(126);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null < 0) ::_exit(126);
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
  ::close(out);
  ::close(err);
}

BackgroundProcess::~BackgroundProcess() {
  if (reaped_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::string BackgroundProcess::out() const { return slurp(out_file_); }
std::string BackgroundProcess::err() const { return slurp(err_file_); }

bool BackgroundProcess::wait_for(const std::function<bool()>& condition, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

void BackgroundProcess::signal(int number) const {
  if (!reaped_) ::kill(pid_, number);
}

int BackgroundProcess::wait() {
  if (reaped_) return exit_status_;  // wait_until_ended() reaped it
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  reaped(status);
  return exit_status_;
}

void BackgroundProcess::reaped(int status) {
  reaped_ = true;
  ended_by_signal_ = WIFSIGNALED(status);
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t parent_of(pid_t pid) {
  // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces, so parse after the last ')'.
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  std::string state;
  pid_t ppid = 0;
  fields >> state >> ppid;
  return ppid;
}

std::map<pid_t, std::string> trial_processes_below(pid_t ancestor) {
  std::map<pid_t, std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::vector<std::string> argv;
    std::istringstream cmdline(slurp(entry.path() / "cmdline"));
    for (std::string arg; std::getline(cmdline, arg, '\0');) argv.push_back(arg);
    if (argv.size() != 3 || argv[1] != "trial") continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    for (pid_t up = parent_of(pid); up > 1; up = parent_of(up))
      if (up == ancestor) {
        found.emplace(pid, argv[2]);
        break;
      }
  }
  return found;
}

namespace {

// Processes (with their parent) whose environment has NAME=VALUE.
std::vector<std::pair<pid_t, pid_t>> processes_and_parents_with(const std::string& name, const std::string& value) {
  std::vector<std::pair<pid_t, pid_t>> found;
  const std::string wanted = name + "=" + value;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid_text = entry.path().filename().string();
    if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t ppid = parent_of(static_cast<pid_t>(std::stoi(pid_text)));
    if (ppid == 0) continue;
    const std::string environ = slurp(entry.path() / "environ");
    std::istringstream variables(environ);
    for (std::string variable; std::getline(variables, variable, '\0');)
      if (variable == wanted) found.emplace_back(static_cast<pid_t>(std::stoi(pid_text)), ppid);
  }
  return found;
}

}  // namespace

bool BackgroundProcess::wait_until_ended(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!reaped_) {
    int status = 0;
    const pid_t result = ::waitpid(pid_, &status, WNOHANG);
    if (result == pid_) {
      reaped(status);
    } else if (std::chrono::steady_clock::now() >= deadline) {
      break;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return reaped_;
}

std::vector<pid_t> child_processes_with_environment(pid_t parent, const std::string& name, const std::string& value) {
  std::vector<pid_t> found;
  for (const auto& [pid, ppid] : processes_and_parents_with(name, value))
    if (ppid == parent) found.push_back(pid);
  return found;
}

std::vector<pid_t> processes_with_environment(const std::string& name, const std::string& value) {
  std::vector<pid_t> found;
  for (const auto& [pid, ppid] : processes_and_parents_with(name, value)) found.push_back(pid);
  return found;
}

}  // namespace memsweep::testing
