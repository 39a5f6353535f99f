#include "runner/trial_cgroup.hpp"

#include "common/unique_fd.hpp"
#include "runner/cgroup_files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

namespace memsweep::runner::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kProcsFile = "cgroup.procs";
constexpr std::string_view kControllersFile = "cgroup.controllers";
constexpr std::string_view kSubtreeControlFile = "cgroup.subtree_control";
constexpr std::string_view kRankLeafPrefix = "memsweep-rank-";
constexpr std::string_view kProbePrefix = "memsweep-probe-";

// cgroup v2 files
constexpr std::string_view kV2Limit = "memory.max";
constexpr std::string_view kV2Peak = "memory.peak";  // kernels >= 5.19
constexpr std::string_view kV2Events = "memory.events";
constexpr std::string_view kV2OomGroup = "memory.oom.group";
// cgroup v1 files
constexpr std::string_view kV1Limit = "memory.limit_in_bytes";
constexpr std::string_view kV1Peak = "memory.max_usage_in_bytes";
constexpr std::string_view kV1OomControl = "memory.oom_control";
constexpr std::string_view kV1LimitHits = "memory.failcnt";

constexpr std::string_view kOomKillKey = "oom_kill";
constexpr std::string_view kLimitHitKey = "max";  // memory.events: times usage reached memory.max

// A group whose last process has just been reaped can stay busy a moment
// longer while the kernel finishes with it; rmdir is retried this long.
constexpr auto kRemoveRetryInterval = std::chrono::milliseconds(1);
constexpr auto kRemoveGiveUpAfter = std::chrono::milliseconds(50);
// Names tried by create() when stale groups that cannot be removed hold them.
constexpr int kNamesToTry = 8;
constexpr mode_t kGroupMode = 0755;
constexpr std::size_t kReadChunkBytes = 4096;

std::string errno_message(int error) { return std::error_code(error, std::generic_category()).message(); }

// The whole of a small file, read to its end: kernel files report no size.
// Empty with `problem` set (naming the file) when it cannot be read.
std::optional<std::string> read_text(const fs::path& file, std::string* problem = nullptr) {
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  int error = fd ? 0 : errno;
  std::string text;
  while (error == 0) {
    char buffer[kReadChunkBytes];
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got > 0)
      text.append(buffer, static_cast<std::size_t>(got));
    else if (got == 0)
      break;
    else if (errno != EINTR)
      error = errno;
  }
  if (error == 0) return text;
  if (problem != nullptr) *problem = "cannot read " + file.string() + ": " + errno_message(error);
  return std::nullopt;
}

std::optional<std::uint64_t> read_count(const fs::path& file) {
  const auto text = read_text(file);
  return text ? parse_single_count(*text) : std::nullopt;
}

// Writes `text` in one write(2): a cgroup file takes one value a write, and
// reports a refused value as the write's error. The open flags are the
// shell's `echo text > file`; O_CREAT only matters in tests' trees of plain
// files. Returns the problem (naming the file), nothing when written.
std::optional<std::string> write_file(const fs::path& file, std::string_view text) {
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  int error = fd ? 0 : errno;
  if (fd) {
    const ssize_t wrote = ::write(fd.get(), text.data(), text.size());
    if (wrote < 0)
      error = errno;
    else if (static_cast<std::size_t>(wrote) != text.size())
      error = EIO;
    // Closed here, not by the owner: a close can report a failed write.
    if (::close(fd.release()) != 0 && error == 0) error = errno;
  }
  if (error == 0) return std::nullopt;
  return "cannot write \"" + std::string(text) + "\" to " + file.string() + ": " + errno_message(error);
}

// rmdir, retried while the kernel still holds the group busy (EBUSY) after
// its last process ended. 0 when the group is gone, else the errno.
int remove_group(const fs::path& dir) {
  const auto give_up = std::chrono::steady_clock::now() + kRemoveGiveUpAfter;
  for (;;) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
    const int error = errno;
    if (error != EBUSY || std::chrono::steady_clock::now() >= give_up) return error;
    std::this_thread::sleep_for(kRemoveRetryInterval);
  }
}

