// A tiny program that says what its own peak was, for the tests of a
// program trial's recorded peak (tests/run/test_program_peaks.cpp): it
// touches a block of anonymous memory page by page, holds it, then reads
// its own VmHWM from /proc/self/status and writes it (bytes, one line) to
// a file. The figure is the program's, read by the program, independent of
// memsweep's. Only system calls after main starts: no stdio buffer, no
// iostream, so that what it reads is what it had.
// Usage: hwm_program MIB HOLD_MS REPORT_PATH

#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

constexpr long kPageBytes = 4096;
constexpr long kMiB = 1L << 20;

// VmHWM in bytes from /proc/self/status, or -1.
long long own_peak_bytes() {
  char text[4096];
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t got = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (got <= 0) return -1;
  text[got] = '\0';
  const char* line = std::strstr(text, "VmHWM:");
  if (line == nullptr) return -1;
  return std::atoll(line + std::strlen("VmHWM:")) * 1024;  // "VmHWM:    1234 kB"
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const long bytes = std::atol(argv[1]) * kMiB;
  const long hold_ms = std::atol(argv[2]);
  if (bytes > 0) {
    void* block =
        ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return 1;
    for (long at = 0; at < bytes; at += kPageBytes) static_cast<volatile char*>(block)[at] = 1;
  }
  const timespec hold{hold_ms / 1000, (hold_ms % 1000) * 1'000'000};
  ::nanosleep(&hold, nullptr);

  char line[32];
  const long long peak = own_peak_bytes();
  if (peak <= 0) return 1;
  // Digits backwards, then the line.
  int at = sizeof(line) - 1;
  line[at] = '\n';
  for (long long rest = peak; rest > 0 || at == sizeof(line) - 1; rest /= 10)
    line[--at] = static_cast<char>('0' + rest % 10);
  const int fd = ::open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return 1;
  const ssize_t length = static_cast<ssize_t>(sizeof(line)) - at;
  const bool written = ::write(fd, line + at, static_cast<size_t>(length)) == length;
  ::close(fd);
  return written ? 0 : 1;
}
