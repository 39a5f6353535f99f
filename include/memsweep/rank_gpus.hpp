#pragma once
// The GPUs a rank's trials run on (docs/runner.md, "A trial's GPUs"): the
// devices its node's training ranks share out, one set per rank, so that no
// two trials of a node ever run on the same device. The sampler module
// works them out (src/sampler/gpu/device_share.cpp, with NVML); the runner
// gives each trial its own and reads only those.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memsweep {

struct RankGpu {
  // What the trial's CUDA_VISIBLE_DEVICES names it by: its UUID ("GPU-…",
  // "MIG-…") where NVML knows the device, else the job's own name for it.
  std::string visible_id;
  int nvml_index = -1;  // in NVML's list (MIG instances in their parent's place); -1: NVML does not list it
  std::string name;     // "NVIDIA H100 80GB HBM3"; empty where unknown
  std::int64_t total_bytes = -1;
};

struct RankGpus {
  bool node_has_gpus = false;    // the job gave the node devices (TrialSpec::gpus_needed())
  std::vector<RankGpu> devices;  // this rank's, in the order trials take them
  std::string driver_version;    // NVML's: "580.65.06"
  std::string cuda_version;      // the driver's CUDA: "13.0"
  std::string node_devices;      // every device of the node, as the job named them ("0,1,2,3")
  std::string source;            // where they came from: SLURM_STEP_GPUS, …, or NVML
};

// This rank's GPUs. `hosts`: every rank's host, by rank (rank 0 of several
// trains nothing and gets none). `per_trial(node_has_gpus)`: the most GPUs
// any of its trials needs. Reads the job's environment and NVML (absent:
// no devices unless the environment names some). Throws InputError naming
// the node, its devices and its ranks when they do not go round.
RankGpus assign_rank_gpus(const std::vector<std::string>& hosts, int rank,
                          const std::function<int(bool node_has_gpus)>& per_trial);

}  // namespace memsweep
