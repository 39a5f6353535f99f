// A small shared library that answers the CUDA driver API calls memsweep's
// GPU reserve makes (cuInit, cuDeviceGet*, cuCtxCreate, cuMemGetInfo,
// cuMemAlloc, cuMemFree), with the C signatures libcuda.so.1 exports, for
// tests without a GPU: loaded by path through MEMSWEEP_TEST_CUDA_LIBRARY
// (the reserve), or by a test program (tests/sampler/fake_cuda_program.cpp).
//
// Its devices are the test NVML's (tests/sampler/fake_nvml.cpp), shared
// through the books both keep in MEMSWEEP_TEST_GPU_BOOKS: <books>/<UUID>/
// <pid> holds what each process has allocated on the device (a context
// counts kContextBytes). A device's free memory is its size
// (MEMSWEEP_TEST_GPU_MEMORY, 80 GiB) less what every live process holds,
// so that one process's allocation is another's out-of-memory, as on a
// real device. Which devices a process sees: CUDA_VISIBLE_DEVICES (UUIDs
// of the test NVML's form), else all MEMSWEEP_TEST_GPUS of them.

#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

using CuResult = int;
constexpr CuResult kSuccess = 0;
constexpr CuResult kInvalidValue = 1;
constexpr CuResult kOutOfMemory = 2;
constexpr CuResult kNotInitialized = 3;
constexpr CuResult kNoDevice = 100;
constexpr CuResult kInvalidDevice = 101;

constexpr unsigned long long kDefaultTotal = 80ULL << 30;
// What a context takes on its device: the driver's own state, as a real
// context's few hundred MiB, smaller.
constexpr unsigned long long kContextBytes = 64ULL << 20;

bool initialized = false;
std::vector<std::string> visible;                // UUIDs, CUDA's ordinals in order
std::map<std::string, unsigned long long> held;  // by UUID: this process's bytes
std::map<std::uintptr_t, std::pair<std::string, unsigned long long>> allocations;
std::uintptr_t next_address = 0x100000;

unsigned long long total_bytes() {
  const char* value = std::getenv("MEMSWEEP_TEST_GPU_MEMORY");
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : kDefaultTotal;
}

fs::path books() {
  const char* folder = std::getenv("MEMSWEEP_TEST_GPU_BOOKS");
  return folder != nullptr ? fs::path(folder) : fs::path();
}

std::string nvml_uuid(int index) {
  char uuid[64];
  std::snprintf(uuid, sizeof uuid, "GPU-00000000-1111-2222-3333-%012d", index);
  return uuid;
}

// What every live process holds on the device, from the books.
unsigned long long used_on(const std::string& uuid) {
  unsigned long long used = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(books() / uuid, error)) {
    char* end = nullptr;
    const unsigned long pid = std::strtoul(entry.path().filename().c_str(), &end, 10);
    if (pid == 0 || *end != '\0' || ::kill(static_cast<pid_t>(pid), 0) != 0) continue;
    unsigned long long bytes = 0;
    std::ifstream(entry.path()) >> bytes;
    used += bytes;
  }
  return used;
}

void write_books(const std::string& uuid) {
  if (books().empty()) return;
  const fs::path folder = books() / uuid;
  std::error_code error;
  fs::create_directories(folder, error);
  const fs::path own = folder / std::to_string(::getpid());
  const fs::path fresh = folder / (std::to_string(::getpid()) + ".new");
  std::ofstream(fresh) << held[uuid] << '\n';
  fs::rename(fresh, own, error);  // whole, for the readers
}

CuResult device_uuid(int device, std::string& uuid) {
  if (!initialized) return kNotInitialized;
  if (device < 0 || static_cast<std::size_t>(device) >= visible.size()) return kInvalidDevice;
  uuid = visible[static_cast<std::size_t>(device)];
  return kSuccess;
}

// The context's device: one context per process, on the device it was made for.
std::string current_device;

}  // namespace

