#pragma once
// How a requested name becomes something to count: the ways to count it, in
// the order they are tried (PAPI's, then the kernel's generic event), each
// encoded but not yet opened; then the first one this machine counts.

#include "memsweep/sampler.hpp"
#include "sampler/counters.hpp"
#include "sampler/perf_counters.hpp"

#include <optional>
#include <string>
#include <vector>

namespace memsweep::sampler::detail {

// One source's way to count an event: encoded, or why that source cannot.
struct WayToCount {
  EventSource source = EventSource::none;
  std::optional<EncodedEvent> encoded;
  std::string why_not;  // when not encoded
};

// The ways `choice` allows, in the order to try them (PAPI, then the
// kernel's generic events), each named and encoded; opens nothing.
std::vector<WayToCount> ways_to_count(const std::string& name, CounterSourceChoice choice, const EventNamer& papi);

struct ResolvedEvent {
  EventStatus status;
  std::optional<EncodedEvent> encoded;  // set when available
};

// ways_to_count(), then the first way this machine counts (check_counts).
ResolvedEvent resolve_event(const std::string& name, CounterSourceChoice choice, const EventNamer& papi);

}  // namespace memsweep::sampler::detail
