#include "sampler/gpu/device_share.hpp"

#include "memsweep/error.hpp"
#include "memsweep/rank_gpus.hpp"
#include "sampler/gpu/gpu_memory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdlib>

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
        "{} rank{} train{} on {} with {} GPU{} per trial, which needs {} GPUs, but the node has {} ({} from "
        "{}): run at most {} training rank{} on it, or lower gpus_per_trial; GPUs are never shared between trials",
        place.count, place.count == 1 ? "" : "s", place.count == 1 ? "s" : "", host, per_trial,
        per_trial == 1 ? "" : "s", needed, node.devices.size(), listed, node.source, most, most == 1 ? "" : "s"));
  }
  const auto first = static_cast<std::size_t>(place.index) * static_cast<std::size_t>(per_trial);
  return {node.devices.begin() + static_cast<std::ptrdiff_t>(first),
          node.devices.begin() + static_cast<std::ptrdiff_t>(first + static_cast<std::size_t>(per_trial))};
}

RankGpu resolve_device(const std::string& named, const std::vector<GpuDevice>& described) {
  const auto found = std::find_if(described.begin(), described.end(), [&](const GpuDevice& device) {
    // CUDA takes a UUID's unambiguous prefix too.
    return is_index(named) ? std::to_string(device.index) == named
                           : !device.uuid.empty() && device.uuid.starts_with(named);
  });
  if (found == described.end() || found->uuid.empty()) return RankGpu{named, -1, {}, -1};
  return RankGpu{found->uuid, found->index, found->name, found->total_bytes};
}

}  // namespace memsweep::gpu

namespace memsweep {

RankGpus assign_rank_gpus(const std::vector<std::string>& hosts, int rank,
                          const std::function<int(bool node_has_gpus)>& per_trial) {
  const gpu::GpuOpen nvml = gpu::open_gpu_memory();
  std::vector<gpu::GpuDevice> described;
  RankGpus gpus;
  if (nvml.reader) {
    described = nvml.reader->describe_devices();
    const gpu::GpuDriver driver = nvml.reader->driver();
    gpus.driver_version = driver.version;
    gpus.cuda_version = driver.cuda_version;
  }
  const auto lookup = [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  const gpu::NodeGpus node =
      gpu::node_gpus(lookup, nvml.reader ? static_cast<std::size_t>(nvml.reader->device_count()) : 0);
  gpus.node_has_gpus = !node.devices.empty();
  gpus.node_devices = fmt::format("{}", fmt::join(node.devices, ","));
  gpus.source = node.source;
  const auto own = static_cast<std::size_t>(rank);
  const std::string host = own < hosts.size() ? hosts[own] : std::string("this node");
  for (const std::string& named :
       gpu::rank_gpus(node, gpu::local_place(hosts, rank), per_trial(gpus.node_has_gpus), host))
    gpus.devices.push_back(gpu::resolve_device(named, described));
  return gpus;
}

}  // namespace memsweep
