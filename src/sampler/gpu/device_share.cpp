#include "sampler/gpu/device_share.hpp"

#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace memsweep::gpu {
namespace {

bool is_index(std::string_view entry) {
  return !entry.empty() && std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool is_uuid(std::string_view entry) {
  return entry.size() > 4 && (entry.starts_with("GPU-") || entry.starts_with("MIG-"));
}

// "0,1,3" or "GPU-…,GPU-…": the entries up to the first that names no device.
std::vector<std::string> device_list(std::string_view text) {
  std::vector<std::string> devices;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    std::string_view entry = text.substr(0, comma);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (!is_index(entry) && !is_uuid(entry)) break;
    devices.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return devices;
}

}  // namespace

NodeGpus node_gpus(const EnvironmentLookup& variable, std::size_t nvml_devices) {
  for (const std::string_view name : std::array{kStepGpusVariable, kJobGpusVariable, kVisibleDevicesVariable}) {
    if (const std::optional<std::string> value = variable(name)) return {device_list(*value), std::string(name)};
  }
  NodeGpus node{{}, std::string(kNvmlSource)};
  for (std::size_t index = 0; index < nvml_devices; ++index) node.devices.push_back(std::to_string(index));
  return node;
}

LocalPlace local_place(const std::vector<std::string>& hosts, int rank) {
  const auto own = static_cast<std::size_t>(rank);
  const bool several = hosts.size() > 1;
  LocalPlace place{-1, 0};
  for (std::size_t other = 0; other < hosts.size(); ++other) {
    if ((several && other == 0) || hosts[other] != hosts[own]) continue;
    if (other == own) place.index = place.count;
    ++place.count;
  }
  return place;
}

std::vector<std::string> rank_gpus(const NodeGpus& node, LocalPlace place, int per_trial, const std::string& host) {
  if (per_trial <= 0 || place.index < 0) return {};
  const auto needed = static_cast<std::size_t>(place.count) * static_cast<std::size_t>(per_trial);
  if (node.devices.size() < needed) {
    const std::string listed = node.devices.empty() ? "none" : fmt::format("{}", fmt::join(node.devices, ","));
    const std::size_t most = node.devices.size() / static_cast<std::size_t>(per_trial);
    throw InputError(fmt::format(
        "{}: {} rank{} train{} here with {} GPU{} per trial, which needs {} GPUs, but the node has {} ({} from "
        "{}): run at most {} training rank{} on it, or lower gpus_per_trial; GPUs are never shared between trials",
        host, place.count, place.count == 1 ? "" : "s", place.count == 1 ? "s" : "", per_trial,
        per_trial == 1 ? "" : "s", needed, node.devices.size(), listed, node.source, most, most == 1 ? "" : "s"));
  }
  const auto first = static_cast<std::size_t>(place.index) * static_cast<std::size_t>(per_trial);
  return {node.devices.begin() + static_cast<std::ptrdiff_t>(first),
          node.devices.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(per_trial))};
}

}  // namespace memsweep::gpu
