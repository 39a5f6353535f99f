#include "runner/trial_guard.hpp"

#include "memsweep/training_runner.hpp"

#include "runner/cgroup_files.hpp"
#include "runner/trial_cgroup.hpp"
#include "sampler/process_tree.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace memsweep::runner::detail {
namespace {

using Clock = std::chrono::steady_clock;

// The guard's end of the socket, as the rank places it.
constexpr int kGuardFd = 3;
// How often the guard looks at a program's tree while the rank lives: a
// process the tree held this long before the rank died is known to the
// guard even after it left the tree's process group (setsid).
constexpr int kTrackIntervalMs = 200;
// After the rank's death: kill rounds this far apart, for at most this long
// (a process forking as fast as it is killed; a cgroup the kernel still
// holds a moment after its last process).
constexpr auto kKillRoundInterval = std::chrono::milliseconds(10);
constexpr auto kGiveUpAfter = std::chrono::seconds(5);
// How long the rank waits for a guard told to end before it kills it.
constexpr auto kGuardExitWait = std::chrono::seconds(2);
constexpr std::string_view kWatch = "watch ";
constexpr std::string_view kGroups = "groups ";
// The rank ends the guard: nothing is left to end (another runner of the
// same process may still use groups named as this process's).
constexpr std::string_view kEnd = "end\n";

// A pid in a line from the rank: digits only, never init nor every process
// (-1, 0 and 1 would make a kill reach far beyond the trial).
std::optional<pid_t> process_to_end(std::string_view digits) {
  long pid = 0;
  for (const char c : digits) {
    if (c < '0' || c > '9' || pid > INT_MAX / 10) return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  if (digits.empty() || pid <= 1) return std::nullopt;
  return static_cast<pid_t>(pid);
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// What is in `cgroup` now; nothing when it is gone or cannot be read: the
// guard has nobody to tell (its rank is dead), and the next round looks
// again until the group's removal says it is empty.
std::vector<pid_t> members_now(const std::filesystem::path& cgroup) {
  if (cgroup.empty()) return {};
  try {
    return cgroup_members(cgroup);
  } catch (const std::exception&) {
    return {};
  }
}

// A trial the rank can no longer end: every process of it killed, its
// cgroup removed.
void end_orphaned_trial(const GuardedTrial& trial, ProcessTreeProbe* tree, Clock::time_point give_up) {
  bool group_removed = trial.cgroup.empty();
  // The trial's own process by its pid once, now: in a later round the pid
  // may belong to another process. Its group's id is not reused while the
  // group has members.
  ::kill(trial.root, SIGKILL);
  for (;;) {
    bool any_left = false;
    if (trial.own_group && ::kill(-trial.root, SIGKILL) == 0) any_left = true;
    if (tree != nullptr) {
      ProcessMemory ignored;
      tree->read_process(ignored);  // children forked since the last look
      for (const int pid : tree->members())
        if (::kill(pid, SIGKILL) == 0 || alive(pid)) any_left = true;
    }
    for (const pid_t pid : members_now(trial.cgroup)) {
      ::kill(pid, SIGKILL);
      any_left = true;
    }
    if (!group_removed) group_removed = ::rmdir(trial.cgroup.c_str()) == 0 || errno == ENOENT;
    if ((!any_left && group_removed) || Clock::now() >= give_up) return;
    std::this_thread::sleep_for(kKillRoundInterval);
  }
}

// Every group under `parent` named as `rank`'s, with what it holds: one the
// rank made for a trial it had not yet told the guard of.
void remove_groups_of(const std::filesystem::path& parent, pid_t rank, Clock::time_point give_up) {
  for (;;) {
    bool any_left = false;
    std::error_code error;
    for (std::filesystem::directory_iterator entry(parent, error), end; !error && entry != end;
         entry.increment(error)) {
      if (memsweep_group_owner(entry->path().filename().string()) != rank) continue;
      for (const pid_t pid : members_now(entry->path())) ::kill(pid, SIGKILL);
      if (::rmdir(entry->path().c_str()) != 0 && errno != ENOENT) any_left = true;
    }
    if (!any_left || Clock::now() >= give_up) return;
    std::this_thread::sleep_for(kKillRoundInterval);
  }
}

void close_inherited_descriptors() {
  if (::syscall(SYS_close_range, static_cast<unsigned>(kGuardFd + 1), UINT_MAX, 0U) == 0) return;
  rlimit limit{};
  const int highest = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY
                          ? static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 16))
                          : 1 << 16;
  for (int fd = kGuardFd + 1; fd < highest; ++fd) ::close(fd);
}

// Signals meant for the rank or its job (a terminal's Ctrl-C, scancel's
// SIGTERM, Slurm's warning) do not end the guard: the rank's death does.
void ignore_the_ranks_signals() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGQUIT})
    ::sigaction(signal_number, &ignore, nullptr);
}

}  // namespace

