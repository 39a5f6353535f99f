#include "sampler/proc_parsers.hpp"

#include <charconv>

namespace memsweep {

std::int64_t SystemMemory::used_bytes() const {
  if (total_bytes < 0 || free_bytes < 0 || buffers_bytes < 0 || cached_bytes < 0) return -1;
  return total_bytes - (free_bytes + buffers_bytes + cached_bytes);
}

}  // namespace memsweep

namespace memsweep::sampler::detail {
namespace {

constexpr std::int64_t kBytesPerKiB = 1024;

std::string_view skip_blanks(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t");
  return start == std::string_view::npos ? std::string_view{} : text.substr(start);
}

// Parses a non-negative integer at the start of `text` and advances past it.
std::optional<std::int64_t> take_number(std::string_view& text) {
  text = skip_blanks(text);
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || value < 0) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return value;
}

}  // namespace

std::optional<StatmPages> parse_statm(std::string_view text) {
  StatmPages pages;
  const auto size = take_number(text);
  const auto resident = take_number(text);
  const auto shared = take_number(text);
  if (!size || !resident || !shared || *shared > *resident) return std::nullopt;
  pages.size = *size;
  pages.resident = *resident;
  pages.shared = *shared;
  return pages;
}

ProcessMemory process_memory_from_statm(const StatmPages& pages, std::int64_t page_bytes) {
  return {pages.resident * page_bytes, (pages.resident - pages.shared) * page_bytes};
}

std::int64_t find_kib_field(std::string_view text, std::string_view key) {
  std::size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    const std::size_t colon = at + key.size();
    if (line_start && colon < text.size() && text[colon] == ':') {
      std::string_view rest = text.substr(colon + 1);
      const auto value = take_number(rest);
      if (!value) return -1;
      rest = skip_blanks(rest);
      return rest.starts_with("kB") ? *value * kBytesPerKiB : *value;
    }
    at = colon;
  }
  return -1;
}

std::optional<StatusMemory> parse_status(std::string_view text) {
  StatusMemory memory;
  memory.rss_bytes = find_kib_field(text, "VmRSS");
  memory.peak_rss_bytes = find_kib_field(text, "VmHWM");
  memory.anon_rss_bytes = find_kib_field(text, "RssAnon");
  memory.file_rss_bytes = find_kib_field(text, "RssFile");
  memory.shmem_rss_bytes = find_kib_field(text, "RssShmem");
  if (memory.rss_bytes < 0 && memory.peak_rss_bytes < 0 && memory.anon_rss_bytes < 0) return std::nullopt;
  return memory;
}

std::optional<SystemMemory> parse_meminfo(std::string_view text) {
  SystemMemory memory;
  memory.total_bytes = find_kib_field(text, "MemTotal");
  memory.free_bytes = find_kib_field(text, "MemFree");
  memory.buffers_bytes = find_kib_field(text, "Buffers");
  memory.cached_bytes = find_kib_field(text, "Cached");
  memory.available_bytes = find_kib_field(text, "MemAvailable");
  memory.active_bytes = find_kib_field(text, "Active");
  if (memory.total_bytes < 0 || memory.free_bytes < 0 || memory.buffers_bytes < 0 || memory.cached_bytes < 0)
    return std::nullopt;
  return memory;
}

std::optional<SmapsRollup> parse_smaps_rollup(std::string_view text) {
  SmapsRollup rollup;
  rollup.rss_bytes = find_kib_field(text, "Rss");
  rollup.pss_bytes = find_kib_field(text, "Pss");
  rollup.pss_anon_bytes = find_kib_field(text, "Pss_Anon");
  if (rollup.pss_bytes < 0) return std::nullopt;
  return rollup;
}

}  // namespace memsweep::sampler::detail
