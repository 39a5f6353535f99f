#pragma once
// A program trial's memory is its whole process tree (a Python launcher and
// its DataLoader workers): this probe finds the tree's processes on every
// read and sums their /proc figures (docs/runner.md, "What is summed").

#include "memsweep/sampler.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// Pure: the pids of /proc/PID/task/TID/children ("123 456 ") or of a
// cgroup's cgroup.procs (one per line). Anything that is not a pid ends
// the list.
std::vector<int> parse_pid_list(std::string_view text);

// What the tree did over its life, for the trial's row.
struct ProcessTreeStats {
  int processes_seen = 0;          // every process that was ever part of it
  std::int64_t peak_sum = -1;      // the sum of each process's largest VmHWM seen: the tree's peak at most
  std::int64_t largest_peak = -1;  // the largest single process's VmHWM seen
  std::int64_t scans = 0;          // searches of /proc for new processes, one per read that looks
};

class ProcessTreeProbe : public MemoryProbe {
 public:
  // Processes the tree has now (alive, as far as this probe knows).
  virtual std::vector<int> members() const = 0;
  virtual ProcessTreeStats stats() const = 0;
};

// The tree of `root_pid`: its descendants through the children files, and
// every process in `cgroup_procs` (a trial cgroup's cgroup.procs; empty:
// none), which also holds descendants that left the tree (setsid, a parent
// that died). A process once found stays a member until it exits, wherever
// it is reparented. read_process sums RSS and anonymous RSS over the
// members, read_pss sums PSS; read_peak_rss reads every member's VmHWM and
// returns the largest (a lower bound of the tree's peak). A member running
// in its parent's memory (CLONE_VM: vfork, posix_spawn) is counted with its
// parent only, until its exec.
std::unique_ptr<ProcessTreeProbe> make_process_tree_probe(int root_pid, std::string cgroup_procs = {});

}  // namespace memsweep