std::string guard_watch_line(const GuardedTrial& trial) {
  return std::string(kWatch) + std::to_string(trial.root) + (trial.own_group ? " 1 " : " 0 ") + trial.cgroup.string() +
         "\n";
}

std::optional<GuardedTrial> parse_guard_watch_line(const std::string& line) {
  if (!line.starts_with(kWatch)) return std::nullopt;
  std::string_view rest = std::string_view(line).substr(kWatch.size());
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos || space == 0 || rest.size() < space + 3 || rest[space + 2] != ' ')
    return std::nullopt;
  GuardedTrial trial;
  const std::optional<pid_t> root = process_to_end(rest.substr(0, space));
  if (!root) return std::nullopt;
  const char group = rest[space + 1];
  if (group != '0' && group != '1') return std::nullopt;
  trial.root = *root;
  trial.own_group = group == '1';
  trial.cgroup = std::string(rest.substr(space + 3));
  return trial;
}

std::string guard_groups_line(const RankGroups& groups) {
  return std::string(kGroups) + std::to_string(groups.rank) + " " + groups.parent.string() + "\n";
}

std::optional<RankGroups> parse_guard_groups_line(const std::string& line) {
  if (!line.starts_with(kGroups)) return std::nullopt;
  const std::string_view rest = std::string_view(line).substr(kGroups.size());
  const std::size_t space = rest.find(' ');
  if (space == std::string_view::npos || space == 0 || space + 1 == rest.size()) return std::nullopt;
  const std::optional<pid_t> rank = process_to_end(rest.substr(0, space));
  if (!rank) return std::nullopt;
  return RankGroups{*rank, std::filesystem::path(rest.substr(space + 1))};
}

namespace {

// A guard process and the rank's end of its socket.
struct StartedGuard {
  pid_t pid = -1;
  UniqueFd socket;
};

std::optional<StartedGuard> spawn_guard(const std::string& executable) {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) return std::nullopt;
  UniqueFd rank_end(ends[0]);
  const UniqueFd guard_end(ends[1]);  // the guard's copy is made by the spawn
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  // dup2 clears close-on-exec on the copy: descriptor 3 alone reaches the guard.
  ::posix_spawn_file_actions_adddup2(&actions, guard_end.get(), kGuardFd);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  sigset_t none;
  ::sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attributes, &none);
  ::posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  char* argv[] = {const_cast<char*>("memsweep"), const_cast<char*>("guard"), nullptr};
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, executable.c_str(), &actions, &attributes, argv, environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (error != 0) return std::nullopt;
  return StartedGuard{pid, std::move(rank_end)};
}

// The guard's wait status; one told to end (or dead) that takes longer
// than kGuardExitWait is killed.
int reap_guard(pid_t pid) {
  const auto give_up = Clock::now() + kGuardExitWait;
  int status = 0;
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR) return -1;
    if (Clock::now() >= give_up) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

bool send_all(int socket, std::string_view line) noexcept {
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t wrote = ::send(socket, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    sent += static_cast<std::size_t>(wrote);
  }
  return true;
}

// One line on the rank's stderr, in one write: other ranks' lines and the
// rank's own progress interleave only between lines.
void tell_stderr(const std::string& line) noexcept {
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t wrote = ::write(STDERR_FILENO, line.data() + written, line.size() - written);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return;
    written += static_cast<std::size_t>(wrote);
  }
}

}  // namespace

