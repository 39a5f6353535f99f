#pragma once
// Pixel bytes to the float32 values every split holds.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace memsweep::dataset::detail {

inline constexpr float kPixelMax = 255.0F;

// value / 255 for every byte value, computed once: a lookup is cheaper than a
// division per pixel and gives the correctly rounded quotient.
inline const std::array<float, 256>& pixel_scale_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> values{};
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) / kPixelMax;
    return values;
  }();
  return table;
}

// dst[i] = src[i] / 255; dst must be at least as long as src.
inline void scale_pixels(std::span<const std::uint8_t> src, std::span<float> dst) {
  const auto& table = pixel_scale_table();
  for (std::size_t i = 0; i < src.size(); ++i) dst[i] = table[src[i]];
}

}  // namespace memsweep::dataset::detail
