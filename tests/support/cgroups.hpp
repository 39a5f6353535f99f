#pragma once
// The tests' view of memsweep's trial cgroups (docs/runner.md, Isolation):
// where a rank started from the test makes them, and which are left over.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <vector>

namespace memsweep::testing {

// The folder of this process's memory cgroup (v2 unified, else v1 memory),
// where a rank started from here makes its trial groups; nullopt without one.
std::optional<std::filesystem::path> own_memory_group();

// Trial groups under `parent` whose name says they belong to one of `ranks`.
std::vector<std::filesystem::path> trial_groups_of(const std::filesystem::path& parent,
                                                   const std::vector<pid_t>& ranks);

// Trial groups under `parent` ("memsweep-<pid>-trial-...") whose rank is gone.
std::vector<std::filesystem::path> trial_groups_of_dead_ranks(const std::filesystem::path& parent);

// The same, once they are gone or `patience` has passed. A dead rank's guard
// removes its trial's group moments after the rank's death, not before
// mpirun returns: a look at once races it.
std::vector<std::filesystem::path> trial_groups_of_dead_ranks_left_after(const std::filesystem::path& parent,
                                                                         std::chrono::milliseconds patience);

}  // namespace memsweep::testing
