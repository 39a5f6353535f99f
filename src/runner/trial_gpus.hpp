#pragma once
// A trial's own GPUs (docs/runner.md, "A trial's GPUs"): the first
// gpus_needed() of its rank's (rank_gpus.hpp), what the program is told
// of them (CUDA_VISIBLE_DEVICES by UUID, {gpu}), and what its row records.

#include "memsweep/config.hpp"
#include "memsweep/rank_gpus.hpp"
#include "memsweep/results.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

struct TrialGpus {
  std::vector<RankGpu> devices;  // empty: the trial is given none (and sees what the job does)
  std::string problem;           // why the trial cannot run: it needs more than its rank has
};

// Pure.
TrialGpus trial_gpus(const TrialSpec& trial, const RankGpus& rank);

// The devices' NVML indices, for the sampler; empty (every device) when
// NVML does not list one of them.
std::vector<int> nvml_indices(const std::vector<RankGpu>& devices);

// CUDA_VISIBLE_DEVICES: "GPU-…,GPU-…".
std::string visible_devices(const std::vector<RankGpu>& devices);
// {gpu}: the devices as the program sees them once CUDA_VISIBLE_DEVICES
// holds only them, "0" or "0,1".
std::string gpu_placeholder(const std::vector<RankGpu>& devices);

// The row's gpu_uuids, gpu_name, gpu_total, gpu_driver and cuda_version
// (nothing for a trial given no GPU).
void record_trial_gpus(TrialRow& row, const std::vector<RankGpu>& devices, const RankGpus& rank);

// How a trial's GPU limit is held (docs/runner.md, "A GPU limit").
namespace gpu_limit_mechanism {
inline constexpr std::string_view kDevice = "device";    // the limit is the device's own size
inline constexpr std::string_view kReserve = "reserve";  // a helper holds the rest of the device (gpu_reserve.hpp)
inline constexpr std::string_view kWatch = "watch";      // only the rank's stop at the limit
}  // namespace gpu_limit_mechanism

// Pure: the limit on one device of `total_bytes` (-1: unknown) that
// TrialSpec::gpu_limit_bytes asks for: the device's size for
// kWholeDevice; nullopt when that size is unknown.
std::optional<std::uint64_t> device_limit(std::uint64_t asked, std::int64_t total_bytes);

}  // namespace memsweep::runner::detail