// A new group directory under `parent`. A group of that name left by a
// crashed run is removed when empty (rmdir refuses a group with processes
// or children), else the next suffix is tried.
fs::path make_group_dir(const fs::path& parent, const std::string& name) {
  for (int attempt = 1; attempt <= kNamesToTry; ++attempt) {
    const fs::path dir = parent / (attempt == 1 ? name : name + "-" + std::to_string(attempt));
    if (::mkdir(dir.c_str(), kGroupMode) == 0) return dir;
    const int error = errno;
    if (error != EEXIST)
      throw std::runtime_error("cannot create the cgroup " + dir.string() + ": " + errno_message(error));
    if (::rmdir(dir.c_str()) == 0 && ::mkdir(dir.c_str(), kGroupMode) == 0) return dir;
  }
  throw std::runtime_error("cannot create a cgroup named " + name + " in " + parent.string() + ": it and " +
                           std::to_string(kNamesToTry - 1) +
                           " suffixed names exist and are not empty (stale groups that still hold processes?)");
}

// Creates and removes a group under `parent`: the one sure test that trial
// groups can be made there. The problem, nothing when they can.
std::optional<std::string> probe_problem(const fs::path& parent) {
  const fs::path probe = parent / (std::string(kProbePrefix) + std::to_string(::getpid()));
  if (::mkdir(probe.c_str(), kGroupMode) != 0 && errno != EEXIST)
    return "cannot create a group in " + parent.string() + ": " + errno_message(errno);
  if (const int error = remove_group(probe); error != 0)
    return "cannot remove the test group " + probe.string() + ": " + errno_message(error);
  return std::nullopt;
}

// When process `pid` started, in seconds since the epoch (/proc/PID/stat's
// start time after /proc/stat's boot time); nullopt when it cannot be read.
std::optional<double> process_start_seconds(pid_t pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // The command name may hold spaces and parentheses: fields count from the last ')'.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  constexpr int kStartTimeField = 22;  // man 5 proc; the text after ')' begins with field 3
  std::uint64_t ticks = 0;
  std::string skipped;
  for (int field = 3; field < kStartTimeField; ++field) fields >> skipped;
  if (!(fields >> ticks)) return std::nullopt;
  std::ifstream boot_file("/proc/stat");
  std::uint64_t boot = 0;
  for (std::string key; boot_file >> key;)
    if (key == "btime") {
      boot_file >> boot;
      break;
    }
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (boot == 0 || ticks_per_second <= 0) return std::nullopt;
  return static_cast<double>(boot) + static_cast<double>(ticks) / static_cast<double>(ticks_per_second);
}

// Whether the group's owner is gone: no process has its pid, or the one
// that has it started after the group was made (a pid reused, e.g. on a
// node whose processes all died with their guards and started again).
bool owner_gone(pid_t owner, const fs::path& group) {
  if (::kill(owner, 0) != 0 && errno == ESRCH) return true;
  struct stat made {};
  const std::optional<double> started = process_start_seconds(owner);
  if (!started || ::stat(group.c_str(), &made) != 0) return false;
  constexpr double kClockSlack = 1.0;  // the group's time has whole-second precision at worst
  return *started > static_cast<double>(made.st_mtime) + kClockSlack;
}

// Groups left by ranks that died: a rank's guard removes its trial's group,
// but not when it was killed too (with its node, or by a memsweep from
// before the guard). Removed when their rank is gone and they are empty;
// rmdir refuses a group that still holds processes, so a live run's groups
// are never touched, nor anything that is not memsweep's.
void remove_stale_groups(const fs::path& parent) {
  std::error_code error;
  for (fs::directory_iterator entry(parent, error), end; !error && entry != end; entry.increment(error)) {
    const auto owner = memsweep_group_owner(entry->path().filename().string());
    if (owner && *owner != ::getpid() && owner_gone(*owner, entry->path())) ::rmdir(entry->path().c_str());
  }
}

