#pragma once
// GPU memory, from outside the trial: NVML's device-wide used memory (cheap:
// on the sampler's cadence) and its per-process used memory, filtered to the
// trial's process tree (milliseconds per call under the driver's lock: on a
// slower, bounded cadence). docs/runner.md, "GPU memory", says what each
// figure means and which one a trial's peak is.

#include "sampler/gpu/nvml_api.hpp"

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace memsweep::gpu {

// Devices read; past it a node's devices are left out (and said so).
inline constexpr std::size_t kMaxGpuDevices = 16;
// The per-process read's spacing: at least kMinTreeInterval, and at least
// kTreeCostSpacing times the last read's cost, so that the reads hold the
// driver's lock (which CUDA's own calls in the trial also take) for at most
// 1/kTreeCostSpacing of the time. A read costs ~1-10 ms on current drivers
// (more with many processes or MIG); at 1 ms it is every 100 ms.
inline constexpr std::chrono::milliseconds kMinTreeInterval{100};
inline constexpr std::int64_t kTreeCostSpacing = 50;

// Pure: when the next per-process read may start, given when the last
// ended and what it cost.
std::chrono::nanoseconds next_tree_read_delay(std::chrono::nanoseconds last_cost);

// Pure: the bytes that processes among `pids` use, from one device's list.
// Entries whose usedGpuMemory is not available count 0 (but do count as the
// tree being present: see TreeGpuReading::present).
struct TreeOnDevice {
  std::int64_t bytes = 0;
  bool present = false;
};
TreeOnDevice tree_usage(std::span<const NvmlProcessInfo> processes, std::span<const int> pids);

// One per-process read over every device.
struct TreeGpuReading {
  bool ok = false;           // every device answered (else the figures are partial and not used)
  std::int64_t bytes = 0;    // the tree's total over devices
  std::vector<int> devices;  // where the tree has a process, ascending
};

// A device as NVML names it. Empty texts and -1 where NVML cannot tell.
struct GpuDevice {
  int index = -1;    // NVML's
  std::string uuid;  // "GPU-…", or "MIG-…" for a MIG instance
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::int64_t total_bytes = -1;
};

// The driver, as NVML reports it: "580.65.06", and the CUDA version the
// driver supports, "13.0".
struct GpuDriver {
  std::string version;
  std::string cuda_version;
};

// Pure: NVML's CUDA version number as people write it, 12020 -> "12.2".
std::string cuda_version_text(int version);

class GpuMemoryReader {
 public:
  explicit GpuMemoryReader(std::shared_ptr<NvmlLibrary> library);
  int device_count() const { return static_cast<int>(devices_.size()); }
  bool per_process_available() const { return library_->api().processes != nullptr; }

  // Each device's used bytes into `used` (its first kMaxGpuDevices slots;
  // -1 where a read failed). Returns the sum over devices that answered, or
  // -1 when none did. Does not allocate: safe on the tick thread.
  std::int64_t read_device_used(std::span<std::int64_t> used) noexcept;
  // The per-process lists of every device, filtered to `pids`.
  TreeGpuReading read_tree(std::span<const int> pids);

  // From now on, reads only the devices at these indices (empty: every
  // device): a trial's own. Not while a read runs (the sampler's threads
  // are stopped).
  void select_devices(const std::vector<int>& indices);

  // Each device that could be opened, in NVML's order: a GPU in MIG mode
  // is its instances, in the GPU's place (each with its own UUID and
  // memory, as CUDA sees them).
  std::vector<GpuDevice> describe_devices() const;
  GpuDriver driver() const;

  // The first failure of each kind of call, once each (for the trial's
  // warnings); a failure repeated on every read is not repeated here.
  std::vector<std::string> problems() const;

 private:
  struct FirstFailure {
    NvmlReturn code = kNvmlSuccess;
    int device = -1;
    void note(int index, NvmlReturn failed) noexcept;
  };
  std::shared_ptr<NvmlLibrary> library_;
  void add_device(unsigned int index);
  std::vector<NvmlDevice> devices_;
  std::uint32_t selected_ = ~0U;  // bit i: device i is read
  std::vector<NvmlProcessInfo> buffer_;
  std::string open_problem_;
  FirstFailure memory_failure_;   // nvmlDeviceGetMemoryInfo
  FirstFailure process_failure_;  // nvmlDeviceGetComputeRunningProcesses
};

// NVML's reader, or why there is none (kNoDriverLine when the library is
// absent). Never throws.
struct GpuOpen {
  std::unique_ptr<GpuMemoryReader> reader;
  std::string problem;
};
GpuOpen open_gpu_memory();

// Where a trial's GPU peak comes from.
enum class GpuPeakSource {
  none,          // not measured: no NVML, or no read succeeded
  tree,          // the tree's per-process used memory (its largest read total)
  device_delta,  // no per-process figures: the devices' used memory above what it was at the trial's start
};
std::string_view gpu_peak_source_name(GpuPeakSource source);

// Pure: a trial's GPU figures from its reads, in the order they came.
// The tree's figure is used whenever one per-process read succeeded,
// because the device's used memory includes every other process on the
// device; the delta is the fallback where the driver gives no per-process
// figures (and says so in its source).
// Neither add allocates: the tick thread adds the device reads.
class GpuTrialPeak {
 public:
  void add_device_used(std::span<const std::int64_t> used) noexcept;
  void add_tree(const TreeGpuReading& reading) noexcept;
  // The tree's figures where `tree` has any, else this one's.
  void take_tree_from(const GpuTrialPeak& tree) noexcept;

  GpuPeakSource source() const;
  std::int64_t peak_bytes() const;                                   // -1: not measured
  std::vector<int> devices() const;                                  // ascending; empty when none is known
  static std::string devices_text(const std::vector<int>& devices);  // "0,2"

 private:
  using DeviceMask = std::uint32_t;  // bit i: device i
  static_assert(kMaxGpuDevices <= 32);
  std::array<std::int64_t, kMaxGpuDevices> baseline_{};  // each device's first good read
  std::array<bool, kMaxGpuDevices> has_baseline_{};
  std::int64_t delta_peak_ = -1;
  DeviceMask delta_devices_ = 0;
  bool tree_read_ = false;
  std::int64_t tree_peak_ = -1;
  DeviceMask tree_devices_ = 0;
};

}  // namespace memsweep::gpu
