// The calibration file of `memsweep estimate --calibrate`: the trial
// process's cost on this machine, a small TOML file beside the user's
// other caches (trial_process_cost.hpp).

#include "memsweep/error.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml.hpp>

#include <unistd.h>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace memsweep {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCoefficients[] = {"base_bytes", "per_layer_bytes", "per_batch_size_bytes",
                                         "per_layer_batch_size_bytes", "convolution_bytes"};

double& coefficient(TrialProcessCost& cost, std::string_view name) {
  if (name == "base_bytes") return cost.base_bytes;
  if (name == "per_layer_bytes") return cost.per_layer_bytes;
  if (name == "per_batch_size_bytes") return cost.per_batch_size_bytes;
  if (name == "per_layer_batch_size_bytes") return cost.per_layer_batch_size_bytes;
  return cost.convolution_bytes;
}

// "FILE:LINE: FIELD: expected ..., found ...".
[[noreturn]] void bad_field(const fs::path& path, const toml::value& value, std::string_view field,
                            std::string_view expected) {
  const std::size_t line = value.location().line();
  throw InputError(
      fmt::format("{}:{}: {}: expected {}, found {}", path.string(), line, field, expected, toml::format(value)));
}

const toml::value& required(const fs::path& path, const toml::value& root, const std::string& field) {
  if (!root.contains(field))
    throw InputError(
        fmt::format("{}: {}: missing; a calibration file has {}, cpu and threads (memsweep estimate "
                    "--calibrate writes one)",
                    path.string(), field, fmt::join(kCoefficients, ", ")));
  return root.at(field);
}

}  // namespace

fs::path calibration_file_path() {
  if (const char* set = std::getenv("MEMSWEEP_CALIBRATION"); set != nullptr && *set != '\0') return set;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache != nullptr && *cache != '\0')
    return fs::path(cache) / "memsweep" / "trial-process.toml";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : "/tmp") / ".cache" / "memsweep" / "trial-process.toml";
}

void write_calibration_file(const fs::path& path, const TrialProcessCost& cost) {
  std::error_code error;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), error);
  if (error) throw std::runtime_error(fmt::format("{}: cannot create its folder: {}", path.string(), error.message()));
  const fs::path temporary = path.string() + fmt::format(".{}.tmp", ::getpid());
  {
    std::ofstream out(temporary);
    out << "# The trial process's cost on this machine (memsweep estimate --calibrate; docs/estimate.md).\n"
        << fmt::format("source = {}\n", toml::format(toml::value(cost.source)))
        << fmt::format("cpu = {}\n", toml::format(toml::value(cost.cpu))) << fmt::format("threads = {}\n", cost.threads)
        << fmt::format("base_bytes = {:.0f}\n", cost.base_bytes)
        << fmt::format("per_layer_bytes = {:.0f}\n", cost.per_layer_bytes)
        << fmt::format("per_batch_size_bytes = {:.0f}\n", cost.per_batch_size_bytes)
        << fmt::format("per_layer_batch_size_bytes = {:.0f}\n", cost.per_layer_batch_size_bytes)
        << fmt::format("convolution_bytes = {:.0f}\n", cost.convolution_bytes);
    out.close();
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write it", temporary.string()));
  }
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary);
    throw std::runtime_error(fmt::format("{}: cannot put it in place: {}", path.string(), error.message()));
  }
}

std::optional<TrialProcessCost> read_calibration_file(const fs::path& path) {
  std::error_code error;
  if (!fs::exists(path, error)) return std::nullopt;
  toml::value root;
  try {
    root = toml::parse(path.string());
  } catch (const toml::syntax_error& syntax) {
    std::string what = syntax.what();
    throw InputError(
        fmt::format("{}: not a calibration file (TOML): {}", path.string(), what.substr(0, what.find('\n'))));
  } catch (const std::exception& other) {
    throw InputError(fmt::format("{}: cannot read it: {}", path.string(), other.what()));
  }
  if (!root.is_table()) throw InputError(fmt::format("{}: not a calibration file", path.string()));
  TrialProcessCost cost;
  for (const char* field : kCoefficients) {
    const toml::value& value = required(path, root, field);
    const double bytes = value.is_integer()    ? static_cast<double>(value.as_integer())
                         : value.is_floating() ? value.as_floating()
                                               : -1.0;
    if (!(bytes >= 0.0 && bytes < 1e15)) bad_field(path, value, field, "a number of bytes from 0");
    coefficient(cost, field) = bytes;
  }
  const toml::value& cpu = required(path, root, "cpu");
  if (!cpu.is_string()) bad_field(path, cpu, "cpu", "the CPU's model name, a string");
  cost.cpu = cpu.as_string().str;
  const toml::value& threads = required(path, root, "threads");
  if (!threads.is_integer() || threads.as_integer() < 1 || threads.as_integer() > 4096)
    bad_field(path, threads, "threads", "a whole number from 1");
  cost.threads = static_cast<int>(threads.as_integer());
  const std::string source = root.contains("source") && root.at("source").is_string()
                                 ? root.at("source").as_string().str
                                 : std::string("calibrated");
  cost.source = fmt::format("{} ({})", source, path.string());
  return cost;
}

std::string this_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (!line.starts_with("model name")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(colon + 1);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    return name;
  }
  return {};
}

TrialProcessCost machine_trial_process_cost() {
  const fs::path path = calibration_file_path();
  std::optional<TrialProcessCost> calibrated = read_calibration_file(path);
  if (!calibrated) return builtin_trial_process_cost();
  if (calibrated->cpu != this_cpu_model()) {
    TrialProcessCost builtin = builtin_trial_process_cost();
    builtin.source += fmt::format(" ({} was measured on another CPU: {})", path.string(), calibrated->cpu);
    return builtin;
  }
  return *calibrated;
}

}  // namespace memsweep
