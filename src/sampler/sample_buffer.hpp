#pragma once
// The chunk pool between the sampler's tick (one producer) and one consumer:
// two single-producer single-consumer rings of chunk indices, one carrying
// full chunks to the consumer and one carrying empty ones back. Nothing is
// allocated, locked or waited for after construction.

#include "memsweep/sampler.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace memsweep::sampler::detail {

// Lock-free SPSC ring of indices; push fails when full, pop when empty.
class IndexRing {
 public:
  explicit IndexRing(std::size_t capacity);
  bool push(std::uint32_t value) noexcept;
  bool pop(std::uint32_t& value) noexcept;

 private:
  // Apart, so that the producer's and the consumer's writes do not share a
  // cache line.
  static constexpr std::size_t kCacheLine = 64;
  std::vector<std::uint32_t> slots_;
  std::size_t mask_;
  alignas(kCacheLine) std::atomic<std::size_t> head_{0};  // next to pop
  alignas(kCacheLine) std::atomic<std::size_t> tail_{0};  // next to push
};

class SampleBuffer {
 public:
  explicit SampleBuffer(std::size_t chunk_count);

  // Producer. Returns false when the sample was dropped: every chunk is full
  // and waiting for the consumer. The chunk is handed over when full or
  // when its first sample is `max_age_ns` older than this one.
  bool push(const Sample& sample, std::int64_t max_age_ns) noexcept;
  // Hands the partial chunk over (at stop).
  void hand_over() noexcept;

  // Consumer. A chunk is recycled even if `consume` throws.
  std::size_t drain(const std::function<void(const SampleChunk&)>& consume);

  // Any thread.
  std::uint64_t dropped_total() const noexcept { return dropped_total_.load(std::memory_order_relaxed); }
  std::uint64_t chunks_filled() const noexcept { return chunks_filled_.load(std::memory_order_relaxed); }
  std::size_t chunk_count() const noexcept { return chunks_.size(); }

 private:
  bool acquire() noexcept;

  std::vector<SampleChunk> chunks_;
  IndexRing free_;
  IndexRing full_;
  // The producer's own state.
  SampleChunk* current_ = nullptr;
  std::uint32_t current_index_ = 0;
  std::uint64_t next_sequence_ = 0;
  std::uint64_t dropped_since_handover_ = 0;
  std::atomic<std::uint64_t> dropped_total_{0};
  std::atomic<std::uint64_t> chunks_filled_{0};
};

}  // namespace memsweep::sampler::detail
