#pragma once
// One memory cgroup per trial, where the node lets the rank make one under
// its own group (cgroup v2, or the v1 memory controller): the trial's limit
// (the budget), its exact peak, and the kernel's word on an OOM kill.
// Without a writable group, the runner measures through /proc alone
// (Isolation::proc). docs/runner.md, "Isolation".

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

enum class Isolation { cgroup2, cgroup1, proc };
std::string_view isolation_name(Isolation isolation);  // "cgroup2", "cgroup1", "proc"

// What a trial's group says once the trial's process has ended.
struct CgroupReport {
  std::int64_t peak_bytes = -1;  // v2 memory.peak (kernels >= 5.19), v1 memory.max_usage_in_bytes; -1: none
  std::uint64_t oom_kills = 0;   // v2 memory.events oom_kill, v1 memory.oom_control oom_kill
  std::uint64_t limit_hits = 0;  // v2 memory.events max, v1 memory.failcnt
};

// One trial's group. Removed (with retries while the kernel lets go of the
// ended process) when destroyed; never throws then. It alone writes and
// reads the group's cgroup.procs.
class TrialCgroup {
 public:
  virtual ~TrialCgroup() = default;
  virtual const std::filesystem::path& path() const = 0;
  // The group's cgroup.procs, for a reader that follows the group itself
  // (the sampler's tree probe); nobody else opens it.
  virtual const std::string& procs_file() const = 0;
  // Moves `pid` into the group. The runner does it while the trial's
  // process execs (the move and the exec's loading take about as long, and
  // overlap). Throws std::runtime_error naming the file.
  virtual void add(pid_t pid) = 0;
  // The processes in the group now, from the whole of its cgroup.procs.
  // Throws std::runtime_error naming the file when it cannot be read or
  // holds a line that is not a pid.
  virtual std::vector<pid_t> members() const = 0;
  // SIGKILL to every process in the group now. Throws as members() does:
  // then none was killed.
  virtual void kill_members() const = 0;
  // Read after the trial's process has ended (or while it runs).
  virtual CgroupReport report() const = 0;
  // Sets the group's memory limit (v2 memory.max, v1 memory.limit_in_bytes)
  // once the process is in it: the runner first checks the ready process
  // against the budget, so that a limit under its start-up memory does not
  // kill it on the way. Throws std::runtime_error naming the file.
  virtual void set_limit(std::uint64_t bytes) = 0;
};

// The processes in the group at `dir` (any group, memsweep's or not), as
// TrialCgroup::members(): for the trial guard, which has only the path.
std::vector<pid_t> cgroup_members(const std::filesystem::path& dir);

class RankLeaf;

// Where trial groups are made: found once per rank.
//
// cgroup v2: under the rank's own group when memory is in its
// cgroup.subtree_control. When it is not and the group holds this process
// alone, the process moves to a leaf of its own, memsweep-rank-<pid>, so
// that memory can be enabled (a group with processes cannot), and trial
// groups are the leaf's siblings; the last copy of the TrialCgroups moves
// the process back and removes the leaf. cgroup v1: under the rank's own
// memory group.
class TrialCgroups {
 public:
  // From /proc/self/cgroup and /proc/self/mountinfo (or the given files, for
  // tests, with `root` prefixed to the mount points found). Tries to create
  // and remove a group to be sure; never throws: Isolation::proc, with
  // problem() saying why, when no group can be made.
  static TrialCgroups detect();
  static TrialCgroups detect(const std::filesystem::path& proc_self_cgroup, const std::filesystem::path& mountinfo,
                             const std::filesystem::path& root);

  Isolation isolation() const { return isolation_; }
  const std::string& problem() const { return problem_; }  // why proc; empty otherwise
  const std::filesystem::path& parent() const { return parent_; }

  // A new group named `name` under parent(), with `limit_bytes` as its
  // memory limit (v2 memory.max, v1 memory.limit_in_bytes) when set. Throws
  // std::runtime_error naming the file when the group cannot be made;
  // nullptr when isolation() is proc. A stale group of that name (a
  // crashed run's) is removed when empty, else the name gets a suffix
  // ("-2", "-3", …): path() says which.
  std::unique_ptr<TrialCgroup> create(const std::string& name, std::optional<std::uint64_t> limit_bytes) const;

  // OOM kills the kernel counted in the rank's own group (v2 memory.events
  // oom_kill, which counts the groups below it too; v1 memory.oom_control
  // oom_kill, which counts only processes in the group itself). Read before
  // and after a trial as evidence of an OOM kill, also when isolation() is
  // proc and the trial's process runs in the rank's group. Empty when the
  // rank's group has no memory controller (then parse_vmstat_oom_kills()
  // is the node-wide fallback).
  std::optional<std::uint64_t> own_oom_kills() const;

 private:
  Isolation isolation_ = Isolation::proc;
  std::string problem_;
  std::filesystem::path parent_;
  std::filesystem::path own_oom_file_;    // empty: none
  std::shared_ptr<const RankLeaf> leaf_;  // cgroup v2, when this process was moved to a leaf
};

}  // namespace memsweep::runner::detail
