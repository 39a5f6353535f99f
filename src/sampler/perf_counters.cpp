#include "sampler/perf_counters.hpp"

#include "common/unique_fd.hpp"

#include <fmt/format.h>
#include <perfmon/pfmlib_perf_event.h>

#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>
#include <utility>

namespace memsweep::sampler::detail {
namespace {

// Threads appearing while the counters open are attached in another pass;
// a process that keeps spawning threads faster than that is not expected.
constexpr int kMaxAttachPasses = 4;

void ensure_pfm() {
  // pfm_initialize() is idempotent; PAPI has usually called it already.
  static const int status = pfm_initialize();
  if (status != PFM_SUCCESS)
    throw CounterError(fmt::format("libpfm4 could not start: {}", pfm_strerror(status)), status);
}

int perf_event_open(perf_event_attr& attr, pid_t tid, int group_fd = -1) {
  return static_cast<int>(::syscall(SYS_perf_event_open, &attr, tid, -1, group_fd, PERF_FLAG_FD_CLOEXEC));
}

// Every event its own group, so the kernel can multiplex them one by one;
// inherit: threads created later by a counted thread are counted too.
void set_counting_fields(perf_event_attr& attr) {
  attr.size = sizeof(attr);
  attr.inherit = 1;
  attr.disabled = 0;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

perf_event_attr encode(const std::string& native_name) {
  perf_event_attr attr{};
  pfm_perf_encode_arg_t arg{};
  arg.attr = &attr;
  arg.size = sizeof(arg);
  const int status = pfm_get_os_event_encoding(native_name.c_str(), PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
  if (status != PFM_SUCCESS)
    throw CounterError(fmt::format("libpfm4 cannot encode {}: {}", native_name, pfm_strerror(status)), status);
  set_counting_fields(attr);
  return attr;
}

// User and kernel level, as libpfm4 encodes PFM_PLM0 | PFM_PLM3 (it leaves
// out the hypervisor).
perf_event_attr encode(const KernelEvent& event) {
  perf_event_attr attr{};
  attr.type = event.type;
  attr.config = event.config;
  attr.exclude_hv = 1;
  set_counting_fields(attr);
  return attr;
}

std::string open_failure(int error) {
  switch (error) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV: return "this machine does not count it (no such hardware event; virtual machines often have none)";
    case EACCES:
    case EPERM: return "not permitted (see /proc/sys/kernel/perf_event_paranoid)";
    default: return std::error_code(error, std::generic_category()).message();
  }
}

// Tries user and kernel level first: context switches and page faults are
// kernel work, and the hardware events then include the kernel's share.
// Falls back to user level when perf_event_paranoid forbids the kernel.
// Returns whether the kernel's share is counted.
bool try_open(const std::string& name, perf_event_attr& attr) {
  UniqueFd fd(perf_event_open(attr, 0));
  const bool kernel_counted = static_cast<bool>(fd);
  if (!fd && (errno == EACCES || errno == EPERM)) {
    attr.exclude_kernel = 1;
    fd = UniqueFd(perf_event_open(attr, 0));
  }
  if (!fd) {
    const int error = errno;
    throw CounterError(fmt::format("{}: {}", name, open_failure(error)), error);
  }
  return kernel_counted;
}

std::vector<int> thread_ids(int pid) {
  std::vector<int> tids;
  const std::string tasks = pid == 0 ? std::string("/proc/self/task") : fmt::format("/proc/{}/task", pid);
  DIR* dir = ::opendir(tasks.c_str());
  if (dir == nullptr) return tids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    tids.push_back(std::atoi(entry->d_name));
  }
  ::closedir(dir);
  return tids;
}

class PerfCounterSource final : public CounterSource {
 public:
  explicit PerfCounterSource(std::vector<EncodedEvent> events) : events_(std::move(events)) {
    for (const EncodedEvent& event : events_) names_.push_back(event.name);
  }
  ~PerfCounterSource() override { stop(); }
  PerfCounterSource(const PerfCounterSource&) = delete;
  PerfCounterSource& operator=(const PerfCounterSource&) = delete;

  const std::vector<std::string>& names() const override { return names_; }

  // perf_event counts one thread per descriptor (a pid is a thread here),
  // so every existing thread gets its own; inherit covers later ones. A
  // trial process is opened while it waits for its go-ahead, with one
  // thread: everything it starts later inherits the counters.
  bool start(int pid, std::span<const int> excluded_tids) override {
    stop();
    problems_.clear();
    std::vector<int> attached(excluded_tids.begin(), excluded_tids.end());
    for (int pass = 0; pass < kMaxAttachPasses; ++pass) {
      bool new_thread = false;
      for (const int tid : thread_ids(pid)) {
        if (std::find(attached.begin(), attached.end(), tid) != attached.end()) continue;
        attached.push_back(tid);
        new_thread = true;
        attach(tid);
      }
      if (!new_thread) break;
    }
    return !fds_.empty() || !groups_.empty();
  }

