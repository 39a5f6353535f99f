#pragma once
// Which GPUs a rank's trials run on (issue 45, "one trial per GPU"): the
// devices the node's ranks share out, as the job was given them (Slurm's
// SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES) or else
// every device NVML lists, dealt out by the rank's place among the ranks
// that train on its node, so that no two trials of a node share a device.
// Pure: the environment and NVML's device count come in as arguments.
// assign_rank_gpus() (rank_gpus.hpp) puts them together with NVML's.

#include "memsweep/rank_gpus.hpp"
#include "sampler/gpu/gpu_memory.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::gpu {

// The variables a job's GPUs are read from, in order; the first that is set
// decides, even when it is empty (a job given no GPU).
inline constexpr std::string_view kStepGpusVariable = "SLURM_STEP_GPUS";
inline constexpr std::string_view kJobGpusVariable = "SLURM_JOB_GPUS";
inline constexpr std::string_view kVisibleDevicesVariable = "CUDA_VISIBLE_DEVICES";
inline constexpr std::string_view kNvmlSource = "NVML";

struct NodeGpus {
  // As their source names them: indices ("0", "3") or UUIDs ("GPU-…",
  // "MIG-…"); NVML's are its indices.
  std::vector<std::string> devices;
  std::string source;  // a variable's name, or kNvmlSource
};

// A variable's value; nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The node's devices. A list is cut at its first entry that is neither an
// index nor a UUID, as CUDA reads CUDA_VISIBLE_DEVICES ("-1" and
// "NoDevFiles", what launchers write for no GPU, leave none).
NodeGpus node_gpus(const EnvironmentLookup& variable, std::size_t nvml_devices);

// A rank's place among the ranks that train on its host (`hosts`: every
// rank's, by rank). With several ranks, rank 0 hands out trials and trains
// none: its index is -1.
struct LocalPlace {
  int index = 0;
  int count = 1;
};
LocalPlace local_place(const std::vector<std::string>& hosts, int rank);

// The devices of `node` that the trials of the rank at `place` get,
// `per_trial` of them (none for 0 or a rank that trains nothing). Throws
// InputError naming `host`, its devices and its ranks when the node has
// fewer devices than its ranks need: never shared silently.
std::vector<std::string> rank_gpus(const NodeGpus& node, LocalPlace place, int per_trial, const std::string& host);

// A device as the job named it (an index, or a UUID or its prefix, as CUDA
// takes them) matched with NVML's `described` devices: its UUID, name and
// memory; as named, with index -1, where NVML does not list it. An index
// is NVML's (PCI order); CUDA_VISIBLE_DEVICES's are CUDA's, the same order
// on a node of one GPU model (docs/runner.md, "A trial's GPUs").
RankGpu resolve_device(const std::string& named, const std::vector<GpuDevice>& described);

}  // namespace memsweep::gpu
