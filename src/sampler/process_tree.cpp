#include "sampler/process_tree.hpp"

#include "common/unique_fd.hpp"
#include "sampler/proc_parsers.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace memsweep {
namespace {

// Larger than the statm, status and smaps_rollup files, and than a
// children list of a few hundred processes.
constexpr std::size_t kBufferBytes = 8192;

// A /proc file opened once. A descriptor on /proc/PID keeps reading that
// process, never a later one that reuses its pid.
class OpenFile {
 public:
  explicit OpenFile(const std::string& path, int flags = 0) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | flags)) {}
  bool is_open() const { return static_cast<bool>(fd_); }

  std::string_view read(std::array<char, kBufferBytes>& buffer) const noexcept {
    if (!fd_) return {};
    ssize_t got = 0;
    do {
      got = ::pread(fd_.get(), buffer.data(), buffer.size(), 0);
    } while (got < 0 && errno == EINTR);
    return got > 0 ? std::string_view(buffer.data(), static_cast<std::size_t>(got)) : std::string_view{};
  }

  // The file from where it stands to its end, however long, into `text`
  // (whose capacity stays for the next read): a list cut at a buffer's end
  // would lose processes, or end in half a pid.
  void read_all(std::string& text) const {
    text.clear();
    if (!fd_) return;
    std::array<char, kBufferBytes> chunk;
    for (;;) {
      const ssize_t got = ::read(fd_.get(), chunk.data(), chunk.size());
      if (got > 0)
        text.append(chunk.data(), static_cast<std::size_t>(got));
      else if (got == 0 || errno != EINTR)
        return;
    }
  }

  // `name` in this directory, opened for this one read.
  std::string_view read_entry(const char* name, std::array<char, kBufferBytes>& buffer) const noexcept {
    if (!fd_) return {};
    OpenFile entry(UniqueFd(::openat(fd_.get(), name, O_RDONLY | O_CLOEXEC)));
    return entry.read(buffer);
  }

 private:
  explicit OpenFile(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

// The whole text of a list file opened for this one read (cgroup.procs, a
// thread's children: they change as processes come and go).
const std::string& read_list(const std::string& path, std::string& text) {
  OpenFile(path).read_all(text);
  return text;
}

struct Member {
  explicit Member(int pid)
      : statm("/proc/" + std::to_string(pid) + "/statm"),
        status("/proc/" + std::to_string(pid) + "/status"),
        folder("/proc/" + std::to_string(pid), O_DIRECTORY) {}
  // statm and status read the process's memory as it is at each read; an
  // open smaps_rollup keeps reading the memory it was opened on, which an
  // exec replaces (a process found while still a fork, the program itself
  // at its start gate): it is opened afresh, in this folder, for each read.
  OpenFile statm;
  OpenFile status;
  OpenFile folder;
  std::int64_t peak = -1;         // its largest VmHWM seen
  int parent = -1;                // the member it was found a child of; -1: none (the root, or found in the cgroup)
  std::atomic<bool> alive{true};  // read by the PSS thread too
  // It runs in its parent's memory (clone with CLONE_VM and not
  // CLONE_THREAD: vfork and posix_spawn until the exec, LeakSanitizer's
  // tracer at exit): its figures are its parent's, counted there. Read by
  // the PSS thread too.
  std::atomic<bool> in_parents_memory{false};
};

// Whether two processes share one address space (kcmp's KCMP_VM). False
// when the kernel cannot say (no kcmp, not permitted, a process gone).
bool share_memory(int pid, int other) { return ::syscall(SYS_kcmp, pid, other, KCMP_VM, 0, 0) == 0; }

class ProcTreeProbe final : public ProcessTreeProbe {
 public:
  ProcTreeProbe(int root_pid, std::string cgroup_procs)
      : root_(root_pid),
        cgroup_procs_(std::move(cgroup_procs)),
        page_bytes_(::sysconf(_SC_PAGESIZE)),
        meminfo_("/proc/meminfo") {
    add(root_);  // before any thread reads: the PSS thread may read first
  }

  bool read_process(ProcessMemory& out) noexcept override {
    refresh();
    ProcessMemory sum{0, 0};
    for (auto& [pid, member] : members_) {
      if (!member.alive || member.in_parents_memory) continue;
      const auto pages = sampler::detail::parse_statm(member.statm.read(buffer_));
      // An exited process (a zombie until reaped) reads as zeros, or not at all.
      if (!pages || pages->size == 0) {
        member.alive = false;
        continue;
      }
      const ProcessMemory one = sampler::detail::process_memory_from_statm(*pages, page_bytes_);
      sum.rss_bytes += one.rss_bytes;
      sum.anon_rss_bytes += one.anon_rss_bytes;
    }
    // Nothing resident in a tree that exists is no reading: a process
    // between two images at its exec, or one whose RSS counters the kernel
    // has not gathered yet (before Linux 6.2, per thread, every 64 faults).
    // Counted as a failed read, it stays out of the mean and the peak.
    if (sum.rss_bytes <= 0) return false;
    out = sum;
    return true;
  }

  bool read_system(SystemMemory& out) noexcept override {
    const auto memory = sampler::detail::parse_meminfo(meminfo_.read(buffer_));
    if (!memory) return false;
    out = *memory;
    return true;
  }

  // On the sampler's PSS thread, while the sampling thread may find new
  // members: the members are taken under the lock, read without it (a
  // member is never removed, and its files never change).
  bool read_pss(std::int64_t& pss_bytes) noexcept override {
    std::vector<const Member*> alive;
    try {
      const std::lock_guard lock(members_mutex_);
      for (const auto& [pid, member] : members_)
        if (member.alive && !member.in_parents_memory) alive.push_back(&member);
    } catch (...) {
      return false;
    }
    std::int64_t sum = 0;
    bool any = false;
    for (const Member* member : alive) {
      const auto rollup = sampler::detail::parse_smaps_rollup(member->folder.read_entry("smaps_rollup", pss_buffer_));
      if (!rollup) continue;
      sum += rollup->pss_bytes;
      any = true;
    }
    if (any) pss_bytes = sum;
    return any;
  }

  bool read_peak_rss(std::int64_t& peak_bytes) noexcept override {
    refresh();
    std::int64_t largest = -1;
    for (auto& [pid, member] : members_) {
      if (member.alive && !member.in_parents_memory) {
        const auto status = sampler::detail::parse_status(member.status.read(buffer_));
        if (status && status->peak_rss_bytes > 0) member.peak = std::max(member.peak, status->peak_rss_bytes);
      }
      largest = std::max(largest, member.peak);
    }
    if (largest < 0) return false;
    peak_bytes = largest;
    return true;
  }

  // The two reads of a runner's check, with one search for new processes.
  PeakAndProcess read_peak_and_process() noexcept override {
    refresh();
    searched_for_this_read_ = true;
    const PeakAndProcess reading = MemoryProbe::read_peak_and_process();
    searched_for_this_read_ = false;
    return reading;
  }

  // A program's processes are fresh: there is no peak to reset, nothing to trim.
  bool reset_peak_rss() noexcept override { return false; }
  void release_free_memory() noexcept override {}

  // On the sampler's GPU thread: under the lock, as read_pss.
  bool read_pids(std::vector<int>& pids) noexcept override {
    try {
      const std::lock_guard lock(members_mutex_);
      for (const auto& [pid, member] : members_)
        if (member.alive) pids.push_back(pid);
    } catch (...) {
      return false;
    }
    return true;
  }

  std::vector<int> members() const override {
    std::vector<int> pids;
    for (const auto& [pid, member] : members_)
      if (member.alive) pids.push_back(pid);
    return pids;
  }

  ProcessTreeStats stats() const override {
    ProcessTreeStats stats;
    stats.processes_seen = static_cast<int>(members_.size());
    stats.scans = scans_;
    for (const auto& [pid, member] : members_) {
      if (member.peak < 0) continue;
      stats.peak_sum = std::max<std::int64_t>(stats.peak_sum, 0) + member.peak;
      stats.largest_peak = std::max(stats.largest_peak, member.peak);
    }
    return stats;
  }

 private:
  // New processes: the children of every member's threads, and
  // the trial cgroup's processes. Never throws: a read that fails finds none.
  void refresh() noexcept {
    if (searched_for_this_read_) return;
    ++scans_;
    try {
      if (!cgroup_procs_.empty())
        for (const int pid : parse_pid_list(read_list(cgroup_procs_, list_text_))) add(pid);
      // Breadth-first over the members as they are found.
      std::vector<int> queue = members();
      for (std::size_t next = 0; next < queue.size(); ++next)
        for (const int child : children_of(queue[next]))
          if (add(child, queue[next])) queue.push_back(child);
    } catch (...) {
      // Out of memory while growing the tables: this read finds nobody new.
    }
    find_shared_memory();
  }

  // Which members run in their parent's memory now: a vfork child leaves it
  // at its exec. One kcmp a member with a parent, none for a lone process.
  void find_shared_memory() noexcept {
    for (auto& [pid, member] : members_) {
      if (!member.alive || member.parent < 0) continue;
      const auto parent = members_.find(member.parent);
      member.in_parents_memory = parent != members_.end() && parent->second.alive && share_memory(pid, member.parent);
    }
  }

  // A process found anew, or a parent for one found without (in the cgroup).
  bool add(int pid, int parent = -1) {
    if (pid <= 0) return false;
    if (const auto known = members_.find(pid); known != members_.end()) {
      if (known->second.parent < 0 && pid != root_) known->second.parent = parent;
      return false;
    }
    const std::lock_guard lock(members_mutex_);
    auto [it, inserted] = members_.try_emplace(pid, pid);
    it->second.parent = parent;
    if (!it->second.statm.is_open()) it->second.alive = false;  // gone before it was found
    return inserted;
  }

  // The children of every thread of `pid` (a child belongs to the thread
  // that forked it).
  std::vector<int> children_of(int pid) {
    std::vector<int> children;
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(tasks.c_str());
    if (dir == nullptr) return children;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
      for (const int child : parse_pid_list(read_list(tasks + "/" + entry->d_name + "/children", list_text_)))
        children.push_back(child);
    }
    ::closedir(dir);
    return children;
  }

  int root_;
  std::string cgroup_procs_;
  std::int64_t page_bytes_;
  OpenFile meminfo_;
  // Inserted into by the sampling thread only, which reads it without the
  // lock; the PSS thread reads it under the lock.
  std::map<int, Member> members_;
  std::mutex members_mutex_;
  std::int64_t scans_ = 0;
  bool searched_for_this_read_ = false;  // inside read_peak_and_process: its reads do not search again
  std::array<char, kBufferBytes> buffer_{};
  std::array<char, kBufferBytes> pss_buffer_{};
  std::string list_text_;  // the last list read (refresh), its capacity kept
};

}  // namespace

std::vector<int> parse_pid_list(std::string_view text) {
  std::vector<int> pids;
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\n')) ++at;
    if (at == text.size()) break;
    int pid = 0;
    const auto [end, error] = std::from_chars(text.data() + at, text.data() + text.size(), pid);
    if (error != std::errc() || pid <= 0) break;
    pids.push_back(pid);
    at = static_cast<std::size_t>(end - text.data());
  }
  return pids;
}

std::unique_ptr<ProcessTreeProbe> make_process_tree_probe(int root_pid, std::string cgroup_procs) {
  return std::make_unique<ProcTreeProbe>(root_pid, std::move(cgroup_procs));
}

}  // namespace memsweep
