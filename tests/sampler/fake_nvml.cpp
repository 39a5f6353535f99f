// A small shared library that answers NVML's calls, for the GPU reader's
// tests (tests/sampler/test_gpu_memory.cpp): it exports the symbol names
// libnvidia-ml.so.1 does, with the same C signatures, and a few fake_nvml_*
// functions through which a test scripts the devices (MIG instances too),
// their used memory, their processes and the codes each call returns.
// Loaded by path.
//
// In a whole run (memsweep loads it through MEMSWEEP_TEST_NVML_LIBRARY)
// the devices come from the environment at nvmlInit: MEMSWEEP_TEST_GPUS
// devices of MEMSWEEP_TEST_GPU_MEMORY bytes (80 GiB), the first split
// into MEMSWEEP_TEST_GPU_MIG instances when set. With
// MEMSWEEP_TEST_GPU_BOOKS, a folder, a device's processes are the books
// the programs keep there, as the test CUDA driver does
// (tests/sampler/fake_cuda.cpp): <books>/<UUID>/<pid> holds the bytes that
// process has on the device; a process that ended is dropped, as the
// driver drops it.

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Process {
  unsigned int pid;
  unsigned long long used;
};

constexpr unsigned long long kTotal = 80ULL << 30;

struct Device {
  std::string uuid;
  unsigned long long used = 0;
  int memory_result = 0;
  int process_result = 0;
  std::vector<Process> processes;
  unsigned long long total = kTotal;
  std::vector<std::size_t> instances;  // MIG: indices into mig_devices
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

constexpr int kSuccess = 0;
constexpr int kNotSupported = 3;
constexpr int kInvalidArgument = 2;
constexpr int kInsufficientSize = 7;

int init_result = kSuccess;
int inits = 0;
int shutdowns = 0;
int process_calls = 0;
std::vector<Device> devices;
std::vector<Device> mig_devices;
std::string books;  // MEMSWEEP_TEST_GPU_BOOKS

// Handles are index + 1; a MIG instance's, kMigHandles + its index + 1.
constexpr std::size_t kMigHandles = 1 << 16;

Device* device_of(void* handle) {
  const auto value = reinterpret_cast<std::size_t>(handle);
  if (value > kMigHandles)
    return value - kMigHandles - 1 < mig_devices.size() ? &mig_devices[value - kMigHandles - 1] : nullptr;
  const std::size_t index = value - 1;
  return index < devices.size() ? &devices[index] : nullptr;
}

std::string uuid_text(const char* kind, std::size_t index) {
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "%s-00000000-1111-2222-3333-%012zu", kind, index);
  return uuid;
}

unsigned add_mig(unsigned parent, unsigned count, unsigned long long total) {
  for (unsigned i = 0; i < count; ++i) {
    Device instance{uuid_text("MIG", mig_devices.size()), 0, kSuccess, kSuccess, {}};
    instance.total = total;
    devices.at(parent).instances.push_back(mig_devices.size());
    mig_devices.push_back(instance);
  }
  return count;
}

unsigned long long environment_number(const char* name, unsigned long long otherwise) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : otherwise;
}

// The devices a whole run's environment asks for, once.
void devices_from_environment() {
  if (!devices.empty() || std::getenv("MEMSWEEP_TEST_GPUS") == nullptr) return;
  const unsigned long long count = environment_number("MEMSWEEP_TEST_GPUS", 0);
  const unsigned long long total = environment_number("MEMSWEEP_TEST_GPU_MEMORY", kTotal);
  for (unsigned long long i = 0; i < count; ++i) {
    Device device{uuid_text("GPU", devices.size()), 0, kSuccess, kSuccess, {}};
    device.total = total;
    devices.push_back(device);
  }
  if (const unsigned long long mig = environment_number("MEMSWEEP_TEST_GPU_MIG", 0); mig > 0 && !devices.empty())
    add_mig(0, static_cast<unsigned>(mig), total / mig);
  if (const char* folder = std::getenv("MEMSWEEP_TEST_GPU_BOOKS")) books = folder;
}