class KernelTrialCgroup final : public TrialCgroup {
 public:
  KernelTrialCgroup(Isolation isolation, fs::path dir)
      : isolation_(isolation), path_(std::move(dir)), procs_file_((path_ / kProcsFile).string()) {}
  ~KernelTrialCgroup() override { remove_group(path_); }
  KernelTrialCgroup(const KernelTrialCgroup&) = delete;
  KernelTrialCgroup& operator=(const KernelTrialCgroup&) = delete;

  const fs::path& path() const override { return path_; }
  const std::string& procs_file() const override { return procs_file_; }

  void add(pid_t pid) override {
    if (auto refused = write_file(procs_file_, std::to_string(pid))) throw std::runtime_error(*refused);
  }

  std::vector<pid_t> members() const override { return cgroup_members(path_); }

  void kill_members() const override {
    for (const pid_t pid : members()) ::kill(pid, SIGKILL);
  }

  CgroupReport report() const override {
    CgroupReport report;
    std::optional<std::uint64_t> peak;
    if (isolation_ == Isolation::cgroup2) {
      peak = read_count(path_ / kV2Peak);
      const std::string events = read_text(path_ / kV2Events).value_or("");
      report.oom_kills = find_keyed_count(events, kOomKillKey).value_or(0);
      report.limit_hits = find_keyed_count(events, kLimitHitKey).value_or(0);
    } else {
      peak = read_count(path_ / kV1Peak);
      report.oom_kills = find_keyed_count(read_text(path_ / kV1OomControl).value_or(""), kOomKillKey).value_or(0);
      report.limit_hits = read_count(path_ / kV1LimitHits).value_or(0);
    }
    if (peak) report.peak_bytes = static_cast<std::int64_t>(*peak);
    return report;
  }

  void set_limit(std::uint64_t bytes) override {
    const fs::path limit_file = path_ / (isolation_ == Isolation::cgroup2 ? kV2Limit : kV1Limit);
    if (auto refused = write_file(limit_file, std::to_string(bytes))) throw std::runtime_error(*refused);
  }

 private:
  Isolation isolation_;
  fs::path path_;
  std::string procs_file_;
};

// What detect() settles on.
struct Placement {
  Isolation isolation = Isolation::proc;
  std::string problem;
  fs::path parent;
  std::shared_ptr<const RankLeaf> leaf;
};

Placement proc_because(std::string problem) {
  Placement placement;
  placement.problem = std::move(problem);
  return placement;
}

// The directory of `own_path` through the first mount of `version` whose
// root holds it, with `root` prefixed.
std::optional<fs::path> find_group_dir(const std::vector<CgroupMount>& mounts, CgroupVersion version,
                                       std::string_view own_path, const fs::path& root) {
  for (const CgroupMount& mount : mounts) {
    if (mount.version != version) continue;
    if (const auto dir = group_dir(mount, own_path)) return root / dir->relative_path();
  }
  return std::nullopt;
}

}  // namespace

// This process, moved from its cgroup v2 group into a leaf of that group so
// that the group could enable memory for its children. The last
// TrialCgroups copy moves it back and removes the leaf (a leaf left behind
// would keep a job's group from being removed at its end).
class RankLeaf {
 public:
  // Moves this process to own_dir/memsweep-rank-<pid> and enables memory
  // in own_dir; null with `problem` set, and the process back where it
  // was, when a step fails.
  static std::shared_ptr<const RankLeaf> move_in(const fs::path& own_dir, pid_t self, std::string& problem) {
    const fs::path leaf_dir = own_dir / (std::string(kRankLeafPrefix) + std::to_string(self));
    if (::mkdir(leaf_dir.c_str(), kGroupMode) != 0 && errno != EEXIST) {
      problem = "cannot create the leaf group " + leaf_dir.string() + ": " + errno_message(errno);
      return nullptr;
    }
    if (auto refused = write_file(leaf_dir / kProcsFile, std::to_string(self))) {
      remove_group(leaf_dir);
      problem = std::move(*refused);
      return nullptr;
    }
    if (auto refused = write_file(own_dir / kSubtreeControlFile, "+memory")) {
      write_file(own_dir / kProcsFile, std::to_string(self));
      remove_group(leaf_dir);
      problem = std::move(*refused);
      return nullptr;
    }
    return std::shared_ptr<const RankLeaf>(new RankLeaf(own_dir, leaf_dir, self));
  }

