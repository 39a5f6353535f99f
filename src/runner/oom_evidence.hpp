#pragma once
// Whether the kernel's OOM killer struck while a trial ran: the counters
// the kernel keeps, read before and after. The trial's own cgroup says it
// for that process alone; the rank's own cgroup (a job's limit, where no
// trial group could be made) and /proc/vmstat (the whole node) only that
// some process was killed, which, for a trial process killed by SIGKILL at
// that moment, is all but certainly the trial.

#include "runner/trial_cgroup.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace memsweep::runner::detail {

struct OomCounters {
  std::optional<std::uint64_t> own_group;  // the rank's own memory cgroup
  std::optional<std::uint64_t> node;       // /proc/vmstat oom_kill
};

OomCounters read_oom_counters(const TrialCgroups& cgroups);

// Where an OOM kill between `before` and `after` shows ("the trial's
// cgroup", "the rank's cgroup", "/proc/vmstat"); empty when nowhere.
std::string oom_kill_seen(const OomCounters& before, const OomCounters& after, const TrialCgroup* trial_group);

}  // namespace memsweep::runner::detail
