#pragma once
// Counts of values and bytes that stop at 2^64 - 1 instead of wrapping: the
// sweep file's limits allow shapes whose sizes do not fit 64 bits (a
// 64x4096x4096 input, a million channels, a batch of 2^20), and a wrapped
// count would show such a trial as small.

#include <cstdint>
#include <limits>

namespace memsweep::estimate::detail {

inline constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? kSaturated : sum;
}

inline std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? kSaturated : product;
}

}  // namespace memsweep::estimate::detail