  ~RankLeaf() {
    if (::getpid() != pid_) return;  // a forked child that did not exec
    // Memory off first: the group may hold a process again only then.
    if (write_file(own_dir_ / kSubtreeControlFile, "-memory")) return;
    if (write_file(own_dir_ / kProcsFile, std::to_string(pid_))) return;
    remove_group(leaf_dir_);
  }
  RankLeaf(const RankLeaf&) = delete;
  RankLeaf& operator=(const RankLeaf&) = delete;

 private:
  RankLeaf(fs::path own_dir, fs::path leaf_dir, pid_t pid)
      : own_dir_(std::move(own_dir)), leaf_dir_(std::move(leaf_dir)), pid_(pid) {}

  fs::path own_dir_;
  fs::path leaf_dir_;
  pid_t pid_;
};

namespace {

Placement place_cgroup2(const fs::path& own_dir, const std::string& own_path) {
  std::string problem;
  const auto subtree_control = read_text(own_dir / kSubtreeControlFile, &problem);
  if (!subtree_control) return proc_because(problem);
  const fs::path procs_file = own_dir / kProcsFile;
  const auto procs_text = read_text(procs_file, &problem);
  if (!procs_text) return proc_because(problem);
  const auto procs = parse_pid_list(*procs_text);
  if (!procs) return proc_because("unexpected contents in " + procs_file.string() + ": expected one pid a line");

  Placement placement;
  const pid_t self = ::getpid();
  switch (plan_cgroup2(*subtree_control, *procs, self)) {
    case Cgroup2Step::use_own_group: break;
    case Cgroup2Step::other_processes:
      return proc_because("the cgroup2 group " + own_path + " holds other processes (" +
                          std::to_string(procs->size() - std::count(procs->begin(), procs->end(), self)) +
                          " besides this one in " + procs_file.string() +
                          "), so it cannot enable memory for groups under it");
    case Cgroup2Step::enable_memory:
      if (auto refused = write_file(own_dir / kSubtreeControlFile, "+memory")) return proc_because(*refused);
      break;
    case Cgroup2Step::move_to_leaf_and_enable:
      placement.leaf = RankLeaf::move_in(own_dir, self, problem);
      if (!placement.leaf) return proc_because(problem);
      break;
  }
  if (auto refused = probe_problem(own_dir)) return proc_because(*refused);
  remove_stale_groups(own_dir);
  placement.isolation = Isolation::cgroup2;
  placement.parent = own_dir;
  return placement;
}

Placement place_cgroup1(const fs::path& own_dir) {
  if (auto refused = probe_problem(own_dir)) return proc_because(*refused);
  remove_stale_groups(own_dir);
  Placement placement;
  placement.isolation = Isolation::cgroup1;
  placement.parent = own_dir;
  return placement;
}

std::string joined(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : "; ") + part;
  return text;
}

}  // namespace

std::vector<pid_t> cgroup_members(const fs::path& dir) {
  const fs::path procs_file = dir / kProcsFile;
  std::string problem;
  const auto text = read_text(procs_file, &problem);
  if (!text) throw std::runtime_error(problem);
  auto pids = parse_pid_list(*text);
  if (!pids) throw std::runtime_error("unexpected contents in " + procs_file.string() + ": expected one pid a line");
  return std::move(*pids);
}

