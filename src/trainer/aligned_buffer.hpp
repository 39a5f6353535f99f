#pragma once
// A zero-filled float array aligned for vector loads, owned.

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace memsweep::trainer::detail {

inline constexpr std::size_t kBufferAlignment = 64;  // a cache line; AVX-512 loads

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t floats) : size_(floats) {
    if (floats == 0) return;
    const std::size_t bytes = (floats * sizeof(float) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    data_.reset(static_cast<float*>(std::aligned_alloc(kBufferAlignment, bytes)));
    if (!data_) throw std::bad_alloc();
    std::fill_n(data_.get(), floats, 0.0f);
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(float); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float[], Free> data_;
  std::size_t size_ = 0;
};

}  // namespace memsweep::trainer::detail
