#include "cli/events_command.hpp"

#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep::cli {

void add_events_command(CLI::App& app, EventsOptions& options) {
  CLI::App* events = app.add_subcommand(
      "events", "List the counters this machine offers (PAPI presets, perf software events) and the default set");
  events->add_option("event", options.events, "More PAPI event names to check (presets or native names)");
}

std::string format_events(const std::string& library, const std::vector<EventStatus>& statuses,
                          const std::vector<std::string>& defaults) {
  std::size_t width = std::string_view("event").size();
  for (const EventStatus& status : statuses) width = std::max(width, status.name.size());
  std::string out = fmt::format("{}; counted through perf_event on every thread of the process\n", library);
  out += fmt::format("{:<{}}  {:<9}  {}\n", "event", width, "available", "detail");
  for (const EventStatus& status : statuses)
    out += fmt::format("{:<{}}  {:<9}  {}\n", status.name, width, status.available ? "yes" : "no", status.detail);
  out += fmt::format("default set ({}): {}\n", defaults.size(), fmt::join(defaults, " "));
  return out;
}

int run_events_command(const EventsOptions& options) {
  std::vector<std::string> names = candidate_events();
  for (const std::string& name : options.events)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  fmt::print("{}", format_events(counter_library_version(), probe_events(names), default_events()));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
