#include "cli/events_command.hpp"

#include "memsweep/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>

namespace memsweep::cli {
namespace {

// This machine's CPU as /proc/cpuinfo names it: which libpfm4 tables apply
// depends on the family and model, which the name alone does not say.
struct CpuIdentity {
  std::string model_name = "unknown CPU";
  std::string family;  // decimal, as /proc/cpuinfo gives it
  std::string model;
};

CpuIdentity cpu_identity() {
  CpuIdentity cpu;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::map<std::string, std::string> fields;
  std::string line;
  while (std::getline(cpuinfo, line) && !line.empty()) {  // the first CPU's block
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    fields[key] = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
  }
  if (fields.contains("model name")) cpu.model_name = fields["model name"];
  cpu.family = fields["cpu family"];
  cpu.model = fields["model"];
  return cpu;
}

// What the whole machine offers: the CPU, PAPI and its CPU component.
struct MachineCounters {
  CpuIdentity cpu;
  std::string papi_version;
  std::optional<PapiCpuComponent> component;  // empty: PAPI could not start
  std::string papi_problem;                   // why, then
};

MachineCounters machine_counters() {
  MachineCounters machine;
  machine.cpu = cpu_identity();
  machine.papi_version = counter_library_version();
  try {
    machine.component = papi_cpu_component();
  } catch (const std::exception& error) {
    machine.papi_problem = error.what();
  }
  return machine;
}

std::string choice_text(CounterSourceChoice choice) {
  switch (choice) {
    case CounterSourceChoice::automatic: return "auto: PAPI first, then the kernel's generic events";
    case CounterSourceChoice::papi: return "papi: PAPI only";
    case CounterSourceChoice::kernel: return "kernel: the kernel's generic events only";
  }
  return "";
}

std::string component_text(const MachineCounters& machine) {
  if (!machine.component) return fmt::format("PAPI could not start: {}", machine.papi_problem);
  const PapiCpuComponent& component = *machine.component;
  if (component.active)
    return fmt::format("PAPI's CPU component {} is active ({} native events; libpfm4 PMUs: {})", component.name,
                       component.native_events, fmt::join(component.pmus, ", "));
  return fmt::format(
      "PAPI's CPU component {} is disabled: {}. PAPI names no CPU event here (a CPU newer than this libpfm4 "
      "knows does that); memsweep counts the kernel's generic events instead",
      component.name, component.reason);
}

std::string format_text(const MachineCounters& machine, CounterSourceChoice choice,
                        const std::vector<EventStatus>& statuses, const std::vector<std::string>& defaults) {
  std::string out =
      fmt::format("CPU: {} (family {}, model {})\n", machine.cpu.model_name, machine.cpu.family, machine.cpu.model);
  out += fmt::format("{}; {}\n", machine.papi_version, component_text(machine));
  out += fmt::format("counter source: {}; counted through perf_event on every thread of the trial's process\n",
                     choice_text(choice));
  std::size_t width = std::string_view("event").size();
  std::size_t encoding_width = std::string_view("encoding").size();
  std::vector<std::string> encodings;
  for (const EventStatus& status : statuses) {
    width = std::max(width, status.name.size());
    encodings.push_back(status.available ? encoding_text(status.encoding) : "-");
    encoding_width = std::max(encoding_width, encodings.back().size());
  }
  out += fmt::format("{:<{}}  {:<9}  {:<6}  {:<{}}  {}\n", "event", width, "available", "source", "encoding",
                     encoding_width, "detail");
  for (std::size_t i = 0; i < statuses.size(); ++i) {
    const EventStatus& status = statuses[i];
    out += fmt::format("{:<{}}  {:<9}  {:<6}  {:<{}}  {}\n", status.name, width, status.available ? "yes" : "no",
                       status.available ? event_source_name(status.source) : "-", encodings[i], encoding_width,
                       status.detail);
  }
  out += fmt::format("default set ({}): {}\n", defaults.size(), fmt::join(defaults, " "));
  return out;
}

nlohmann::json format_json(const MachineCounters& machine, CounterSourceChoice choice,
                           const std::vector<EventStatus>& statuses, const std::vector<std::string>& defaults) {
  nlohmann::json out;
  out["cpu"] = {{"model_name", machine.cpu.model_name}, {"family", machine.cpu.family}, {"model", machine.cpu.model}};
  out["papi_version"] = machine.papi_version;
  nlohmann::json component = {{"name", "perf_event"}, {"active", false}};
  if (machine.component) {
    component = {{"name", machine.component->name},
                 {"active", machine.component->active},
                 {"native_events", machine.component->native_events},
                 {"pmus", machine.component->pmus}};
    if (!machine.component->active) component["reason"] = machine.component->reason;
  } else {
    component["reason"] = machine.papi_problem;
  }
  out["papi_cpu_component"] = component;
  out["counter_source"] = counter_source_name(choice);
  out["events"] = nlohmann::json::array();
  for (const EventStatus& status : statuses) {
    nlohmann::json event = {{"name", status.name}, {"available", status.available}};
    if (status.available) {
      event["source"] = event_source_name(status.source);
      event["description"] = status.detail;
      event["encoding"] = encoding_text(status.encoding);
      nlohmann::json terms = nlohmann::json::array();
      for (const EventEncoding& term : status.encoding)
        terms.push_back({{"type", term.type}, {"config", term.config}, {"config1", term.config1}, {"sign", term.sign}});
      event["terms"] = terms;
    } else {
      event["reason"] = status.detail;
    }
    out["events"].push_back(event);
  }
  out["default_set"] = defaults;
  return out;
}

}  // namespace

void add_counter_source_option(CLI::App& command, std::optional<std::string>& value) {
  command
      .add_option("--counter-source", value,
                  "Where counters come from: auto (PAPI first, then the kernel's generic events; the default), papi, "
                  "or kernel (overrides the sweep file's [sampler] counter_source)")
      ->check(CLI::IsMember({"auto", "papi", "kernel"}));
}

void add_events_command(CLI::App& app, EventsOptions& options) {
  CLI::App* events = app.add_subcommand(
      "events",
      "List the counters this machine offers (PAPI presets, perf software events), where each comes from, and the "
      "default set");
  events->add_option("event", options.events, "More event names to check (PAPI presets, native or perf names)");
  add_counter_source_option(*events, options.counter_source);
  events->add_flag("--json", options.json, "Print JSON, for scripts");
}

int run_events_command(const EventsOptions& options) {
  const CounterSourceChoice choice =
      options.counter_source ? parse_counter_source(*options.counter_source).value_or(CounterSourceChoice::automatic)
                             : CounterSourceChoice::automatic;
  std::vector<std::string> names = candidate_events();
  for (const std::string& name : options.events)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  const MachineCounters machine = machine_counters();
  const std::vector<EventStatus> statuses = probe_events(names, choice);
  const std::vector<std::string> defaults = default_events(choice);
  if (options.json)
    fmt::print("{}\n", format_json(machine, choice, statuses, defaults).dump(2));
  else
    fmt::print("{}", format_text(machine, choice, statuses, defaults));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
