#include "runner/oom_evidence.hpp"

#include "runner/cgroup_files.hpp"

#include <fstream>
#include <sstream>

namespace memsweep::runner::detail {
namespace {

bool increased(const std::optional<std::uint64_t>& before, const std::optional<std::uint64_t>& after) {
  return before && after && *after > *before;
}

}  // namespace

OomCounters read_oom_counters(const TrialCgroups& cgroups) {
  OomCounters counters;
  counters.own_group = cgroups.own_oom_kills();
  std::ifstream file("/proc/vmstat");
  std::stringstream text;
  text << file.rdbuf();
  counters.node = parse_vmstat_oom_kills(text.str());
  return counters;
}

std::string oom_kill_seen(const OomCounters& before, const OomCounters& after, const TrialCgroup* trial_group) {
  if (trial_group != nullptr && trial_group->report().oom_kills > 0) return "the trial's cgroup";
  if (increased(before.own_group, after.own_group)) return "the rank's cgroup";
  if (increased(before.node, after.node)) return "/proc/vmstat";
  return {};
}

}  // namespace memsweep::runner::detail