extern "C" {

CuResult cuInit(unsigned int flags) {
  if (flags != 0) return kInvalidValue;
  if (initialized) return kSuccess;
  if (const char* list = std::getenv("CUDA_VISIBLE_DEVICES"); list != nullptr) {
    std::string text = list;
    for (std::size_t start = 0; start <= text.size();) {
      const std::size_t comma = text.find(',', start);
      const std::string entry = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (entry.rfind("GPU-", 0) != 0) break;  // as CUDA: the list ends at an entry that names no device
      visible.push_back(entry);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (const char* count = std::getenv("MEMSWEEP_TEST_GPUS"); count != nullptr) {
    for (int index = 0; index < std::atoi(count); ++index) visible.push_back(nvml_uuid(index));
  }
  initialized = true;
  return visible.empty() ? kNoDevice : kSuccess;
}

CuResult cuDeviceGetCount(int* count) {
  if (!initialized) return kNotInitialized;
  if (count == nullptr) return kInvalidValue;
  *count = static_cast<int>(visible.size());
  return kSuccess;
}

CuResult cuDeviceGet(int* device, int ordinal) {
  std::string uuid;
  if (device == nullptr) return kInvalidValue;
  if (const CuResult found = device_uuid(ordinal, uuid); found != kSuccess) return found;
  *device = ordinal;
  return kSuccess;
}

CuResult cuDeviceTotalMem_v2(std::size_t* bytes, int device) {
  std::string uuid;
  if (bytes == nullptr) return kInvalidValue;
  if (const CuResult found = device_uuid(device, uuid); found != kSuccess) return found;
  *bytes = total_bytes();
  return kSuccess;
}

CuResult cuCtxCreate_v2(void** context, unsigned int flags, int device) {
  (void)flags;
  std::string uuid;
  if (context == nullptr) return kInvalidValue;
  if (const CuResult found = device_uuid(device, uuid); found != kSuccess) return found;
  if (used_on(uuid) + kContextBytes > total_bytes()) return kOutOfMemory;
  current_device = uuid;
  held[uuid] += kContextBytes;
  write_books(uuid);
  *context = reinterpret_cast<void*>(static_cast<std::uintptr_t>(device) + 1);
  return kSuccess;
}

CuResult cuCtxDestroy_v2(void* context) {
  if (context == nullptr || current_device.empty()) return kInvalidValue;
  held[current_device] = 0;
  write_books(current_device);
  current_device.clear();
  return kSuccess;
}

CuResult cuMemGetInfo_v2(std::size_t* free, std::size_t* total) {
  if (free == nullptr || total == nullptr) return kInvalidValue;
  if (current_device.empty()) return kInvalidValue;  // no context
  const unsigned long long used = used_on(current_device);
  *total = total_bytes();
  *free = used < *total ? *total - used : 0;
  return kSuccess;
}

CuResult cuMemAlloc_v2(std::uintptr_t* pointer, std::size_t bytes) {
  if (pointer == nullptr || bytes == 0) return kInvalidValue;
  if (current_device.empty()) return kInvalidValue;
  if (used_on(current_device) + bytes > total_bytes()) return kOutOfMemory;
  held[current_device] += bytes;
  write_books(current_device);
  *pointer = next_address;
  allocations[next_address] = {current_device, bytes};
  next_address += bytes;
  return kSuccess;
}

CuResult cuMemFree_v2(std::uintptr_t pointer) {
  const auto found = allocations.find(pointer);
  if (found == allocations.end()) return kInvalidValue;
  held[found->second.first] -= found->second.second;
  write_books(found->second.first);
  allocations.erase(found);
  return kSuccess;
}

CuResult cuGetErrorString(CuResult error, const char** text) {
  if (text == nullptr) return kInvalidValue;
  switch (error) {
    case kSuccess: *text = "no error"; break;
    case kInvalidValue: *text = "invalid argument"; break;
    case kOutOfMemory: *text = "out of memory"; break;
    case kNotInitialized: *text = "initialization error"; break;
    case kNoDevice: *text = "no CUDA-capable device is detected"; break;
    case kInvalidDevice: *text = "invalid device ordinal"; break;
    default: *text = "unknown error"; break;
  }
  return kSuccess;
}

}  // extern "C"
