#include "sampler/kernel_events.hpp"

#include <linux/perf_event.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace memsweep::sampler::detail {
namespace {

// A generic cache event's config: cache, operation and result, one byte each.
constexpr std::uint64_t cache_read_miss(perf_hw_cache_id cache) {
  return static_cast<std::uint64_t>(cache) | (PERF_COUNT_HW_CACHE_OP_READ << 8U) |
         (PERF_COUNT_HW_CACHE_RESULT_MISS << 16U);
}

struct GenericEvent {
  std::string_view papi_preset;                // empty: none stands for it
  std::array<std::string_view, 3> perf_names;  // as `perf list` spells them; empty slots unused
  std::uint32_t type;
  std::uint64_t config;
  std::string_view description;
};

// A PAPI preset is mapped only where the generic event counts the same
// thing, or the nearest thing the kernel offers on every CPU (said in the
// description where it differs).
constexpr std::array kGenericEvents{
    GenericEvent{"PAPI_TOT_CYC", {"cycles", "cpu-cycles"}, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "CPU cycles"},
    GenericEvent{
        "PAPI_TOT_INS", {"instructions"}, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, "instructions retired"},
    GenericEvent{"PAPI_L1_DCM",
                 {"L1-dcache-load-misses"},
                 PERF_TYPE_HW_CACHE,
                 cache_read_miss(PERF_COUNT_HW_CACHE_L1D),
                 "L1 data cache read misses (PAPI_L1_DCM counts write misses too)"},
    GenericEvent{"PAPI_L3_TCM",
                 {"cache-misses"},
                 PERF_TYPE_HARDWARE,
                 PERF_COUNT_HW_CACHE_MISSES,
                 "last-level cache misses, as the kernel defines them for this CPU"},
    GenericEvent{"",
                 {"LLC-load-misses"},
                 PERF_TYPE_HW_CACHE,
                 cache_read_miss(PERF_COUNT_HW_CACHE_LL),
                 "last-level cache read misses"},
    GenericEvent{"",
                 {"cache-references"},
                 PERF_TYPE_HARDWARE,
                 PERF_COUNT_HW_CACHE_REFERENCES,
                 "last-level cache accesses, as the kernel defines them for this CPU"},
    GenericEvent{"PAPI_TLB_DM",
                 {"dTLB-load-misses"},
                 PERF_TYPE_HW_CACHE,
                 cache_read_miss(PERF_COUNT_HW_CACHE_DTLB),
                 "data TLB read misses"},
    GenericEvent{
        "PAPI_BR_MSP", {"branch-misses"}, PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, "mispredicted branches"},
    GenericEvent{"PAPI_BR_INS",
                 {"branches", "branch-instructions"},
                 PERF_TYPE_HARDWARE,
                 PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
                 "branch instructions"},
    GenericEvent{"", {"page-faults", "faults"}, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page faults"},
    GenericEvent{
        "", {"minor-faults"}, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, "minor page faults (no disk read)"},
    GenericEvent{
        "", {"major-faults"}, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, "major page faults (read from disk)"},
    GenericEvent{
        "", {"context-switches", "cs"}, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, "context switches"},
    GenericEvent{"",
                 {"cpu-migrations", "migrations"},
                 PERF_TYPE_SOFTWARE,
                 PERF_COUNT_SW_CPU_MIGRATIONS,
                 "moves of a thread to another CPU"},
};

constexpr std::string_view kPerfPrefix = "perf::";

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool is_perf_name(const GenericEvent& event, std::string_view name) {
  return std::any_of(event.perf_names.begin(), event.perf_names.end(), [&](std::string_view perf_name) {
    return !perf_name.empty() && same_ignoring_case(perf_name, name);
  });
}

}  // namespace

std::variant<KernelEvent, std::string> kernel_event(std::string_view name) {
  const auto to_event = [](const GenericEvent& event) {
    return KernelEvent{event.type, event.config, std::string(event.description)};
  };
  if (name.starts_with("PAPI_")) {
    for (const GenericEvent& event : kGenericEvents)
      if (event.papi_preset == name) return to_event(event);
    return std::string(
        "no generic kernel event stands for this PAPI preset (they count cycles, instructions, "
        "branches, L1D, LLC and dTLB read misses, and software events)");
  }
  const std::string_view bare = name.starts_with(kPerfPrefix) ? name.substr(kPerfPrefix.size()) : name;
  for (const GenericEvent& event : kGenericEvents)
    if (is_perf_name(event, bare)) return to_event(event);
  return std::string(
      "not a generic kernel event's name (perf's names: cycles, instructions, cache-misses, "
      "L1-dcache-load-misses, LLC-load-misses, dTLB-load-misses, branch-misses, page-faults, "
      "minor-faults, major-faults, context-switches, ...)");
}

}  // namespace memsweep::sampler::detail
