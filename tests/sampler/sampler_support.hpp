#pragma once
// Helpers for the sampler tests: a scripted memory probe, and memory that
// is really faulted in page by page.

#include "memsweep/sampler.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

namespace memsweep::testing {

inline constexpr std::int64_t kMiB = 1 << 20;

// A probe that reports what the test sets, and can be made slow.
class FakeProbe final : public MemoryProbe {
 public:
  std::atomic<std::int64_t> rss{100 * kMiB};
  std::atomic<std::int64_t> peak{150 * kMiB};
  std::atomic<std::int64_t> pss{80 * kMiB};
  std::atomic<bool> fail_process{false};
  std::atomic<bool> fail_peak{false};
  std::atomic<bool> allow_reset{true};
  std::chrono::microseconds process_delay{0};
  std::atomic<int> trims{0};
  std::atomic<int> resets{0};

  bool read_process(ProcessMemory& out) noexcept override {
    if (process_delay.count() > 0) std::this_thread::sleep_for(process_delay);
    if (fail_process) return false;
    out.rss_bytes = rss;
    out.anon_rss_bytes = rss / 2;
    return true;
  }
  bool read_system(SystemMemory& out) noexcept override {
    out = {1000 * kMiB, 400 * kMiB, 50 * kMiB, 150 * kMiB, 600 * kMiB, 300 * kMiB};
    return true;
  }
  bool read_pss(std::int64_t& pss_bytes) noexcept override {
    pss_bytes = pss;
    return true;
  }
  bool read_peak_rss(std::int64_t& peak_bytes) noexcept override {
    if (fail_peak) return false;
    peak_bytes = peak;
    return true;
  }
  bool reset_peak_rss() noexcept override {
    ++resets;
    if (allow_reset) peak = rss.load();
    return allow_reset;
  }
  void release_free_memory() noexcept override { ++trims; }
};

// Anonymous memory mapped without transparent huge pages, so that touching
// it faults exactly one 4 KiB page at a time.
class TouchedPages {
 public:
  explicit TouchedPages(std::size_t bytes) : bytes_(bytes) {
    data_ = static_cast<char*>(::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (data_ == MAP_FAILED) throw std::bad_alloc();
    ::madvise(data_, bytes_, MADV_NOHUGEPAGE);
  }
  ~TouchedPages() { ::munmap(data_, bytes_); }
  TouchedPages(const TouchedPages&) = delete;
  TouchedPages& operator=(const TouchedPages&) = delete;

  void touch() {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    for (std::size_t at = 0; at < bytes_; at += page) data_[at] = 1;
  }
  std::size_t pages() const { return bytes_ / static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

 private:
  std::size_t bytes_;
  char* data_;
};

inline std::vector<Sample> all_samples(Sampler& sampler) {
  std::vector<Sample> samples;
  sampler.drain([&](const SampleChunk& chunk) {
    for (const Sample& sample : chunk.view()) samples.push_back(sample);
  });
  return samples;
}

inline std::int64_t current_rss(MemoryProbe& probe) {
  ProcessMemory memory;
  return probe.read_process(memory) ? memory.rss_bytes : -1;
}

}  // namespace memsweep::testing
