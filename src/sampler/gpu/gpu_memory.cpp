#include "sampler/gpu/gpu_memory.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

namespace memsweep::gpu {
namespace {

// Processes a device lists at first; the list grows on NVML's
// insufficient-size answer.
constexpr std::size_t kInitialProcessSlots = 64;
constexpr int kProcessListRetries = 3;

// A device whose used memory rose less than this above its start is not
// counted as the trial's in the fallback (other processes' noise, the
// driver's own bookkeeping).
constexpr std::int64_t kDeltaDeviceThreshold = 1 << 20;

std::vector<int> marked(std::uint32_t mask) {
  std::vector<int> indices;
  for (std::size_t i = 0; i < kMaxGpuDevices; ++i)
    if ((mask >> i) & 1U) indices.push_back(static_cast<int>(i));
  return indices;
}

// A text NVML writes into a buffer (`call(buffer, size)`); empty when the
// call fails, never a cut one.
template <typename Call>
std::string nvml_text(const Call& call) {
  std::array<char, kNvmlTextBufferSize> buffer{};
  if (call(buffer.data(), static_cast<unsigned int>(buffer.size())) != kNvmlSuccess) return {};
  buffer.back() = '\0';
  return std::string(buffer.data());
}

}  // namespace

std::chrono::nanoseconds next_tree_read_delay(std::chrono::nanoseconds last_cost) {
  return std::max<std::chrono::nanoseconds>(kMinTreeInterval, last_cost * kTreeCostSpacing);
}

TreeOnDevice tree_usage(std::span<const NvmlProcessInfo> processes, std::span<const int> pids) {
  TreeOnDevice usage;
  for (const NvmlProcessInfo& process : processes) {
    if (std::find(pids.begin(), pids.end(), static_cast<int>(process.pid)) == pids.end()) continue;
    usage.present = true;
    if (process.usedGpuMemory != kNvmlValueNotAvailable)
      usage.bytes += static_cast<std::int64_t>(process.usedGpuMemory);
  }
  return usage;
}

GpuMemoryReader::GpuMemoryReader(std::shared_ptr<NvmlLibrary> library) : library_(std::move(library)) {
  const NvmlApi& api = library_->api();
  unsigned int count = 0;
  const NvmlReturn counted = api.device_count(&count);
  if (counted != kNvmlSuccess) {
    open_problem_ = fmt::format("nvmlDeviceGetCount: {}: GPU memory not sampled", api.describe(counted));
    return;
  }
  if (count > kMaxGpuDevices) {
    open_problem_ = fmt::format("NVML lists {} GPUs: only the first {} are read", count, kMaxGpuDevices);
    count = kMaxGpuDevices;
  }
  for (unsigned int i = 0; i < count && devices_.size() < kMaxGpuDevices; ++i) add_device(i);
  buffer_.resize(kInitialProcessSlots);
}

void GpuMemoryReader::add_device(unsigned int index) {
  const NvmlApi& api = library_->api();
  NvmlDevice device = nullptr;
  const NvmlReturn found = api.device_by_index(index, &device);
  if (found != kNvmlSuccess) {
    // A device that cannot be opened (lost, or not ours under a container's
    // rules) holds its slot, so that the others keep their indices.
    if (open_problem_.empty())
      open_problem_ = fmt::format("nvmlDeviceGetHandleByIndex({}): {}", index, api.describe(found));
    devices_.push_back(nullptr);
    return;
  }
  unsigned int current = 0, pending = 0, instances = 0;
  const bool mig = api.mig_mode != nullptr && api.mig_mode(device, &current, &pending) == kNvmlSuccess &&
                   current == kNvmlMigEnabled && api.max_mig_count(device, &instances) == kNvmlSuccess;
  if (!mig) {
    devices_.push_back(device);
    return;
  }
  // The GPU itself runs no CUDA work in MIG mode: its instances do, and
  // each is read as a device (the slots of instances not made are absent).
  for (unsigned int slot = 0; slot < instances && devices_.size() < kMaxGpuDevices; ++slot) {
    NvmlDevice instance = nullptr;
    if (api.mig_by_index(device, slot, &instance) == kNvmlSuccess && instance != nullptr) devices_.push_back(instance);
  }
}

void GpuMemoryReader::select_devices(const std::vector<int>& indices) {
  if (indices.empty()) {
    selected_ = ~0U;
    return;
  }
  selected_ = 0;
  for (const int index : indices)
    if (index >= 0 && static_cast<std::size_t>(index) < kMaxGpuDevices) selected_ |= 1U << index;
}

void GpuMemoryReader::FirstFailure::note(int index, NvmlReturn failed) noexcept {
  if (code != kNvmlSuccess) return;
  code = failed;
  device = index;
}

std::int64_t GpuMemoryReader::read_device_used(std::span<std::int64_t> used) noexcept {
  std::fill(used.begin(), used.end(), -1);
  std::int64_t total = -1;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] == nullptr || ((selected_ >> i) & 1U) == 0) continue;
    NvmlMemory memory{};
    const NvmlReturn read = library_->api().memory_info(devices_[i], &memory);
    if (read != kNvmlSuccess) {
      memory_failure_.note(static_cast<int>(i), read);
      continue;
    }
    const auto bytes = static_cast<std::int64_t>(memory.used);
    if (i < used.size()) used[i] = bytes;
    total = std::max<std::int64_t>(total, 0) + bytes;
  }
  return total;
}

