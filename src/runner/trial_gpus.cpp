#include "runner/trial_gpus.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace memsweep::runner::detail {

TrialGpus trial_gpus(const TrialSpec& trial, const RankGpus& rank) {
  const auto needed = static_cast<std::size_t>(std::max(0, trial.gpus_needed(rank.node_has_gpus)));
  TrialGpus gpus;
  if (needed > rank.devices.size()) {
    gpus.problem = fmt::format("the trial needs {} GPU{} (gpus_per_trial) and its rank has {}", needed,
                               needed == 1 ? "" : "s", rank.devices.size());
    return gpus;
  }
  gpus.devices.assign(rank.devices.begin(), rank.devices.begin() + static_cast<std::ptrdiff_t>(needed));
  return gpus;
}

std::vector<int> nvml_indices(const std::vector<RankGpu>& devices) {
  std::vector<int> indices;
  for (const RankGpu& device : devices) {
    if (device.nvml_index < 0) return {};
    indices.push_back(device.nvml_index);
  }
  return indices;
}

std::string visible_devices(const std::vector<RankGpu>& devices) {
  std::vector<std::string> ids;
  for (const RankGpu& device : devices) ids.push_back(device.visible_id);
  return fmt::format("{}", fmt::join(ids, ","));
}

std::string gpu_placeholder(const std::vector<RankGpu>& devices) {
  std::vector<std::size_t> ordinals;
  for (std::size_t ordinal = 0; ordinal < devices.size(); ++ordinal) ordinals.push_back(ordinal);
  return fmt::format("{}", fmt::join(ordinals, ","));
}

std::optional<std::uint64_t> device_limit(std::uint64_t asked, std::int64_t total_bytes) {
  if (asked != TrialSpec::kWholeDevice) return asked;
  if (total_bytes < 0) return std::nullopt;
  return static_cast<std::uint64_t>(total_bytes);
}

void record_trial_gpus(TrialRow& row, const std::vector<RankGpu>& devices, const RankGpus& rank) {
  if (devices.empty()) return;
  std::vector<std::string> names;
  std::int64_t total = 0;
  for (const RankGpu& device : devices) {
    if (!device.name.empty() && std::find(names.begin(), names.end(), device.name) == names.end())
      names.push_back(device.name);
    total = device.total_bytes < 0 || total < 0 ? -1 : total + device.total_bytes;
  }
  set_fixed(row.gpu_uuids, visible_devices(devices));
  set_fixed(row.gpu_name, fmt::format("{}", fmt::join(names, ",")));
  row.gpu_total = total;
  set_fixed(row.gpu_driver, rank.driver_version);
  set_fixed(row.cuda_version, rank.cuda_version);
}

}  // namespace memsweep::runner::detail
