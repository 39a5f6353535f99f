#include "runner/child_process.hpp"

#include "runner/trial_protocol.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <system_error>
#include <thread>

extern char** environ;

namespace memsweep::runner::detail {
namespace {

// Where the child reports a failure before exec: which step, and its errno.
enum class SpawnStep : int { parent_gone = 1, descriptors, start_gate, workdir, exec };

struct SpawnFailure {
  SpawnStep step;
  int error;
};

const char* step_text(SpawnStep step) {
  switch (step) {
    case SpawnStep::parent_gone: return "starting (the rank ended meanwhile)";
    case SpawnStep::descriptors: return "setting up its descriptors";
    case SpawnStep::start_gate: return "waiting to start (the rank closed its start gate)";
    case SpawnStep::workdir: return "entering its working folder";
    case SpawnStep::exec: return "exec";
  }
  return "starting";
}

// The first descriptor above the fixed ones, where the sources are parked
// before they are moved down, and the error pipe's end.
constexpr int kParkedFds = 10;
constexpr int kErrorFd = kDatasetFd + 1;
// Where closing one by one stops when close_range is missing.
constexpr rlim_t kMaxDescriptorsToClose = 1 << 16;

// Everything below runs in the forked child: async-signal-safe calls only,
// no allocation, no locks.
[[noreturn]] void fail_in_child(int error_fd, SpawnStep step) {
  const SpawnFailure failure{step, errno};
  [[maybe_unused]] const ssize_t ignored = ::write(error_fd, &failure, sizeof(failure));
  ::_exit(127);
}

// Moves `source` to `target` (or closes `target` when there is none).
bool place(int source, int target) {
  if (source < 0) return ::close(target) == 0 || errno == EBADF;
  return ::dup2(source, target) == target;
}

// A program's own process group, and the signals meant for the rank
// ignored; memsweep's trial process ignores every signal but its stop signal.
void set_group_and_signals(const SpawnRequest& request) {
  if (request.program) {
    ::setpgid(0, 0);
    // Its orphaned descendants (a daemonised helper, a worker whose parent
    // died) are reparented to it rather than to init: still in its tree,
    // where the rank finds them, measures them and kills them with the
    // trial. The attribute survives exec.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct sigaction standard {};
  standard.sa_handler = SIG_DFL;
  if (request.program) {
    for (const int signal_number : {SIGUSR1, SIGHUP}) ::sigaction(signal_number, &ignore, nullptr);
    for (const int signal_number : {SIGINT, SIGTERM, SIGPIPE, SIGUSR2}) ::sigaction(signal_number, &standard, nullptr);
  } else {
    // The rank stops trials through the pipe and SIGUSR2; signals meant
    // for the rank (Ctrl-C reaches the whole process group, scancel every
    // process of the job) must not end the trial behind its back.
    for (const int signal_number : {SIGINT, SIGTERM, SIGUSR1, SIGHUP, SIGPIPE})
      ::sigaction(signal_number, &ignore, nullptr);
    ::sigaction(SIGUSR2, &standard, nullptr);
  }
  // Ignored dispositions survive exec; handlers do not.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

[[noreturn]] void become_trial(const SpawnRequest& request, char* const* argv, char* const* envp, pid_t rank_pid,
                               int error_fd) {
  // Dies with the rank (the thread that forked: the runner's, which lives
  // as long as the sweep). The check after closes the window in which the
  // rank ended before the request was made.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != rank_pid) {
    errno = ESRCH;
    fail_in_child(error_fd, SpawnStep::parent_gone);
  }
  set_group_and_signals(request);

  // The fixed descriptors, moved through high numbers so that a source that
  // already sits at 3, 4 or 5 (or 1, 2) is not overwritten before it is moved.
  const std::array<int, 6> sources{request.control_fd, request.report_fd, request.dataset_fd,
                                   request.stdout_fd,  request.stderr_fd, request.start_gate_fd};
  std::array<int, 6> parked{-1, -1, -1, -1, -1, -1};
  for (std::size_t i = 0; i < sources.size(); ++i)
    if (sources[i] >= 0 && (parked[i] = ::fcntl(sources[i], F_DUPFD_CLOEXEC, kParkedFds)) < 0)
      fail_in_child(error_fd, SpawnStep::descriptors);
  const int error_parked = ::fcntl(error_fd, F_DUPFD_CLOEXEC, kParkedFds);
  if (error_parked < 0) fail_in_child(error_fd, SpawnStep::descriptors);
  error_fd = error_parked;
  if (::dup3(error_fd, kErrorFd, O_CLOEXEC) != kErrorFd) fail_in_child(error_fd, SpawnStep::descriptors);
  error_fd = kErrorFd;
  if (!place(parked[0], kControlFd) || !place(parked[1], kReportFd) || !place(parked[2], kDatasetFd))
    fail_in_child(error_fd, SpawnStep::descriptors);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) != STDIN_FILENO) fail_in_child(error_fd, SpawnStep::descriptors);
  if ((parked[3] >= 0 && ::dup2(parked[3], STDOUT_FILENO) != STDOUT_FILENO) ||
      (parked[4] >= 0 && ::dup2(parked[4], STDERR_FILENO) != STDERR_FILENO))
    fail_in_child(error_fd, SpawnStep::descriptors);
  if (parked[5] >= 0) {
    char go = 0;
    ssize_t got = 0;
    do {
      got = ::read(parked[5], &go, 1);
    } while (got < 0 && errno == EINTR);
    if (got != 1) fail_in_child(error_fd, SpawnStep::start_gate);
  }
  if (!request.workdir.empty() && ::chdir(request.workdir.c_str()) != 0) fail_in_child(error_fd, SpawnStep::workdir);
  // Nothing else of the rank's: not its MPI sockets, not the results file
  // (rank 0 alone both writes and trains). close_range needs Linux 5.9;
  // older kernels (RHEL 8's 4.18) get the loop, up to the descriptor limit.
  if (::syscall(SYS_close_range, static_cast<unsigned>(kErrorFd + 1), UINT_MAX, 0U) != 0) {
    rlimit limit{};
    const rlim_t highest = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                               ? std::min<rlim_t>(limit.rlim_cur, kMaxDescriptorsToClose)
                               : kMaxDescriptorsToClose;
    for (int fd = kErrorFd + 1; fd < static_cast<int>(highest); ++fd) ::close(fd);
  }