TreeGpuReading GpuMemoryReader::read_tree(std::span<const int> pids) {
  TreeGpuReading reading;
  const NvmlApi& api = library_->api();
  if (api.processes == nullptr || devices_.empty()) return reading;
  reading.ok = true;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (((selected_ >> i) & 1U) == 0) continue;
    if (devices_[i] == nullptr) {
      reading.ok = false;
      continue;
    }
    unsigned int count = 0;
    NvmlReturn listed = kNvmlErrorInsufficientSize;
    // The list may grow between the call that sizes it and the next.
    for (int attempt = 0; attempt < kProcessListRetries && listed == kNvmlErrorInsufficientSize; ++attempt) {
      count = static_cast<unsigned int>(buffer_.size());
      listed = api.processes(devices_[i], &count, buffer_.data());
      if (listed == kNvmlErrorInsufficientSize) buffer_.resize(std::max<std::size_t>(count, buffer_.size()) * 2);
    }
    if (listed != kNvmlSuccess) {
      process_failure_.note(static_cast<int>(i), listed);
      reading.ok = false;
      continue;
    }
    const TreeOnDevice usage = tree_usage(
        std::span<const NvmlProcessInfo>(buffer_.data(), std::min<std::size_t>(count, buffer_.size())), pids);
    if (!usage.present) continue;
    reading.bytes += usage.bytes;
    reading.devices.push_back(static_cast<int>(i));
  }
  return reading;
}

std::vector<std::string> GpuMemoryReader::problems() const {
  std::vector<std::string> problems;
  const NvmlApi& api = library_->api();
  if (!open_problem_.empty()) problems.push_back(open_problem_);
  if (memory_failure_.code != kNvmlSuccess)
    problems.push_back(fmt::format("nvmlDeviceGetMemoryInfo(device {}): {}: the device's used memory is missing",
                                   memory_failure_.device, api.describe(memory_failure_.code)));
  if (process_failure_.code != kNvmlSuccess)
    problems.push_back(fmt::format(
        "nvmlDeviceGetComputeRunningProcesses(device {}): {}: the GPU peak falls back to the device's used memory",
        process_failure_.device, api.describe(process_failure_.code)));
  return problems;
}

