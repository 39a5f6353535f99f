// Fuzz target: the IDX files of MNIST and Fashion-MNIST. Every input is
// tried three ways: as an image file, as a label file, and as a pair (a
// big-endian 32-bit length, that many bytes of image file, then the label
// file), which goes on to make_idx_split as the loader does. DatasetError
// (an InputError) is the expected answer to bad input; anything else
// escaping, or a crash, is a finding.

#include "dataset/idx.hpp"
#include "memsweep/dataset.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>

namespace {

constexpr int kClasses = 10;
constexpr std::size_t kLengthBytes = 4;

void try_images(std::span<const std::uint8_t> bytes) {
  try {
    (void)memsweep::dataset::detail::parse_idx_images(bytes, "images");
  } catch (const memsweep::InputError&) {
  }
}

void try_labels(std::span<const std::uint8_t> bytes) {
  try {
    (void)memsweep::dataset::detail::parse_idx_labels(bytes, "labels", kClasses);
  } catch (const memsweep::InputError&) {
  }
}

// As load_idx_split: both files, then the split in the images' own shape
// (the loader's expected shape is only compared, so its own one goes further).
void try_pair(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < kLengthBytes) return;
  std::size_t image_bytes = 0;
  for (std::size_t i = 0; i < kLengthBytes; ++i) image_bytes = (image_bytes << 8) | bytes[i];
  const auto rest = bytes.subspan(kLengthBytes);
  image_bytes = std::min(image_bytes, rest.size());
  try {
    auto labels = memsweep::dataset::detail::parse_idx_labels(rest.subspan(image_bytes), "labels", kClasses);
    const auto images = memsweep::dataset::detail::parse_idx_images(rest.first(image_bytes), "images");
    constexpr auto kMaxSide = static_cast<std::size_t>(std::numeric_limits<int>::max());
    const memsweep::ImageShape shape{1, static_cast<int>(std::min(images.rows, kMaxSide)),
                                     static_cast<int>(std::min(images.columns, kMaxSide))};
    (void)memsweep::dataset::detail::make_idx_split(images, "images", std::move(labels), "labels", shape, kClasses);
  } catch (const memsweep::InputError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  try_images(bytes);
  try_labels(bytes);
  try_pair(bytes);
  return 0;
}
