#pragma once
// What starting a user's program takes besides the fork: its executable
// found as a shell would, its environment, its log files, and the end of
// its stderr for a failure's message (docs/runner.md, "Programs").

#include "memsweep/program.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

// `name` as execve needs it: a name with a '/' is a path (relative ones
// against `workdir` when given); any other is looked up on `path_list`
// (PATH's ':'-separated folders). nullopt when no executable regular file
// is found.
std::optional<std::string> find_executable(const std::string& name, std::string_view path_list,
                                           const std::filesystem::path& workdir);

// "NAME=value" entries: `base` (the rank's environment), with `overrides`
// replacing or adding entries. Order: base's, then the new names.
std::vector<std::string> merged_environment(const std::vector<std::string>& base,
                                            const std::vector<std::pair<std::string, std::string>>& overrides);

// How far a program's child may grow beyond the rank's image and its own
// reading at the start gate before it execs: the code it faults in on its
// way (libc's and memsweep's pages, 64 KiB a fault with the kernel's fault
// around; over 1 MiB was seen when the reading came early), and the
// kernel's unsynced RSS counters of older kernels. Generous: a program
// whose peak is below the bound is still seen by the samples and checks.
inline constexpr std::int64_t kPreExecGrowthBytes = std::int64_t{2} << 20;

// Pure: wait4's ru_maxrss of a program, where it is surely the program's;
// -1 where it may be the rank's. The child runs the rank's image (a fork)
// until its exec, and Linux keeps that image's peak RSS in the process's
// maxrss across the exec (fs/exec.c, exec_mmap; with vfork and posix_spawn
// too), so ru_maxrss is max(rank's image, program, descendants it waited
// for). Above the image's peak (`pre_exec_peak_bytes`, plus the growth
// allowed before the exec), that maximum cannot be the image's; at or
// below it, it says nothing about the program. -1 for either: unknown.
std::int64_t program_max_rss(std::int64_t max_rss_bytes, std::int64_t pre_exec_peak_bytes);

// This process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// The value of `name` in "NAME=value" entries, or nullopt.
std::optional<std::string> environment_value(const std::vector<std::string>& environment, std::string_view name);

// Pure: the last `max_lines` non-blank lines of `text`, joined with " | ",
// at most `max_bytes` (cut at the front, on a UTF-8 boundary).
std::string output_tail(std::string_view text, int max_lines, std::size_t max_bytes);

// Pure: whether a program's stderr says CUDA ran out of memory, as
// PyTorch ("CUDA out of memory", torch.cuda.OutOfMemoryError) and the
// CUDA runtime and driver (CUDA_ERROR_OUT_OF_MEMORY,
// cudaErrorMemoryAllocation) word it.
bool says_cuda_out_of_memory(std::string_view text);

}  // namespace memsweep::runner::detail
