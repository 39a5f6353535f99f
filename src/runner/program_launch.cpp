#include "runner/program_launch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

extern char** environ;

namespace memsweep::runner::detail {
namespace {

std::string_view name_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::optional<std::string> find_executable(const std::string& name, std::string_view path_list,
                                           const std::filesystem::path& workdir) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    const std::filesystem::path path = name;
    const std::string full = path.is_relative() && !workdir.empty() ? (workdir / path).string() : name;
    if (unrunnable(full).empty()) return full;
    return std::nullopt;
  }
  // As execvp does: an empty entry is the working folder.
  return find_on_path(name, path_list, workdir.empty() ? std::filesystem::path(".") : workdir);
}

std::vector<std::string> merged_environment(const std::vector<std::string>& base,
                                            const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> merged;
  for (const std::string& entry : base) {
    const bool replaced =
        std::any_of(overrides.begin(), overrides.end(), [&](const auto& pair) { return pair.first == name_of(entry); });
    if (!replaced) merged.push_back(entry);
  }
  for (const auto& [name, value] : overrides) merged.push_back(name + "=" + value);
  return merged;
}

std::int64_t program_max_rss(std::int64_t max_rss_bytes, std::int64_t pre_exec_peak_bytes) {
  if (max_rss_bytes < 0 || pre_exec_peak_bytes < 0) return -1;
  return max_rss_bytes > pre_exec_peak_bytes + kPreExecGrowthBytes ? max_rss_bytes : -1;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) entries.emplace_back(*entry);
  return entries;
}

std::optional<std::string> environment_value(const std::vector<std::string>& environment, std::string_view name) {
  for (const std::string& entry : environment)
    if (name_of(entry) == name && entry.size() > name.size()) return entry.substr(name.size() + 1);
  return std::nullopt;
}

bool says_cuda_out_of_memory(std::string_view text) {
  for (const std::string_view words :
       {"CUDA out of memory", "OutOfMemoryError", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation"})
    if (text.find(words) != std::string_view::npos) return true;
  return false;
}

std::string output_tail(std::string_view text, int max_lines, std::size_t max_bytes) {
  std::vector<std::string_view> lines;
  while (!text.empty() && static_cast<int>(lines.size()) < max_lines) {
    const std::size_t newline = text.find_last_of('\n', text.size() - 1);
    const std::size_t start = newline == std::string_view::npos ? 0 : newline + 1;
    std::string_view line = text.substr(start);
    text = text.substr(0, newline == std::string_view::npos ? 0 : newline);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") != std::string_view::npos) lines.push_back(line);
  }
  std::string joined;
  for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
    if (!joined.empty()) joined += " | ";
    joined += *line;
  }
  if (joined.size() <= max_bytes) return joined;
  std::size_t cut = joined.size() - max_bytes;
  // Not in the middle of a UTF-8 sequence: continuation bytes are 10xxxxxx.
  while (cut < joined.size() && (static_cast<unsigned char>(joined[cut]) & 0xC0) == 0x80) ++cut;
  return "…" + joined.substr(cut);
}

}  // namespace memsweep::runner::detail
