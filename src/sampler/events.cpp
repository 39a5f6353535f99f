// Which events to count: the candidates memsweep knows, the default set, and
// the resolution of a requested list into what this machine counts.
// Missing events are reported and left out; none is ever fatal.

#include "memsweep/sampler.hpp"
#include "sampler/counters.hpp"
#include "sampler/perf_counters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string_view>

namespace memsweep {
namespace {

// Cache and TLB misses, loads and stores: the memory hierarchy's load.
constexpr std::array<std::string_view, 6> kMemoryPresets{
    "PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_L3_TCM", "PAPI_TLB_DM", "PAPI_LD_INS", "PAPI_SR_INS",
};
// Offered, not defaults: useful for rates (misses per instruction).
constexpr std::array<std::string_view, 2> kOtherPresets{"PAPI_TOT_INS", "PAPI_TOT_CYC"};
// Software events: the kernel counts them on every machine, VMs included.
constexpr std::array<std::string_view, 4> kSoftwareEvents{
    "perf::PAGE-FAULTS",
    "perf::MINOR-FAULTS",
    "perf::MAJOR-FAULTS",
    "perf::CONTEXT-SWITCHES",
};

struct Resolved {
  EventStatus status;
  std::optional<detail::EncodedEvent> encoded;
};

Resolved resolve(const std::string& name) {
  Resolved resolved;
  resolved.status.name = name;
  try {
    resolved.encoded = detail::encode_event(detail::resolve_papi_event(name));
    resolved.status.available = true;
    resolved.status.detail = resolved.encoded->description;
    if (!resolved.encoded->kernel_counted) resolved.status.detail += " (user level only)";
  } catch (const detail::CounterError& error) {
    resolved.status.detail = error.what();
  }
  return resolved;
}

}  // namespace

std::vector<std::string> candidate_events() {
  std::vector<std::string> names;
  for (const auto list :
       {std::span<const std::string_view>(kMemoryPresets), std::span<const std::string_view>(kOtherPresets),
        std::span<const std::string_view>(kSoftwareEvents)})
    for (const std::string_view name : list) names.emplace_back(name);
  return names;
}

std::vector<std::string> default_events() {
  std::vector<std::string> names;
  for (const std::string_view name : kMemoryPresets)
    if (resolve(std::string(name)).status.available) names.emplace_back(name);
  for (const std::string_view name : kSoftwareEvents) names.emplace_back(name);
  return names;
}

std::vector<EventStatus> probe_events(const std::vector<std::string>& names) {
  std::vector<EventStatus> statuses;
  for (const std::string& name : names) statuses.push_back(resolve(name).status);
  return statuses;
}

CounterSetup open_counters(const std::vector<std::string>& requested) {
  const std::vector<std::string> names = requested.empty() ? default_events() : requested;
  CounterSetup setup;
  std::vector<detail::EncodedEvent> recorded;
  for (const std::string& name : names) {
    if (std::any_of(setup.events.begin(), setup.events.end(), [&](const EventStatus& s) { return s.name == name; })) {
      setup.events.push_back({name, false, "listed twice; counted once"});
      continue;
    }
    Resolved resolved = resolve(name);
    if (resolved.status.available && recorded.size() == kMaxCounters) {
      resolved.status.available = false;
      resolved.status.detail = fmt::format("more than {} events; this one is left out", kMaxCounters);
    }
    if (resolved.status.available) recorded.push_back(std::move(*resolved.encoded));
    setup.events.push_back(std::move(resolved.status));
  }
  if (!recorded.empty()) setup.source = detail::make_perf_counter_source(std::move(recorded));
  return setup;
}

std::string counter_library_version() {
  try {
    return detail::papi_version();
  } catch (const detail::CounterError& error) {
    return error.what();
  }
}

}  // namespace memsweep