std::string_view isolation_name(Isolation isolation) {
  switch (isolation) {
    case Isolation::cgroup2: return "cgroup2";
    case Isolation::cgroup1: return "cgroup1";
    case Isolation::proc: return "proc";
  }
  return "proc";
}

TrialCgroups TrialCgroups::detect() { return detect("/proc/self/cgroup", "/proc/self/mountinfo", "/"); }

TrialCgroups TrialCgroups::detect(const fs::path& proc_self_cgroup, const fs::path& mountinfo, const fs::path& root) {
  TrialCgroups found;
  try {
    std::string problem;
    const auto cgroup_text = read_text(proc_self_cgroup, &problem);
    const auto mountinfo_text = cgroup_text ? read_text(mountinfo, &problem) : std::nullopt;
    if (!mountinfo_text) {
      found.problem_ = problem;
      return found;
    }
    const ProcCgroupPaths own = parse_proc_cgroup(*cgroup_text);
    const std::vector<CgroupMount> mounts = parse_cgroup_mounts(*mountinfo_text);

    // The memory controller is in one hierarchy only: v2 when the rank's
    // unified group has it, else the v1 memory hierarchy, if any.
    std::optional<Placement> placement;
    std::vector<std::string> why_not;
    if (!own.unified) {
      why_not.push_back(proc_self_cgroup.string() + " has no cgroup2 line (0::/path)");
    } else if (const auto dir = find_group_dir(mounts, CgroupVersion::v2, *own.unified, root); !dir) {
      why_not.push_back("the cgroup2 group " + *own.unified + " is under no cgroup2 mount in " + mountinfo.string());
    } else if (const auto controllers = read_text(*dir / kControllersFile, &problem); !controllers) {
      why_not.push_back(problem);
    } else if (!lists_controller(*controllers, kMemoryController)) {
      why_not.push_back("the cgroup2 group " + *own.unified + " has no memory controller (" +
                        (*dir / kControllersFile).string() + " does not list memory)");
    } else {
      placement = place_cgroup2(*dir, *own.unified);
      found.own_oom_file_ = *dir / kV2Events;
    }
    if (!placement) {
      if (!own.memory_v1) {
        why_not.push_back(proc_self_cgroup.string() + " has no cgroup v1 memory line");
      } else if (const auto dir = find_group_dir(mounts, CgroupVersion::v1, *own.memory_v1, root); !dir) {
        why_not.push_back("the v1 memory group " + *own.memory_v1 + " is under no v1 memory mount in " +
                          mountinfo.string());
      } else {
        placement = place_cgroup1(*dir);
        found.own_oom_file_ = *dir / kV1OomControl;
      }
    }
    if (!placement) placement = proc_because(joined(why_not));

    found.isolation_ = placement->isolation;
    found.problem_ = std::move(placement->problem);
    found.parent_ = std::move(placement->parent);
    found.leaf_ = std::move(placement->leaf);
  } catch (const std::exception& error) {
    found = TrialCgroups{};
    found.problem_ = std::string("cannot look for a memory cgroup: ") + error.what();
  }
  return found;
}

std::unique_ptr<TrialCgroup> TrialCgroups::create(const std::string& name,
                                                  std::optional<std::uint64_t> limit_bytes) const {
  if (isolation_ == Isolation::proc) return nullptr;
  auto group = std::make_unique<KernelTrialCgroup>(isolation_, make_group_dir(parent_, name));
  if (limit_bytes) group->set_limit(*limit_bytes);
  // A trial that is a process tree (a user's program) is killed whole when
  // the kernel kills for memory, not left running without one of its
  // processes. Best effort: the file exists since Linux 4.19.
  if (isolation_ == Isolation::cgroup2) write_file(group->path() / kV2OomGroup, "1");
  return group;
}

std::optional<std::uint64_t> TrialCgroups::own_oom_kills() const {
  if (own_oom_file_.empty()) return std::nullopt;
  const auto text = read_text(own_oom_file_);
  return text ? find_keyed_count(*text, kOomKillKey) : std::nullopt;
}

}  // namespace memsweep::runner::detail
