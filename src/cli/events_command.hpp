#pragma once
// `memsweep events [EVENT...]`: which counters this machine offers, from
// which source (PAPI or the kernel's generic events), whether PAPI's CPU
// component works here, and what the default set resolves to.

#include "memsweep/config.hpp"
#include "memsweep/sampler.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace memsweep::cli {

struct EventsOptions {
  std::vector<std::string> events;            // extra names to check besides the candidates
  std::optional<std::string> counter_source;  // --counter-source: auto, papi or kernel
  bool json = false;
};

void add_events_command(CLI::App& app, EventsOptions& options);

// --counter-source, for `events` and `run`.
void add_counter_source_option(CLI::App& command, std::optional<std::string>& value);

int run_events_command(const EventsOptions& options);

}  // namespace memsweep::cli