std::string rank_label(const std::function<const char*(const char*)>& environment, pid_t pid) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = environment(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string_view digits(value);
    if (std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return fmt::format("rank {} (pid {})", digits, pid);
  }
  return fmt::format("memsweep (pid {})", pid);
}

std::string guard_end_text(int wait_status) {
  if (wait_status < 0) return "ended (its status could not be read)";
  if (WIFSIGNALED(wait_status)) {
    const int signal_number = WTERMSIG(wait_status);
    const char* name = ::sigdescr_np(signal_number);
    return name != nullptr ? fmt::format("was killed by signal {} ({})", signal_number, name)
                           : fmt::format("was killed by signal {}", signal_number);
  }
  if (WIFEXITED(wait_status)) return fmt::format("exited with status {}", WEXITSTATUS(wait_status));
  return "ended";
}

// What the rank's guard is, shared with the thread that notices its death.
// Lines are kept as they were last sent, so that a new guard hears them.
struct TrialGuard::State {
  std::string executable;
  std::string label;  // rank_label(), for the note on stderr
  mutable std::mutex mutex;
  pid_t pid = -1;
  UniqueFd socket;          // written under `mutex`; replaced only by the monitor
  std::string groups_line;  // empty: none told
  std::string watch_line;   // the trial running now; empty: none
  int restarts = 0;
  Pipe wake;  // a byte, or the end: the monitor stops
  std::thread monitor;

  void say(std::string_view line) noexcept {
    // A guard that died makes this fail: the monitor sees its socket end
    // and tells the next guard what this line said.
    if (socket) send_all(socket.get(), line);
  }

  // Waits for the socket's end (the guard died: it never writes) or for a
  // word on `wake`, and replaces each guard that died.
  void watch_for_death() noexcept;
  void replace_dead_guard() noexcept;
};

