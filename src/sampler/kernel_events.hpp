#pragma once
// The kernel's generic perf events: what memsweep counts when PAPI cannot
// name an event (its CPU component is disabled on a CPU newer than its
// libpfm4, or it does not know the name). The kernel maps each generic event
// to the CPU's own on every CPU it supports, so these need no event table of
// ours or libpfm4's. docs/sampler.md, "Counter sources", lists them.

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace memsweep::sampler::detail {

struct KernelEvent {
  std::uint32_t type = 0;  // PERF_TYPE_HARDWARE, PERF_TYPE_HW_CACHE or PERF_TYPE_SOFTWARE
  std::uint64_t config = 0;
  std::string description;
};

// The generic event for `name`, or why there is none. Accepted: the PAPI
// presets that have a generic equivalent, perf's own names (`cycles`,
// `page-faults`, `L1-dcache-load-misses`, ...; any case, with or without the
// `perf::` prefix of PAPI's native names).
std::variant<KernelEvent, std::string> kernel_event(std::string_view name);

}  // namespace memsweep::sampler::detail
