#include "sampler/gpu/nvml_api.hpp"

#include <fmt/format.h>

#include <dlfcn.h>

#include <cstdlib>

namespace memsweep::gpu {
namespace {

template <typename Function>
bool find(void* handle, const char* name, Function& out) {
  out = reinterpret_cast<Function>(::dlsym(handle, name));
  return out != nullptr;
}

}  // namespace

std::string NvmlApi::describe(NvmlReturn code) const {
  const char* text = error_string != nullptr ? error_string(code) : nullptr;
  return text != nullptr ? fmt::format("NVML error {} ({})", code, text) : fmt::format("NVML error {}", code);
}

NvmlLibrary::~NvmlLibrary() {
  if (api_.shutdown != nullptr) api_.shutdown();
  if (handle_ != nullptr) ::dlclose(handle_);
}

NvmlOpen open_nvml(const std::string& path) {
  NvmlOpen opened;
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    opened.problem = kNoDriverLine;
    return opened;
  }
  NvmlApi api;
  // The versioned names are the ones current drivers export; the unversioned
  // ones are older ABIs with other structs (nvmlProcessInfo_v1_t lacks the
  // instance ids), so they are never used in their place.
  const bool complete = find(handle, "nvmlInit_v2", api.init) && find(handle, "nvmlShutdown", api.shutdown) &&
                        find(handle, "nvmlDeviceGetCount_v2", api.device_count) &&
                        find(handle, "nvmlDeviceGetHandleByIndex_v2", api.device_by_index) &&
                        find(handle, "nvmlDeviceGetMemoryInfo", api.memory_info) &&
                        find(handle, "nvmlErrorString", api.error_string);
  if (!complete) {
    opened.problem = fmt::format("{} lacks a function memsweep needs: GPU memory not sampled", path);
    ::dlclose(handle);
    return opened;
  }
  // Per-process figures are optional: without them the device's used memory
  // stands in (docs/runner.md, "GPU memory").
  if (!find(handle, "nvmlDeviceGetComputeRunningProcesses_v3", api.processes))
    find(handle, "nvmlDeviceGetComputeRunningProcesses_v2", api.processes);
  // What names a device and the driver is optional too: without it the
  // record is blank.
  find(handle, "nvmlDeviceGetUUID", api.uuid);
  find(handle, "nvmlDeviceGetName", api.name);
  find(handle, "nvmlSystemGetDriverVersion", api.driver_version);
  find(handle, "nvmlSystemGetCudaDriverVersion_v2", api.cuda_version);
  if (!(find(handle, "nvmlDeviceGetMigMode", api.mig_mode) &&
        find(handle, "nvmlDeviceGetMaxMigDeviceCount", api.max_mig_count) &&
        find(handle, "nvmlDeviceGetMigDeviceHandleByIndex", api.mig_by_index)))
    api.mig_mode = nullptr;  // all three or none
  const NvmlReturn init = api.init();
  if (init != kNvmlSuccess) {
    opened.problem =
        fmt::format("NVIDIA driver present but nvmlInit failed: {}: GPU memory not sampled", api.describe(init));
    ::dlclose(handle);
    return opened;
  }
  opened.library = std::make_shared<NvmlLibrary>(handle, api);
  return opened;
}

NvmlOpen open_system_nvml() {
  const char* override_path = std::getenv(kNvmlLibraryVariable);
  return open_nvml(override_path != nullptr && *override_path != '\0' ? override_path : kNvmlLibraryName);
}

}  // namespace memsweep::gpu
