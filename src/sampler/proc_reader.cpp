// The real MemoryProbe: /proc files opened once and re-read with pread, so
// a tick costs one system call per file and no path lookup.

#include "common/unique_fd.hpp"
#include "sampler/proc_parsers.hpp"

#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>
#include <string_view>

namespace memsweep {
namespace {

// Larger than any of the files read (meminfo is about 1.5 KB, the others
// well under); the parsers only need the first lines of each.
constexpr std::size_t kProcBufferBytes = 4096;
// Writing "5" to clear_refs resets the peak RSS (VmHWM) to the current RSS
// (Documentation/filesystems/proc.rst).
constexpr std::string_view kResetPeakRss = "5";

class ProcFile {
 public:
  explicit ProcFile(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}

  // The file's text from offset 0 (the kernel regenerates it), or empty.
  std::string_view read() noexcept {
    if (!fd_) return {};
    ssize_t got = 0;
    do {
      got = ::pread(fd_.get(), buffer_.data(), buffer_.size(), 0);
    } while (got < 0 && errno == EINTR);
    return got > 0 ? std::string_view(buffer_.data(), static_cast<std::size_t>(got)) : std::string_view{};
  }

 private:
  UniqueFd fd_;
  std::array<char, kProcBufferBytes> buffer_{};
};

// The files of one process: "self", or a pid for a process watched from
// outside (a trial's). A descriptor opened on /proc/PID keeps reading that
// process, never a later one that reuses its pid.
class ProcMemoryProbe final : public MemoryProbe {
 public:
  explicit ProcMemoryProbe(const std::string& process)
      : self_(process == "self"),
        pid_(self_ ? static_cast<int>(::getpid()) : std::stoi(process)),
        page_bytes_(::sysconf(_SC_PAGESIZE)),
        statm_("/proc/" + process + "/statm"),
        status_("/proc/" + process + "/status"),
        meminfo_("/proc/meminfo"),
        smaps_rollup_("/proc/" + process + "/smaps_rollup") {}

  bool read_process(ProcessMemory& out) noexcept override {
    const auto pages = sampler::detail::parse_statm(statm_.read());
    // A process that has exited (a zombie until reaped) reads as all zeros:
    // no memory at all is not a measurement.
    if (!pages || pages->size == 0) return false;
    out = sampler::detail::process_memory_from_statm(*pages, page_bytes_);
    return true;
  }

  bool read_system(SystemMemory& out) noexcept override {
    const auto memory = sampler::detail::parse_meminfo(meminfo_.read());
    if (!memory) return false;
    out = *memory;
    return true;
  }

  bool read_pss(std::int64_t& pss_bytes) noexcept override {
    const auto rollup = sampler::detail::parse_smaps_rollup(smaps_rollup_.read());
    if (!rollup) return false;
    pss_bytes = rollup->pss_bytes;
    return true;
  }

  bool read_peak_rss(std::int64_t& peak_bytes) noexcept override {
    const auto status = sampler::detail::parse_status(status_.read());
    if (!status || status->peak_rss_bytes < 0) return false;
    peak_bytes = status->peak_rss_bytes;
    return true;
  }

  // Opened for each reset: it is done once per region, off the tick. Only
  // this process's own peak is reset; a watched process is a fresh one.
  bool reset_peak_rss() noexcept override {
    if (!self_) return false;
    const UniqueFd fd(::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC));
    if (!fd) return false;
    const ssize_t written = ::write(fd.get(), kResetPeakRss.data(), kResetPeakRss.size());
    return written == static_cast<ssize_t>(kResetPeakRss.size());
  }

  void release_free_memory() noexcept override {
    if (self_) ::malloc_trim(0);
  }

  bool read_pids(std::vector<int>& pids) noexcept override {
    try {
      pids.assign(1, pid_);
    } catch (const std::bad_alloc&) {
      return false;
    }
    return true;
  }

 private:
  bool self_;
  int pid_;
  std::int64_t page_bytes_;
  ProcFile statm_;
  ProcFile status_;
  ProcFile meminfo_;
  ProcFile smaps_rollup_;
};

}  // namespace

std::unique_ptr<MemoryProbe> make_proc_memory_probe() { return std::make_unique<ProcMemoryProbe>("self"); }

std::unique_ptr<MemoryProbe> make_proc_memory_probe(int pid) {
  return std::make_unique<ProcMemoryProbe>(std::to_string(pid));
}

}  // namespace memsweep