void TrialGuard::State::watch_for_death() noexcept {
  // The rank's signals are for its main thread (its stop handler, the
  // trial protocol's SIGPIPE wait), not for this one.
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    pollfd fds[2] = {{wake.read_end.get(), POLLIN, 0}, {socket.get(), POLLIN, 0}};
    const int count = socket ? 2 : 1;  // no guard left: only the word to stop
    if (::poll(fds, static_cast<nfds_t>(count), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    if (count < 2 || fds[1].revents == 0) continue;
    char byte = 0;
    const ssize_t got = ::recv(socket.get(), &byte, 1, MSG_DONTWAIT);
    if (got > 0 || (got < 0 && (errno == EINTR || errno == EAGAIN))) continue;  // nothing a guard says
    replace_dead_guard();
  }
}

void TrialGuard::State::replace_dead_guard() noexcept {
  try {
    std::string note;
    {
      const std::lock_guard lock(mutex);
      const pid_t dead = pid;
      const std::string how = guard_end_text(reap_guard(dead));
      socket.reset();
      pid = -1;
      std::optional<StartedGuard> next;
      if (restarts < kMaxGuardRestarts) next = spawn_guard(executable);
      if (next) {
        ++restarts;
        pid = next->pid;
        socket = std::move(next->socket);
        const bool told = (groups_line.empty() || send_all(socket.get(), groups_line)) &&
                          (watch_line.empty() || send_all(socket.get(), watch_line));
        note = fmt::format("memsweep: {}: its trial guard (process {}) {}; started another (process {}){}\n", label,
                           dead, how, pid,
                           !told                ? ", which died too: see the next line"
                           : watch_line.empty() ? ""
                                                : ", which guards the trial running now");
      } else {
        note = fmt::format(
            "memsweep: {}: its trial guard (process {}) {}, and {}: this rank's trials are unguarded from now on (if "
            "the rank dies, a program's children may outlive it: docs/runner.md, \"When the rank dies\")\n",
            label, dead, how,
            restarts >= kMaxGuardRestarts ? fmt::format("{} guards have died already", restarts + 1)
                                          : fmt::format("no other could start ({})", executable));
      }
    }
    tell_stderr(note);
  } catch (...) {  // a line's allocation: the next guard's death tries again
  }
}

std::optional<TrialGuard> TrialGuard::start(const std::string& executable) {
  std::optional<StartedGuard> first = spawn_guard(executable);
  if (!first) return std::nullopt;
  auto state = std::make_unique<State>();
  state->executable = executable;
  state->label = rank_label([](const char* name) { return std::getenv(name); }, ::getpid());
  state->pid = first->pid;
  state->socket = std::move(first->socket);
  try {
    state->wake = make_pipe("the trial guard's monitor");
    State* shared = state.get();
    state->monitor = std::thread([shared] { shared->watch_for_death(); });
  } catch (const std::exception&) {
    // No thread: the guard guards, but its death goes unnoticed, as before.
  }
  return TrialGuard(std::move(state));
}

TrialGuard::TrialGuard(std::unique_ptr<State> state) : state_(std::move(state)) {}

TrialGuard::TrialGuard(TrialGuard&& other) noexcept = default;

TrialGuard::~TrialGuard() {
  if (!state_) return;
  if (state_->monitor.joinable()) {
    const char stop = 1;
    [[maybe_unused]] const ssize_t wrote = ::write(state_->wake.write_end.get(), &stop, 1);
    state_->monitor.join();
  }
  // The monitor is gone: nothing replaces the guard from here on.
  state_->say(kEnd);
  state_->socket.reset();
  if (state_->pid > 0) reap_guard(state_->pid);
}

pid_t TrialGuard::pid() const {
  const std::lock_guard lock(state_->mutex);
  return state_->pid;
}

int TrialGuard::restarts() const {
  const std::lock_guard lock(state_->mutex);
  return state_->restarts;
}

void TrialGuard::watch(const GuardedTrial& trial) noexcept {
  try {
    const std::lock_guard lock(state_->mutex);
    state_->watch_line = guard_watch_line(trial);
    state_->say(state_->watch_line);
  } catch (...) {  // the line's allocation
  }
}

void TrialGuard::watch_groups_under(const std::filesystem::path& parent) noexcept {
  try {
    const std::lock_guard lock(state_->mutex);
    state_->groups_line = guard_groups_line({::getpid(), parent});
    state_->say(state_->groups_line);
  } catch (...) {  // the line's allocation
  }
}

void TrialGuard::release() noexcept {
  const std::lock_guard lock(state_->mutex);
  state_->watch_line.clear();
  state_->say("release\n");
}

}  // namespace memsweep::runner::detail

namespace memsweep {

void run_trial_guard() {
  using namespace runner::detail;
  close_inherited_descriptors();
  ignore_the_ranks_signals();
  std::optional<RankGroups> groups;
  std::optional<GuardedTrial> trial;
  std::unique_ptr<ProcessTreeProbe> tree;  // a program's tree, tracked while it runs
  std::string pending;
  for (;;) {
    pollfd socket{kGuardFd, POLLIN, 0};
    const int ready = ::poll(&socket, 1, kTrackIntervalMs);
    if (ready == 0) {
      ProcessMemory ignored;
      if (tree) tree->read_process(ignored);
      continue;
    }
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buffer[1024];
    const ssize_t got = ::read(kGuardFd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the rank is gone
    pending.append(buffer, static_cast<std::size_t>(got));
    for (std::size_t end = pending.find('\n'); end != std::string::npos; end = pending.find('\n')) {
      const std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (line + "\n" == kEnd) std::_Exit(0);
      if (auto named = parse_guard_groups_line(line)) {
        groups = std::move(named);
        continue;
      }
      trial = parse_guard_watch_line(line);
      tree.reset();
      if (trial && trial->own_group)
        tree = make_process_tree_probe(
            trial->root, trial->cgroup.empty() ? std::string() : (trial->cgroup / "cgroup.procs").string());
    }
  }
  const auto give_up = Clock::now() + kGiveUpAfter;
  if (trial) end_orphaned_trial(*trial, tree.get(), give_up);
  if (groups) remove_groups_of(groups->parent, groups->rank, give_up);
  std::_Exit(0);
}

}  // namespace memsweep
