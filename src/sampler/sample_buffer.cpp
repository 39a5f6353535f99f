#include "sampler/sample_buffer.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace memsweep::sampler::detail {

IndexRing::IndexRing(std::size_t capacity)
    : slots_(std::bit_ceil(std::max<std::size_t>(capacity, 1))), mask_(slots_.size() - 1) {}

bool IndexRing::push(std::uint32_t value) noexcept {
  const std::size_t tail = tail_.load(std::memory_order_relaxed);
  if (tail - head_.load(std::memory_order_acquire) == slots_.size()) return false;
  slots_[tail & mask_] = value;
  tail_.store(tail + 1, std::memory_order_release);
  return true;
}

bool IndexRing::pop(std::uint32_t& value) noexcept {
  const std::size_t head = head_.load(std::memory_order_relaxed);
  if (head == tail_.load(std::memory_order_acquire)) return false;
  value = slots_[head & mask_];
  head_.store(head + 1, std::memory_order_release);
  return true;
}

// The vector value-initialises every chunk, which writes (and so faults in)
// every page now rather than on the tick.
SampleBuffer::SampleBuffer(std::size_t chunk_count) : chunks_(chunk_count), free_(chunk_count), full_(chunk_count) {
  if (chunk_count == 0) throw std::invalid_argument("the sampler needs at least one chunk");
  for (std::uint32_t i = 0; i < chunk_count; ++i) free_.push(i);
}

bool SampleBuffer::acquire() noexcept {
  std::uint32_t index = 0;
  if (!free_.pop(index)) return false;
  current_index_ = index;
  current_ = &chunks_[index];
  current_->count = 0;
  current_->sequence = next_sequence_++;
  current_->dropped_before = dropped_since_handover_;
  dropped_since_handover_ = 0;
  return true;
}

bool SampleBuffer::push(const Sample& sample, std::int64_t max_age_ns) noexcept {
  if (current_ == nullptr && !acquire()) {
    ++dropped_since_handover_;
    dropped_total_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  current_->samples[current_->count++] = sample;
  if (current_->count == kSamplesPerChunk || sample.t_ns - current_->samples[0].t_ns >= max_age_ns) hand_over();
  return true;
}

void SampleBuffer::hand_over() noexcept {
  if (current_ == nullptr || current_->count == 0) return;
  // Cannot fail: the ring holds as many slots as there are chunks.
  full_.push(current_index_);
  current_ = nullptr;
  chunks_filled_.fetch_add(1, std::memory_order_relaxed);
}

std::size_t SampleBuffer::drain(const std::function<void(const SampleChunk&)>& consume) {
  std::size_t passed = 0;
  std::uint32_t index = 0;
  while (full_.pop(index)) {
    struct Recycle {
      IndexRing& ring;
      std::uint32_t index;
      ~Recycle() { ring.push(index); }
    } recycle{free_, index};
    consume(chunks_[index]);
    ++passed;
  }
  return passed;
}

}  // namespace memsweep::sampler::detail