// A device's processes from the books: what each live process holds.
// NVML is called from the sampler's two threads at once: what they share
// is replaced whole, under a lock, as the real library's state is.
std::mutex books_lock;

void read_books(Device& device) {
  if (books.empty()) return;
  namespace fs = std::filesystem;
  std::vector<Process> processes;
  unsigned long long held = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(fs::path(books) / device.uuid, error)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(entry.path().filename().c_str(), &end, 10);
    if (pid == 0 || *end != '\0' || ::kill(static_cast<pid_t>(pid), 0) != 0)
      continue;  // ended: the driver let go of it
    unsigned long long bytes = 0;
    std::ifstream(entry.path()) >> bytes;
    processes.push_back(Process{static_cast<unsigned>(pid), bytes});
    held += bytes;
  }
  const std::lock_guard lock(books_lock);
  device.processes = std::move(processes);
  device.used = held;
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
  mig_devices.clear();
  books.clear();
}
void fake_nvml_set_init_result(int result) { init_result = result; }
unsigned fake_nvml_add_device(unsigned long long used) {
  // A UUID of the real form, told apart by the device's index.
  devices.push_back(Device{uuid_text("GPU", devices.size()), used, kSuccess, kSuccess, {}});
  return static_cast<unsigned>(devices.size() - 1);
}
// Splits device `parent` into `count` MIG instances of `total` bytes each.
unsigned fake_nvml_add_mig(unsigned parent, unsigned count, unsigned long long total) {
  return add_mig(parent, count, total);
}
void fake_nvml_set_total(unsigned index, unsigned long long total) { devices.at(index).total = total; }
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
  devices_from_environment();
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
  read_books(*device);
  const std::lock_guard lock(books_lock);
  memory->total = device->total;
  memory->used = device->used;
  memory->free = device->used < device->total ? device->total - device->used : 0;
  return kSuccess;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void* handle, unsigned int* count, NvmlProcessInfo* infos) {
  ++process_calls;
  Device* device = device_of(handle);
  if (device == nullptr || count == nullptr) return kInvalidArgument;
  if (device->process_result != kSuccess) return device->process_result;
  read_books(*device);
  const std::lock_guard lock(books_lock);
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
  const Device* device = device_of(handle);
  if (device == nullptr) return kInvalidArgument;
  const bool mig = reinterpret_cast<std::size_t>(handle) > kMigHandles;
  return copy_text((mig ? "Fake GPU MIG " : "Fake GPU ") + std::to_string(device->total >> 30) + "GB", name, length);
}
int nvmlSystemGetDriverVersion(char* version, unsigned int length) { return copy_text("999.12.34", version, length); }
int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (version == nullptr) return kInvalidArgument;
  *version = 12020;
  return kSuccess;
}
int nvmlDeviceGetMigMode(void* handle, unsigned int* current, unsigned int* pending) {
  Device* device = device_of(handle);
  if (device == nullptr || current == nullptr || pending == nullptr) return kInvalidArgument;
  if (reinterpret_cast<std::size_t>(handle) > kMigHandles) return kNotSupported;
  *current = *pending = device->instances.empty() ? 0 : 1;
  return kSuccess;
}
int nvmlDeviceGetMaxMigDeviceCount(void* handle, unsigned int* count) {
  Device* device = device_of(handle);
  if (device == nullptr || count == nullptr) return kInvalidArgument;
  *count = static_cast<unsigned int>(device->instances.size());
  return kSuccess;
}
int nvmlDeviceGetMigDeviceHandleByIndex(void* handle, unsigned int index, void** instance) {
  Device* device = device_of(handle);
  if (device == nullptr || instance == nullptr || index >= device->instances.size()) return kInvalidArgument;
  *instance = reinterpret_cast<void*>(kMigHandles + device->instances[index] + 1);
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