std::string cuda_version_text(int version) {
  if (version <= 0) return {};
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::vector<GpuDevice> GpuMemoryReader::describe_devices() const {
  const NvmlApi& api = library_->api();
  std::vector<GpuDevice> described;
  for (std::size_t index = 0; index < devices_.size(); ++index) {
    const NvmlDevice device = devices_[index];
    if (device == nullptr) continue;
    GpuDevice about;
    about.index = static_cast<int>(index);
    if (api.uuid != nullptr)
      about.uuid = nvml_text([&](char* out, unsigned int size) { return api.uuid(device, out, size); });
    if (api.name != nullptr)
      about.name = nvml_text([&](char* out, unsigned int size) { return api.name(device, out, size); });
    NvmlMemory memory{};
    if (api.memory_info(device, &memory) == kNvmlSuccess) about.total_bytes = static_cast<std::int64_t>(memory.total);
    described.push_back(std::move(about));
  }
  return described;
}

GpuDriver GpuMemoryReader::driver() const {
  const NvmlApi& api = library_->api();
  GpuDriver driver;
  if (api.driver_version != nullptr) driver.version = nvml_text(api.driver_version);
  int cuda = 0;
  if (api.cuda_version != nullptr && api.cuda_version(&cuda) == kNvmlSuccess)
    driver.cuda_version = cuda_version_text(cuda);
  return driver;
}

GpuOpen open_gpu_memory() {
  NvmlOpen opened = open_system_nvml();
  GpuOpen result;
  if (!opened.library) {
    result.problem = std::move(opened.problem);
    return result;
  }
  result.reader = std::make_unique<GpuMemoryReader>(std::move(opened.library));
  if (result.reader->device_count() == 0) {
    std::vector<std::string> problems = result.reader->problems();
    result.problem = problems.empty() ? "NVML lists no GPU: GPU memory not sampled" : problems.front();
    result.reader.reset();
  }
  return result;
}

std::string_view gpu_peak_source_name(GpuPeakSource source) {
  switch (source) {
    case GpuPeakSource::tree: return "tree";
    case GpuPeakSource::device_delta: return "device_delta";
    case GpuPeakSource::none: break;
  }
  return "";
}

void GpuTrialPeak::add_device_used(std::span<const std::int64_t> used) noexcept {
  std::int64_t delta = 0;
  bool any = false;
  for (std::size_t i = 0; i < used.size() && i < kMaxGpuDevices; ++i) {
    if (used[i] < 0) continue;
    if (!has_baseline_[i]) {
      baseline_[i] = used[i];  // the device's first good read is its start
      has_baseline_[i] = true;
      continue;
    }
    any = true;
    const std::int64_t rise = std::max<std::int64_t>(0, used[i] - baseline_[i]);
    if (rise >= kDeltaDeviceThreshold) {
      delta += rise;
      delta_devices_ |= 1U << i;
    }
  }
  if (any) delta_peak_ = std::max(delta_peak_, delta);
}

void GpuTrialPeak::add_tree(const TreeGpuReading& reading) noexcept {
  if (!reading.ok) return;
  tree_read_ = true;
  tree_peak_ = std::max(tree_peak_, reading.bytes);
  for (const int device : reading.devices)
    if (device >= 0 && static_cast<std::size_t>(device) < kMaxGpuDevices) tree_devices_ |= 1U << device;
}

void GpuTrialPeak::take_tree_from(const GpuTrialPeak& tree) noexcept {
  if (!tree.tree_read_) return;
  tree_read_ = true;
  tree_peak_ = std::max(tree_peak_, tree.tree_peak_);
  tree_devices_ |= tree.tree_devices_;
}

GpuPeakSource GpuTrialPeak::source() const {
  if (tree_read_) return GpuPeakSource::tree;
  if (delta_peak_ >= 0) return GpuPeakSource::device_delta;
  return GpuPeakSource::none;
}

std::int64_t GpuTrialPeak::peak_bytes() const {
  switch (source()) {
    case GpuPeakSource::tree: return tree_peak_;
    case GpuPeakSource::device_delta: return delta_peak_;
    case GpuPeakSource::none: break;
  }
  return -1;
}

std::vector<int> GpuTrialPeak::devices() const {
  switch (source()) {
    case GpuPeakSource::tree: return marked(tree_devices_);
    case GpuPeakSource::device_delta: return marked(delta_devices_);
    case GpuPeakSource::none: break;
  }
  return {};
}

std::string GpuTrialPeak::devices_text(const std::vector<int>& devices) {
  return fmt::format("{}", fmt::join(devices, ","));
}

}  // namespace memsweep::gpu
