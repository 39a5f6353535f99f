#pragma once
// Pure parsers of the /proc files the sampler reads, tested on strings; the
// reading (pread on open descriptors) is in proc_reader.cpp.

#include "memsweep/sampler.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace memsweep::sampler::detail {

// /proc/self/statm, in pages: "size resident shared text lib data dt".
struct StatmPages {
  std::int64_t size = 0;
  std::int64_t resident = 0;
  std::int64_t shared = 0;  // resident file-backed and shared-memory pages
};
std::optional<StatmPages> parse_statm(std::string_view text);
// RSS = resident; anonymous RSS = resident - shared, as the kernel counts them.
ProcessMemory process_memory_from_statm(const StatmPages& pages, std::int64_t page_bytes);

// /proc/self/status, the memory lines (bytes; -1 when missing).
struct StatusMemory {
  std::int64_t rss_bytes = -1;       // VmRSS
  std::int64_t peak_rss_bytes = -1;  // VmHWM
  std::int64_t anon_rss_bytes = -1;  // RssAnon
  std::int64_t file_rss_bytes = -1;  // RssFile
  std::int64_t shmem_rss_bytes = -1;
};
// Empty when no memory line is present.
std::optional<StatusMemory> parse_status(std::string_view text);

// /proc/meminfo. Empty when a field of formula 1 (MemTotal, MemFree,
// Buffers, Cached) is missing; MemAvailable and Active may be (-1).
std::optional<SystemMemory> parse_meminfo(std::string_view text);

// /proc/self/smaps_rollup (bytes; -1 when missing). Empty without Pss.
struct SmapsRollup {
  std::int64_t rss_bytes = -1;
  std::int64_t pss_bytes = -1;
  std::int64_t pss_anon_bytes = -1;
};
std::optional<SmapsRollup> parse_smaps_rollup(std::string_view text);

// The value of a "Key:   123 kB" line in bytes, or -1. The key must start a
// line; the unit is optional (then the number is taken as it is).
std::int64_t find_kib_field(std::string_view text, std::string_view key);

}  // namespace memsweep::sampler::detail
