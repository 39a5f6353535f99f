// A small shared library that answers NVML's calls, for the GPU reader's
// tests (tests/sampler/test_gpu_memory.cpp): it exports the symbol names
// libnvidia-ml.so.1 does, with the same C signatures, and a few fake_nvml_*
// functions through which a test scripts the devices, their used memory,
// their processes and the codes each call returns. Loaded by path.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Process {
  unsigned int pid;
  unsigned long long used;
};

struct Device {
  std::string uuid;
  unsigned long long used = 0;
  int memory_result = 0;
  int process_result = 0;
  std::vector<Process> processes;
};

struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

constexpr unsigned long long kTotal = 80ULL << 30;
constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kInsufficientSize = 7;

int init_result = kSuccess;
int inits = 0;
int shutdowns = 0;
int process_calls = 0;
std::vector<Device> devices;

Device* device_of(void* handle) {
  const auto index = reinterpret_cast<std::size_t>(handle) - 1;  // handles are index + 1
  return index < devices.size() ? &devices[index] : nullptr;
}

// A text into the caller's buffer, as NVML does: refused when it does not fit.
int copy_text(const std::string& text, char* out, unsigned int length) {
  if (out == nullptr) return kInvalidArgument;
  if (text.size() + 1 > length) return kInsufficientSize;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return kSuccess;
}

}  // namespace

extern "C" {

// The control side.
void fake_nvml_reset() {
  init_result = kSuccess;
  inits = shutdowns = process_calls = 0;
  devices.clear();
}
void fake_nvml_set_init_result(int result) { init_result = result; }
unsigned fake_nvml_add_device(unsigned long long used) {
  // A UUID of the real form, told apart by the device's index.
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-00000000-1111-2222-3333-%012zu", devices.size());
  devices.push_back(Device{uuid, used, kSuccess, kSuccess, {}});
  return static_cast<unsigned>(devices.size() - 1);
}
void fake_nvml_set_uuid(unsigned index, const char* uuid) { devices.at(index).uuid = uuid; }
void fake_nvml_set_used(unsigned index, unsigned long long used) { devices.at(index).used = used; }
void fake_nvml_set_memory_result(unsigned index, int result) { devices.at(index).memory_result = result; }
void fake_nvml_set_process_result(unsigned index, int result) { devices.at(index).process_result = result; }
void fake_nvml_add_process(unsigned index, unsigned pid, unsigned long long used) {
  devices.at(index).processes.push_back(Process{pid, used});
}
void fake_nvml_clear_processes(unsigned index) { devices.at(index).processes.clear(); }
int fake_nvml_inits() { return inits; }
int fake_nvml_shutdowns() { return shutdowns; }
int fake_nvml_process_calls() { return process_calls; }

// NVML's side.
int nvmlInit_v2() {
  ++inits;
  return init_result;
}
int nvmlShutdown() {
  ++shutdowns;
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned int>(devices.size());
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (device == nullptr || index >= devices.size()) return kInvalidArgument;
  *device = reinterpret_cast<void*>(static_cast<std::size_t>(index) + 1);
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* handle, NvmlMemory* memory) {
  Device* device = device_of(handle);
  if (device == nullptr || memory == nullptr) return kInvalidArgument;
  if (device->memory_result != kSuccess) return device->memory_result;
  memory->total = kTotal;
  memory->used = device->used;
  memory->free = kTotal - device->used;
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count, NvmlProcessInfo* infos) {
  ++process_calls;
  Device* device = device_of(handle);
  if (device == nullptr || count == nullptr) return kInvalidArgument;
  if (device->process_result != kSuccess) return device->process_result;
  const auto needed = static_cast<unsigned int>(device->processes.size());
  if (*count < needed || (needed > 0 && infos == nullptr)) {
    *count = needed;
    return kInsufficientSize;
  }
  *count = needed;
  for (unsigned int i = 0; i < needed; ++i)
    infos[i] = NvmlProcessInfo{device->processes[i].pid, device->processes[i].used, 0xFFFFFFFFU, 0xFFFFFFFFU};
  return kSuccess;
}
int nvmlDeviceGetUUID(void* handle, char* uuid, unsigned int length) {
  Device* device = device_of(handle);
  return device == nullptr ? kInvalidArgument : copy_text(device->uuid, uuid, length);
}
int nvmlDeviceGetName(void* handle, char* name, unsigned int length) {
  return device_of(handle) == nullptr ? kInvalidArgument : copy_text("Fake GPU 80GB", name, length);
}
int nvmlSystemGetDriverVersion(char* version, unsigned int length) { return copy_text("999.12.34", version, length); }
int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (version == nullptr) return kInvalidArgument;
  *version = 12020;
  return kSuccess;
}
const char* nvmlErrorString(int result) {
  switch (result) {
    case 0: return "Success";
    case 2: return "Invalid Argument";
    case 3: return "Not Supported";
    case 7: return "Insufficient Size";
    case 9: return "Driver Not Loaded";
    default: return "Unknown Error";
  }
}

}  // extern "C"
