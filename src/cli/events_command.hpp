#pragma once
// `memsweep events [EVENT...]`: which counters this machine offers, and what
// the default set resolves to.

#include "memsweep/sampler.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace memsweep::cli {

struct EventsOptions {
  std::vector<std::string> events;  // extra names to check besides the candidates
};

void add_events_command(CLI::App& app, EventsOptions& options);

// The report as `events` prints it.
std::string format_events(const std::string& library, const std::vector<EventStatus>& statuses,
                          const std::vector<std::string>& defaults);

int run_events_command(const EventsOptions& options);

}  // namespace memsweep::cli
