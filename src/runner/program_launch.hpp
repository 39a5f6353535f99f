#pragma once
// What starting a user's program takes besides the fork: its executable
// found as a shell would, its environment, its log files, and the end of
// its stderr for a failure's message (docs/runner.md, "Programs").

#include "memsweep/program.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner_detail {

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

// This process's environment as "NAME=value" entries.
std::vector<std::string> current_environment();

// The value of `name` in "NAME=value" entries, or nullopt.
std::optional<std::string> environment_value(const std::vector<std::string>& environment, std::string_view name);

// Pure: the last `max_lines` non-blank lines of `text`, joined with " | ",
// at most `max_bytes` (cut at the front, on a UTF-8 boundary).
std::string output_tail(std::string_view text, int max_lines, std::size_t max_bytes);

// The last `max_bytes` of a file (for output_tail), or empty.
std::string read_file_end(int fd, std::size_t max_bytes);

}  // namespace memsweep::runner_detail
