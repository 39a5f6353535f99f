// A program whose child runs in its memory (clone with CLONE_VM and not as
// a thread, as vfork and posix_spawn make one) until it is told to exec,
// for the process-tree probe's test (tests/sampler/test_process_tree.cpp).
// Built without sanitizers: their runtimes cannot follow such a child.
// Usage: shared_memory_program MIB
// Touches MIB MiB, makes the child, writes the child's pid and a newline to
// stdout; a byte on stdin then lets the child exec /bin/sleep 60. It ends
// when it is killed.

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

char sleep_path[] = "/bin/sleep";
char sixty[] = "60";
char* sleep_argv[] = {sleep_path, sixty, nullptr};

int wait_then_exec(void*) {
  char byte = 0;
  if (::read(STDIN_FILENO, &byte, 1) == 1) ::execv(sleep_path, sleep_argv);
  ::_exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::size_t bytes = static_cast<std::size_t>(std::atol(argv[1])) << 20;
  char* block = static_cast<char*>(std::malloc(bytes));
  if (block == nullptr) return 1;
  std::memset(block, 1, bytes);
  constexpr std::size_t kStackBytes = 64 * 1024;
  char* stack = static_cast<char*>(std::malloc(kStackBytes));
  if (stack == nullptr) return 1;
  const pid_t child = ::clone(wait_then_exec, stack + kStackBytes, CLONE_VM | SIGCHLD, nullptr);
  if (child < 0) return 1;
  std::printf("%d\n", static_cast<int>(child));
  std::fflush(stdout);
  for (;;) ::pause();
}
