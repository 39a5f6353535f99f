#pragma once
// Pure parsers of the files that say where a process's cgroups are and what
// they count (/proc/self/cgroup, /proc/self/mountinfo, the memory
// controller's files, /proc/vmstat), and the cgroup v2 decision of how to
// make groups under one's own, all tested on strings. The reading and
// writing is trial_cgroup.cpp's.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

// The cgroup controller a trial's group needs, as cgroup.controllers and
// the v1 mount options name it.
inline constexpr std::string_view kMemoryController = "memory";

// /proc/self/cgroup: the process's group in the unified (v2) hierarchy, the
// line "0::/path", and in the v1 hierarchy that holds the memory controller,
// a line "N:ctrl1,memory,ctrl2:/path". Either is empty when absent.
struct ProcCgroupPaths {
  std::optional<std::string> unified;
  std::optional<std::string> memory_v1;
};
ProcCgroupPaths parse_proc_cgroup(std::string_view text);

enum class CgroupVersion { v1, v2 };

// A mount of a cgroup hierarchy, from /proc/self/mountinfo.
struct CgroupMount {
  CgroupVersion version = CgroupVersion::v2;
  // Field 4: which group of the hierarchy the mount shows at its mount
  // point. "/" usually; a container's bind mount or a mount made outside its
  // cgroup namespace shows "/docker/<id>", "/..", etc.
  std::string root;
  std::filesystem::path mount_point;  // octal escapes (\040 for a space) decoded
};
// The cgroup2 mounts and the v1 mounts ("cgroup") whose super options name
// the memory controller, in the file's order. Lines that do not parse are
// skipped: mountinfo is the kernel's, and one odd line must not hide the rest.
std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo);

// Where the group `own_path` (as /proc/self/cgroup names it) is through
// `mount`: its mount point + own_path relative to the mount's root. Empty
// when the group is not under that root (compared by path components), or
// when either path climbs ("/.."), as seen from inside a cgroup namespace.
std::optional<std::filesystem::path> group_dir(const CgroupMount& mount, std::string_view own_path);

// The value of `key` in "key value" lines (memory.events, memory.stat,
// memory.oom_control, /proc/vmstat). The whole first word must match:
// "oom_kill" does not match "oom_kill_disable".
std::optional<std::uint64_t> find_keyed_count(std::string_view text, std::string_view key);

// /proc/vmstat's node-wide count of OOM kills, the fallback evidence when
// the process's group has no memory controller to ask.
inline std::optional<std::uint64_t> parse_vmstat_oom_kills(std::string_view vmstat) {
  return find_keyed_count(vmstat, "oom_kill");
}

// A file holding one number (memory.peak, memory.max_usage_in_bytes,
// memory.failcnt), with or without its newline.
std::optional<std::uint64_t> parse_single_count(std::string_view text);

// Whether a space-separated list of controllers (cgroup.controllers,
// cgroup.subtree_control) names `controller`.
bool lists_controller(std::string_view list, std::string_view controller);

// cgroup.procs: one pid a line. Empty when a line is not a pid.
std::optional<std::vector<pid_t>> parse_pid_list(std::string_view text);

// The rank's pid in the name of a group memsweep made: a trial's
// ("memsweep-<pid>-trial-<n>", with a "-<k>" suffix when the name was
// taken) or the check's ("memsweep-probe-<pid>"). nullopt for any other
// name: groups that are not memsweep's are never touched.
std::optional<pid_t> memsweep_group_owner(std::string_view name);

// How to make memory-limited groups under one's own cgroup v2 group, whose
// cgroup.controllers lists memory. A group's children get the memory
// controller only when it is in the group's cgroup.subtree_control, and
// (the no-internal-process rule) a group other than the root cannot enable
// it while it holds processes.
enum class Cgroup2Step {
  use_own_group,            // memory is in subtree_control already
  enable_memory,            // no process in the group: write +memory
  move_to_leaf_and_enable,  // only this process: move it to a leaf of its own first
  other_processes,          // processes besides this one: no groups to be had
};
Cgroup2Step plan_cgroup2(std::string_view subtree_control, const std::vector<pid_t>& procs, pid_t self);

}  // namespace memsweep::runner::detail