  bool read(std::span<std::int64_t> values, std::span<float> running) noexcept override {
    std::array<double, kMaxCounters> sums{};
    std::array<double, kMaxCounters> enabled{};
    std::array<double, kMaxCounters> ran{};
    const auto add = [&](const Member& member, std::uint64_t value, std::uint64_t time_enabled,
                         std::uint64_t time_running) {
      sums[member.event] += member.sign * scaled_count(value, time_enabled, time_running);
      enabled[member.event] += static_cast<double>(time_enabled);
      ran[member.event] += static_cast<double>(time_running);
    };
    bool ok = true;
    for (const OpenCounter& counter : fds_) {
      std::array<std::uint64_t, 3> buffer{};  // value, time enabled, time running
      if (::read(counter.fd.get(), buffer.data(), sizeof(buffer)) != static_cast<ssize_t>(sizeof(buffer))) {
        ok = false;
        continue;
      }
      add(counter.member, buffer[0], buffer[1], buffer[2]);
    }
    for (const SoftwareGroup& group : groups_) {
      // PERF_FORMAT_GROUP: members, time enabled, time running, then one
      // value per member in the order they joined.
      std::array<std::uint64_t, 3 + kMaxGroupMembers> buffer{};
      const auto bytes = static_cast<ssize_t>((3 + group.members.size()) * sizeof(std::uint64_t));
      if (::read(group.leader_fd, buffer.data(), static_cast<std::size_t>(bytes)) != bytes ||
          buffer[0] != group.members.size()) {
        ok = false;
        continue;
      }
      for (std::size_t i = 0; i < group.members.size(); ++i) add(group.members[i], buffer[3 + i], buffer[1], buffer[2]);
    }
    for (std::size_t i = 0; i < events_.size() && i < values.size() && i < running.size(); ++i) {
      values[i] = static_cast<std::int64_t>(sums[i] + 0.5);
      running[i] = enabled[i] > 0 ? static_cast<float>(ran[i] / enabled[i]) : 1.0F;
    }
    return ok;
  }

  void stop() noexcept override {
    fds_.clear();
    groups_.clear();
  }

  std::vector<std::string> problems() const override { return problems_; }

 private:
  struct Member {
    std::size_t event;
    int sign;
  };
  struct OpenCounter {
    UniqueFd fd;
    Member member;
  };
  // A thread's software events (page faults, context switches) in one perf
  // group, read with one read(): reading a counter of a thread running on
  // another CPU interrupts that CPU (an IPI, dear in a VM), so one read a
  // tick instead of one per event is what the watched trial pays. Hardware
  // events stay one per group, so that the kernel can multiplex them one by
  // one when the PMU has too few counters.
  struct SoftwareGroup {
    int leader_fd = -1;         // fds' first, once there is one
    std::vector<UniqueFd> fds;  // the leader's first
    std::vector<Member> members;
  };
  static constexpr std::size_t kMaxGroupMembers = 2 * kMaxCounters;

  void attach(int tid) {
    SoftwareGroup group;
    bool thread_gone = false;
    for (std::size_t e = 0; e < events_.size() && !thread_gone; ++e) {
      for (EncodedTerm& term : events_[e].terms) {
        const bool grouped = term.attr.type == PERF_TYPE_SOFTWARE && group.members.size() < kMaxGroupMembers;
        perf_event_attr attr = term.attr;
        if (grouped) attr.read_format |= PERF_FORMAT_GROUP;
        UniqueFd fd(perf_event_open(attr, tid, grouped ? group.leader_fd : -1));
        if (fd) {
          if (!grouped) {
            fds_.push_back({std::move(fd), {e, term.sign}});
            continue;
          }
          if (group.leader_fd < 0) group.leader_fd = fd.get();
          group.fds.push_back(std::move(fd));
          group.members.push_back({e, term.sign});
          continue;
        }
        const int error = errno;
        if (error == ESRCH) {  // the thread ended meanwhile: nothing more to count
          thread_gone = true;
          break;
        }
        problems_.push_back(fmt::format("{} on thread {}: {}", events_[e].name, tid, open_failure(error)));
      }
    }
    if (group.leader_fd >= 0) groups_.push_back(std::move(group));
  }

  std::vector<EncodedEvent> events_;
  std::vector<std::string> names_;
  std::vector<OpenCounter> fds_;
  std::vector<SoftwareGroup> groups_;
  std::vector<std::string> problems_;
};

}  // namespace

double scaled_count(std::uint64_t value, std::uint64_t time_enabled, std::uint64_t time_running) {
  if (time_running == 0) return 0.0;
  if (time_running >= time_enabled) return static_cast<double>(value);
  return static_cast<double>(value) * static_cast<double>(time_enabled) / static_cast<double>(time_running);
}

EncodedEvent encode_event(const PapiEvent& event) {
  static std::mutex mutex;  // libpfm4's encoder is not documented as thread-safe
  const std::lock_guard lock(mutex);
  ensure_pfm();
  EncodedEvent encoded;
  encoded.name = event.name;
  encoded.description = event.description;
  encoded.source = EventSource::papi;
  for (const CounterTerm& term : event.terms)
    encoded.terms.push_back({encode(term.native_name), term.sign, term.native_name});
  return encoded;
}

EncodedEvent encode_event(const std::string& name, const KernelEvent& event) {
  EncodedEvent encoded;
  encoded.name = name;
  encoded.description = event.description;
  encoded.source = EventSource::kernel;
  encoded.terms.push_back({encode(event), 1, "the kernel's generic event"});
  return encoded;
}

void check_counts(EncodedEvent& event) {
  event.kernel_counted = true;
  for (EncodedTerm& term : event.terms) event.kernel_counted = try_open(term.name, term.attr) && event.kernel_counted;
}

std::vector<EventEncoding> EncodedEvent::encoding() const {
  std::vector<EventEncoding> encoding;
  for (const EncodedTerm& term : terms)
    encoding.push_back({term.attr.type, term.attr.config, term.attr.config1, term.sign});
  return encoding;
}

std::unique_ptr<CounterSource> make_perf_counter_source(std::vector<EncodedEvent> events) {
  return std::make_unique<PerfCounterSource>(std::move(events));
}

}  // namespace memsweep::sampler::detail
