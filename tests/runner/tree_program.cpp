// A stand-in for a user's training program, for the runner's program-trial
// tests: it touches a known amount of memory, then has a child touch more
// while it holds its own, and says what it did through memsweep's events
// channel. Options (all optional):
//   --touch MiB          the parent's allocation, touched page by page
//   --child-touch MiB    the child's, while the parent holds its own
//   --hold-ms MS         how long each holds its memory at the top
//   --report PATH        writes "parent_base child_base grandchild_pid" (bytes, bytes, pid)
//   --exit CODE          exit status (after writing "boom" to stderr when not 0)
//   --hang               never ends
//   --grandchild         leaves a grandchild that sleeps on after the program exits
//   --setsid             ... in a session of its own (outside the process group)
//   --bad-lines N        N lines on the events channel that are not events

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

long long own_rss_bytes() {
  long long size = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return -1;
  if (std::fscanf(statm, "%lld %lld", &size, &resident) != 2) resident = -1;
  std::fclose(statm);
  return resident * ::sysconf(_SC_PAGESIZE);
}

char* touch(long long mib) {
  const std::size_t bytes = static_cast<std::size_t>(mib) << 20;
  char* block = static_cast<char*>(std::malloc(bytes));
  if (block == nullptr) std::abort();
  for (std::size_t at = 0; at < bytes; at += 4096) block[at] = 1;
  return block;
}

void event(const std::string& line) {
  const char* fd_text = std::getenv("MEMSWEEP_EVENTS_FD");
  if (fd_text == nullptr) return;
  const std::string text = line + "\n";
  [[maybe_unused]] const ssize_t written = ::write(std::atoi(fd_text), text.data(), text.size());
}

void hold(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

int main(int argc, char** argv) {
  long long touch_mib = 0, child_mib = 0;
  int hold_ms = 300, exit_code = 0, bad_lines = 0;
  bool hang = false, grandchild = false, new_session = false;
  std::string report;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : "0";
    if (arg == "--touch")
      touch_mib = std::atoll(value), ++i;
    else if (arg == "--child-touch")
      child_mib = std::atoll(value), ++i;
    else if (arg == "--hold-ms")
      hold_ms = std::atoi(value), ++i;
    else if (arg == "--report")
      report = value, ++i;
    else if (arg == "--exit")
      exit_code = std::atoi(value), ++i;
    else if (arg == "--bad-lines")
      bad_lines = std::atoi(value), ++i;
    else if (arg == "--hang")
      hang = true;
    else if (arg == "--grandchild")
      grandchild = true;
    else if (arg == "--setsid")
      new_session = true;
    else {
      std::fprintf(stderr, "tree_program: unknown option %s\n", arg.c_str());
      return 2;
    }
  }
  for (int i = 0; i < bad_lines; ++i) event("this is not an event");
  event(R"({"parameters": 1000, "activations_per_example": 100})");
  event(R"({"epoch": 1, "phase": "train"})");
  const long long parent_base = own_rss_bytes();
  char* mine = touch(touch_mib);

  // The child reports its own baseline through a pipe, taken after the fork
  // (it shares the parent's pages, which its RSS counts too).
  int child_pipe[2];
  if (::pipe(child_pipe) != 0) return 1;
  const pid_t child = ::fork();
  if (child == 0) {
    const long long child_base = own_rss_bytes();
    [[maybe_unused]] const ssize_t sent = ::write(child_pipe[1], &child_base, sizeof(child_base));
    char* theirs = touch(child_mib);
    hold(hold_ms);
    std::free(theirs);
    std::_Exit(0);
  }
  long long child_base = -1;
  [[maybe_unused]] const ssize_t got = ::read(child_pipe[0], &child_base, sizeof(child_base));
  int status = 0;
  ::waitpid(child, &status, 0);
  std::free(mine);
  event(R"({"phase": "eval"})");
  event(R"({"epoch": 1, "loss": 0.5, "accuracy": 0.75})");

  pid_t grandchild_pid = 0;
  if (grandchild) {
    // A child that forks the grandchild and exits at once: the grandchild
    // is orphaned, as a daemonised helper would be.
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) return 1;
    const pid_t middle = ::fork();
    if (middle == 0) {
      const pid_t last = ::fork();
      if (last == 0) {
        if (new_session) ::setsid();
        for (;;) ::pause();
      }
      [[maybe_unused]] const ssize_t sent = ::write(pid_pipe[1], &last, sizeof(last));
      std::_Exit(0);
    }
    [[maybe_unused]] const ssize_t read_pid = ::read(pid_pipe[0], &grandchild_pid, sizeof(grandchild_pid));
    ::waitpid(middle, &status, 0);
    hold(hold_ms);  // long enough for the sampler to find it
  }
  if (!report.empty()) {
    FILE* out = std::fopen(report.c_str(), "w");
    if (out == nullptr) return 1;
    std::fprintf(out, "%lld %lld %d\n", parent_base, child_base, static_cast<int>(grandchild_pid));
    std::fclose(out);
  }
  if (hang)
    for (;;) ::pause();
  if (exit_code != 0) {
    std::fprintf(stderr, "tree_program: something went wrong\nboom: exit %d\n", exit_code);
    return exit_code;
  }
  std::printf("tree_program: done\n");
  return 0;
}