  ::execve(request.executable.c_str(), argv, envp);
  fail_in_child(error_fd, SpawnStep::exec);
}

}  // namespace

ProcessEnd process_end_from_wait_status(int wait_status) {
  ProcessEnd end;
  if (WIFEXITED(wait_status)) {
    end.exited = true;
    end.exit_status = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    end.signal = WTERMSIG(wait_status);
  }
  return end;
}

ChildProcess ChildProcess::spawn(const SpawnRequest& request) {
  // Built before the fork: the child may not allocate.
  std::vector<char*> argv;
  for (const std::string& arg : request.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& entry : request.environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  char* const* environment = request.environment.empty() ? environ : envp.data();

  Pipe errors = make_pipe("a trial process");
  const pid_t rank_pid = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::system_error(errno, std::generic_category(), "cannot fork a trial process");
  if (pid == 0) {
    errors.read_end.reset();
    become_trial(request, argv.data(), environment, rank_pid, errors.write_end.get());
  }
  errors.write_end.reset();
  ChildProcess child(pid, std::move(errors.read_end), request.executable);
  if (request.start_gate_fd < 0) child.confirm_exec();
  return child;
}

void ChildProcess::confirm_exec() {
  if (!exec_errors_) return;
  // The error pipe closes on exec (close-on-exec): nothing read means the
  // child is running its program.
  SpawnFailure failure{};
  ssize_t got = 0;
  do {
    got = ::read(exec_errors_.get(), &failure, sizeof(failure));
  } while (got < 0 && errno == EINTR);
  exec_errors_.reset();
  if (got == static_cast<ssize_t>(sizeof(failure))) {
    reap();
    throw std::system_error(
        failure.error, std::generic_category(),
        std::string("the trial process failed ") + step_text(failure.step) + " (" + executable_ + ")");
  }
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_),
      exec_errors_(std::move(other.exec_errors_)),
      executable_(std::move(other.executable_)),
      end_(other.end_) {
  other.pid_ = -1;
  other.end_.reset();
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || end_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

bool ChildProcess::send_signal(int signal_number) noexcept {
  if (pid_ <= 0 || end_) return false;
  return ::kill(pid_, signal_number) == 0;
}

namespace {

ProcessEnd end_with_usage(int wait_status, const rusage& usage) {
  ProcessEnd end = process_end_from_wait_status(wait_status);
  end.max_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
  return end;
}

}  // namespace

std::optional<ProcessEnd> ChildProcess::try_reap() {
  if (end_) return end_;
  int status = 0;
  rusage usage{};
  const pid_t got = ::wait4(pid_, &status, WNOHANG, &usage);
  if (got == pid_) end_ = end_with_usage(status, usage);
  return end_;
}

ProcessEnd ChildProcess::reap(std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!try_reap()) {
    if (std::chrono::steady_clock::now() >= deadline) {
      send_signal(SIGKILL);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return reap();
}

ProcessEnd ChildProcess::reap() {
  if (end_) return *end_;
  int status = 0;
  rusage usage{};
  pid_t got = 0;
  do {
    got = ::wait4(pid_, &status, 0, &usage);
  } while (got < 0 && errno == EINTR);
  if (got != pid_) throw std::system_error(errno, std::generic_category(), "waiting for a trial process");
  end_ = end_with_usage(status, usage);
  return *end_;
}

}  // namespace memsweep::runner::detail
