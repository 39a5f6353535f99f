#pragma once
// Counting through Linux perf_event directly (events encoded by libpfm4,
// the library PAPI's perf_event component uses). PAPI 7.0 cannot do what
// the sampler needs: PAPI_INHERIT, PAPI_attach and PAPI_set_multiplex all
// fail on machines without a hardware PMU (its permission check opens a
// hardware-instructions event), and it scales multiplexed counts without
// exposing time running / time enabled. docs/sampler.md has the details.

#include "memsweep/sampler.hpp"
#include "sampler/counters.hpp"
#include "sampler/kernel_events.hpp"

#include <linux/perf_event.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace memsweep::sampler::detail {

struct EncodedTerm {
  perf_event_attr attr{};
  int sign = 1;
  std::string name;  // the native event it encodes, for messages
};

struct EncodedEvent {
  std::string name;
  std::string description;
  EventSource source = EventSource::papi;
  std::vector<EncodedTerm> terms;
  bool kernel_counted = false;  // false: user level only (perf_event_paranoid); set by check_counts()

  std::vector<EventEncoding> encoding() const;
};

// perf's estimate of a multiplexed count: the count scaled by time enabled /
// time running (unscaled when it ran all the time; 0 when it never ran).
double scaled_count(std::uint64_t value, std::uint64_t time_enabled, std::uint64_t time_running);

// Encodes every term through libpfm4, at user and kernel level. Throws
// CounterError when libpfm4 cannot.
EncodedEvent encode_event(const PapiEvent& event);
// A generic kernel event, named `name`, at user and kernel level.
EncodedEvent encode_event(const std::string& name, const KernelEvent& event);
// Opens every term once on the calling thread to see that this machine
// counts it, at user level only where perf_event_paranoid forbids the
// kernel's (kernel_counted says which). Throws CounterError saying why not.
void check_counts(EncodedEvent& event);

std::unique_ptr<CounterSource> make_perf_counter_source(std::vector<EncodedEvent> events);

}  // namespace memsweep::sampler::detail
