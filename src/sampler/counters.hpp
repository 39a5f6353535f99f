#pragma once
// PAPI, wrapped once (counters.cpp is the only file that includes papi.h):
// it names the events. A preset such as PAPI_L1_DCM becomes the CPU's native
// events and how to combine them; a native name such as perf::PAGE-FAULTS
// stays itself. Counting is done by perf_counters.cpp.

#include "memsweep/sampler.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace memsweep::sampler::detail {

// A PAPI call that failed: what was being done, and PAPI's message.
class CounterError : public std::runtime_error {
 public:
  CounterError(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

struct CounterTerm {
  std::string native_name;  // as libpfm4 (and PAPI's perf_event component) name it
  int sign = 1;             // +1 or -1: presets derived by subtraction
};

struct PapiEvent {
  std::string name;
  std::string description;
  std::vector<CounterTerm> terms;
};

// PAPI's side of naming events, behind an interface so that tests can
// stand a PAPI whose CPU component is disabled beside the real one.
class EventNamer {
 public:
  virtual ~EventNamer() = default;
  // Throws CounterError when PAPI cannot start, does not know the name, has
  // no native events for it on this CPU, or derives it in a way memsweep does
  // not combine (anything but a sum or a difference).
  virtual PapiEvent resolve(const std::string& name) const = 0;
  // "PAPI 7.0.0.0"; throws CounterError when PAPI cannot start.
  virtual std::string version() const = 0;
  // Throws CounterError when PAPI cannot start.
  virtual PapiCpuComponent cpu_component() const = 0;
};

// The real PAPI, initialised on first use.
const EventNamer& papi();

}  // namespace memsweep::sampler::detail
