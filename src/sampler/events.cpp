// Which events to count: the candidates memsweep knows, the default set, and
// the resolution of a requested list into what this machine counts.
// Missing events are reported and left out; none is ever fatal.

#include "sampler/event_resolution.hpp"
#include "sampler/kernel_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>
#include <string_view>
#include <variant>

namespace memsweep {
namespace {

// Cache and TLB misses, loads and stores: the memory hierarchy's load.
constexpr std::array<std::string_view, 6> kMemoryPresets{
    "PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_L3_TCM", "PAPI_TLB_DM", "PAPI_LD_INS", "PAPI_SR_INS",
};
// Offered, not defaults: useful for rates (misses per instruction).
constexpr std::array<std::string_view, 3> kOtherPresets{"PAPI_TOT_INS", "PAPI_TOT_CYC", "PAPI_BR_MSP"};
// Software events: the kernel counts them on every machine, VMs included.
constexpr std::array<std::string_view, 4> kSoftwareEvents{
    "perf::PAGE-FAULTS",
    "perf::MINOR-FAULTS",
    "perf::MAJOR-FAULTS",
    "perf::CONTEXT-SWITCHES",
};

EventStatus unavailable(const std::string& name, std::string why) {
  EventStatus status;
  status.name = name;
  status.detail = std::move(why);
  return status;
}

}  // namespace

namespace sampler::detail {

std::vector<WayToCount> ways_to_count(const std::string& name, CounterSourceChoice choice, const EventNamer& papi) {
  std::vector<WayToCount> ways;
  if (choice != CounterSourceChoice::kernel) {
    WayToCount& way = ways.emplace_back();
    way.source = EventSource::papi;
    try {
      way.encoded = encode_event(papi.resolve(name));
    } catch (const CounterError& error) {
      way.why_not = error.what();
    }
  }
  if (choice != CounterSourceChoice::papi) {
    WayToCount& way = ways.emplace_back();
    way.source = EventSource::kernel;
    std::variant<KernelEvent, std::string> generic = kernel_event(name);
    if (const auto* event = std::get_if<KernelEvent>(&generic))
      way.encoded = encode_event(name, *event);
    else
      way.why_not = std::move(std::get<std::string>(generic));
  }
  return ways;
}

// A source that names the event but whose counter will not open (a hardware
// event in a VM) gives way to the next: the kernel's generic event may still
// count where a PAPI encoding does not.
ResolvedEvent resolve_event(const std::string& name, CounterSourceChoice choice, const EventNamer& papi) {
  ResolvedEvent resolved;
  resolved.status.name = name;
  std::vector<std::string> reasons;
  for (WayToCount& way : ways_to_count(name, choice, papi)) {
    if (!way.encoded) {
      reasons.push_back(std::move(way.why_not));
      continue;
    }
    EncodedEvent& candidate = *way.encoded;
    try {
      check_counts(candidate);
    } catch (const CounterError& error) {
      reasons.emplace_back(error.what());
      continue;
    }
    resolved.status.available = true;
    resolved.status.source = candidate.source;
    resolved.status.encoding = candidate.encoding();
    resolved.status.detail = candidate.description;
    if (!candidate.kernel_counted) resolved.status.detail += " (user level only)";
    resolved.encoded = std::move(candidate);
    return resolved;
  }
  resolved.status.detail = fmt::format("{}", fmt::join(reasons, "; "));
  return resolved;
}

}  // namespace sampler::detail

std::string_view event_source_name(EventSource source) {
  switch (source) {
    case EventSource::papi: return "papi";
    case EventSource::kernel: return "kernel";
    case EventSource::none: break;
  }
  return "";
}

std::string encoding_text(std::span<const EventEncoding> terms) {
  std::string text;
  for (const EventEncoding& term : terms) {
    if (!text.empty()) text += term.sign < 0 ? " - " : " + ";
    text += fmt::format("type={} config={:#x}", term.type, term.config);
    if (term.config1 != 0) text += fmt::format(" config1={:#x}", term.config1);
  }
  return text;
}

std::vector<std::string> candidate_events() {
  std::vector<std::string> names;
  for (const auto list :
       {std::span<const std::string_view>(kMemoryPresets), std::span<const std::string_view>(kOtherPresets),
        std::span<const std::string_view>(kSoftwareEvents)})
    for (const std::string_view name : list) names.emplace_back(name);
  return names;
}

std::vector<std::string> default_events(CounterSourceChoice choice) {
  std::vector<std::string> names;
  for (const std::string_view name : kMemoryPresets)
    if (sampler::detail::resolve_event(std::string(name), choice, sampler::detail::papi()).status.available)
      names.emplace_back(name);
  for (const std::string_view name : kSoftwareEvents) names.emplace_back(name);
  return names;
}

std::vector<EventStatus> probe_events(const std::vector<std::string>& names, CounterSourceChoice choice) {
  std::vector<EventStatus> statuses;
  for (const std::string& name : names)
    statuses.push_back(sampler::detail::resolve_event(name, choice, sampler::detail::papi()).status);
  return statuses;
}

CounterSetup open_counter_columns(const std::vector<CounterRequest>& requested) {
  CounterSetup setup;
  std::vector<sampler::detail::EncodedEvent> recorded;
  for (const CounterRequest& request : requested) {
    if (std::any_of(setup.events.begin(), setup.events.end(),
                    [&](const EventStatus& s) { return s.name == request.name; })) {
      setup.events.push_back(unavailable(request.name, "listed twice; counted once"));
      continue;
    }
    sampler::detail::ResolvedEvent resolved =
        sampler::detail::resolve_event(request.name, request.source, sampler::detail::papi());
    if (resolved.status.available && recorded.size() == kMaxCounters) {
      resolved.status =
          unavailable(request.name, fmt::format("more than {} events; this one is left out", kMaxCounters));
      resolved.encoded.reset();
    }
    if (resolved.encoded) recorded.push_back(std::move(*resolved.encoded));
    setup.events.push_back(std::move(resolved.status));
  }
  if (!recorded.empty()) setup.source = sampler::detail::make_perf_counter_source(std::move(recorded));
  return setup;
}

CounterSetup open_counters(const std::vector<std::string>& names, CounterSourceChoice choice) {
  std::vector<CounterRequest> requests;
  for (const std::string& name : names.empty() ? default_events(choice) : names) requests.push_back({name, choice});
  return open_counter_columns(requests);
}

std::string counter_library_version() {
  try {
    return sampler::detail::papi().version();
  } catch (const sampler::detail::CounterError& error) {
    return error.what();
  }
}

PapiCpuComponent papi_cpu_component() { return sampler::detail::papi().cpu_component(); }

}  // namespace memsweep
