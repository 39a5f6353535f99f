#pragma once
// The few NVML calls memsweep makes, declared here from NVML's public header
// (nvml.h) so that nothing at build time needs the NVIDIA driver: the
// library is opened at run time with dlopen, and its functions are reached
// through NvmlApi, a table that a test fills from its own small library
// answering the same symbols (tests/sampler/fake_nvml.cpp).

#include <cstdint>
#include <memory>
#include <string>

namespace memsweep::gpu {

// nvmlReturn_t: an int-sized enum in nvml.h.
using NvmlReturn = int;
inline constexpr NvmlReturn kNvmlSuccess = 0;
inline constexpr NvmlReturn kNvmlErrorNotSupported = 3;
inline constexpr NvmlReturn kNvmlErrorInsufficientSize = 7;
inline constexpr NvmlReturn kNvmlErrorNotFound = 6;
inline constexpr unsigned int kNvmlMigEnabled = 1;  // NVML_DEVICE_MIG_ENABLE

// nvmlDevice_t: an opaque pointer.
struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;

// nvmlMemory_t (v1): bytes.
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlProcessInfo_t as nvmlDeviceGetComputeRunningProcesses_v2 and _v3
// fill it (nvmlProcessInfo_v2_t). usedGpuMemory is kNvmlValueNotAvailable
// where the driver cannot tell (Windows WDDM, some MIG setups).
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;
// Room for any of NVML's texts: its largest buffer constant
// (NVML_DEVICE_UUID_V2_BUFFER_SIZE, NVML_DEVICE_NAME_V2_BUFFER_SIZE).
inline constexpr unsigned int kNvmlTextBufferSize = 96;

struct NvmlApi {
  NvmlReturn (*init)() = nullptr;                                                  // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                              // nvmlShutdown
  NvmlReturn (*device_count)(unsigned int*) = nullptr;                             // nvmlDeviceGetCount_v2
  NvmlReturn (*device_by_index)(unsigned int, NvmlDevice*) = nullptr;              // nvmlDeviceGetHandleByIndex_v2
  NvmlReturn (*memory_info)(NvmlDevice, NvmlMemory*) = nullptr;                    // nvmlDeviceGetMemoryInfo
  NvmlReturn (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*) = nullptr;  // _v3, else _v2; may be null
  const char* (*error_string)(NvmlReturn) = nullptr;                               // nvmlErrorString
  // What a device and the driver are (the trial's record, its
  // CUDA_VISIBLE_DEVICES by UUID); each may be null.
  NvmlReturn (*uuid)(NvmlDevice, char*, unsigned int) = nullptr;  // nvmlDeviceGetUUID
  NvmlReturn (*name)(NvmlDevice, char*, unsigned int) = nullptr;  // nvmlDeviceGetName
  NvmlReturn (*driver_version)(char*, unsigned int) = nullptr;    // nvmlSystemGetDriverVersion
  NvmlReturn (*cuda_version)(int*) = nullptr;                     // nvmlSystemGetCudaDriverVersion_v2
  // MIG: a GPU split into instances, each a device of its own to CUDA
  // (its UUID "MIG-…", its memory); each may be null (no MIG).
  NvmlReturn (*mig_mode)(NvmlDevice, unsigned int*, unsigned int*) = nullptr;   // nvmlDeviceGetMigMode
  NvmlReturn (*max_mig_count)(NvmlDevice, unsigned int*) = nullptr;             // nvmlDeviceGetMaxMigDeviceCount
  NvmlReturn (*mig_by_index)(NvmlDevice, unsigned int, NvmlDevice*) = nullptr;  // nvmlDeviceGetMigDeviceHandleByIndex

  // "NVML error 3 (Not Supported)" style text for a code.
  std::string describe(NvmlReturn code) const;
};

// An opened NVML: the table and the dlopen handle behind it, closed (after
// nvmlShutdown) when the last owner lets go.
class NvmlLibrary {
 public:
  NvmlLibrary(void* handle, NvmlApi api) : handle_(handle), api_(api) {}
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;
  const NvmlApi& api() const { return api_; }

 private:
  void* handle_;
  NvmlApi api_;
};

// The library NVIDIA's driver installs.
inline constexpr const char* kNvmlLibraryName = "libnvidia-ml.so.1";
// Tests only: a path to load instead of kNvmlLibraryName (a library that
// answers NVML's calls). Documented in docs/runner.md, "GPU memory".
inline constexpr const char* kNvmlLibraryVariable = "MEMSWEEP_TEST_NVML_LIBRARY";

struct NvmlOpen {
  std::shared_ptr<NvmlLibrary> library;  // null: not available
  std::string problem;                   // why not, one line
};

// dlopen + dlsym + nvmlInit_v2. Never throws: a library that is absent, lacks
// a symbol, or fails its init gives a null library and the reason. An
// absent library is kNoDriverLine.
NvmlOpen open_nvml(const std::string& path);
// open_nvml of kNvmlLibraryVariable's path when set, else kNvmlLibraryName.
NvmlOpen open_system_nvml();

inline constexpr const char* kNoDriverLine = "no NVIDIA driver: GPU memory not sampled";

}  // namespace memsweep::gpu
