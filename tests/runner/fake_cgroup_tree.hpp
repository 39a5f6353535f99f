#pragma once
// Fake cgroup trees for the tests of trial cgroups and of the runner's
// steps on them: /proc/self/cgroup, mountinfo and the mount's folders as
// plain files in a temp dir, read by TrialCgroups::detect(files, root).

#include "runner/trial_cgroup.hpp"
#include "support/temp_dir.hpp"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace memsweep::testing {

// A fake /proc/self/cgroup, mountinfo and mount directory in a temp dir; the
// own group's directory is `own_dir`.
struct FakeTree {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::filesystem::path proc_cgroup;
  std::filesystem::path mountinfo;
  std::filesystem::path own_dir;

  FakeTree(std::string_view proc_cgroup_text, std::string_view mountinfo_text,
           const std::filesystem::path& own_relative) {
    proc_cgroup = dir->write("proc/self/cgroup", proc_cgroup_text);
    mountinfo = dir->write("proc/self/mountinfo", mountinfo_text);
    own_dir = root() / own_relative;
    std::filesystem::create_directories(own_dir);
  }
  const std::filesystem::path& root() const { return dir->path(); }
  // Writes `file`, a path inside the tree.
  void write(const std::filesystem::path& file, std::string_view text) const {
    dir->write(file.lexically_relative(root()).string(), text);
  }
  void write_own(const std::filesystem::path& name, std::string_view text) const { write(own_dir / name, text); }
  runner::detail::TrialCgroups detect() const {
    return runner::detail::TrialCgroups::detect(proc_cgroup, mountinfo, root());
  }
};

inline constexpr std::string_view kV2Mountinfo =
    "41 31 0:38 / /sys/fs/cgroup rw,relatime shared:9 - cgroup2 cgroup2 rw\n";

inline std::string self_pid() { return std::to_string(::getpid()); }

// A cgroup2 tree whose own group has memory among its controllers.
inline FakeTree fake_v2(std::string_view subtree_control, std::string_view procs) {
  FakeTree tree("0::/job_7/task_0\n", kV2Mountinfo, "sys/fs/cgroup/job_7/task_0");
  tree.write_own("cgroup.controllers", "cpu io memory pids\n");
  tree.write_own("cgroup.subtree_control", subtree_control);
  tree.write_own("cgroup.procs", procs);
  tree.write_own("memory.events", "low 0\nhigh 0\nmax 0\noom 3\noom_kill 3\noom_group_kill 0\n");
  return tree;
}

}  // namespace memsweep::testing
