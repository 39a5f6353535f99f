#include "dataset/idx.hpp"

#include "dataset/labels.hpp"
#include "dataset/pixels.hpp"

#include <fmt/format.h>

#include <utility>

namespace memsweep::dataset::detail {
namespace {

constexpr std::size_t kIdxFieldBytes = 4;
// Far above any real image (MNIST has 784 pixels); keeps count * pixels well
// inside 64 bits for any 32-bit count.
constexpr std::uint64_t kMaxIdxImagePixels = std::uint64_t{1} << 24;

std::uint32_t read_big_endian_u32(std::span<const std::uint8_t> bytes, std::size_t offset) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < kIdxFieldBytes; ++i) value = (value << 8) | bytes[offset + i];
  return value;
}

std::string_view describe_magic(std::uint32_t magic) {
  if (magic == kIdxImagesMagic) return " (an IDX image file)";
  if (magic == kIdxLabelsMagic) return " (an IDX label file)";
  if ((magic >> 8) == 0x1f8b08) return " (gzip data: compressed twice?)";
  return "";
}

void check_header(std::span<const std::uint8_t> bytes, std::size_t header_bytes, std::uint32_t magic,
                  std::string_view kind, std::string_view source_name) {
  if (bytes.size() < header_bytes)
    throw DatasetError(fmt::format("{}: too short for an IDX {} header: expected {} bytes, found {}", source_name, kind,
                                   header_bytes, bytes.size()));
  const std::uint32_t found = read_big_endian_u32(bytes, 0);
  if (found != magic)
    throw DatasetError(fmt::format("{}: wrong magic number for IDX {}: expected 0x{:08X}, found 0x{:08X}{}",
                                   source_name, kind, magic, found, describe_magic(found)));
}

// The data must be exactly what the header announces: less is a truncated
// file, more is not the format we think it is.
void check_data_size(std::span<const std::uint8_t> bytes, std::size_t header_bytes, std::uint64_t data_bytes,
                     std::string_view what, std::string_view source_name) {
  const std::uint64_t expected = header_bytes + data_bytes;
  if (bytes.size() < expected)
    throw DatasetError(fmt::format("{}: truncated: expected {} bytes for {} (header {} + data {}), found {}",
                                   source_name, expected, what, header_bytes, data_bytes, bytes.size()));
  if (bytes.size() > expected)
    throw DatasetError(fmt::format("{}: expected {} bytes for {}, found {}: {} unexpected bytes after the data",
                                   source_name, expected, what, bytes.size(), bytes.size() - expected));
}

}  // namespace

IdxHeader parse_idx_images_header(std::span<const std::uint8_t> bytes, std::string_view source_name) {
  check_header(bytes, kIdxImagesHeaderBytes, kIdxImagesMagic, "images", source_name);
  IdxHeader header;
  header.count = read_big_endian_u32(bytes, kIdxFieldBytes);
  header.rows = read_big_endian_u32(bytes, 2 * kIdxFieldBytes);
  header.columns = read_big_endian_u32(bytes, 3 * kIdxFieldBytes);
  const std::uint64_t pixels = std::uint64_t{header.rows} * header.columns;
  if (pixels == 0 || pixels > kMaxIdxImagePixels)
    throw DatasetError(
        fmt::format("{}: implausible image size {}x{} in the IDX header", source_name, header.rows, header.columns));
  header.file_bytes = kIdxImagesHeaderBytes + header.count * pixels;
  return header;
}

IdxHeader parse_idx_labels_header(std::span<const std::uint8_t> bytes, std::string_view source_name) {
  check_header(bytes, kIdxLabelsHeaderBytes, kIdxLabelsMagic, "labels", source_name);
  IdxHeader header;
  header.count = read_big_endian_u32(bytes, kIdxFieldBytes);
  header.file_bytes = kIdxLabelsHeaderBytes + header.count;
  return header;
}

IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source_name) {
  const IdxHeader header = parse_idx_images_header(bytes, source_name);
  IdxImages images;
  images.count = header.count;
  images.rows = header.rows;
  images.columns = header.columns;
  check_data_size(bytes, kIdxImagesHeaderBytes, header.file_bytes - kIdxImagesHeaderBytes,
                  fmt::format("{} images of {}x{}", images.count, images.rows, images.columns), source_name);
  images.pixels = bytes.subspan(kIdxImagesHeaderBytes);
  return images;
}

std::vector<std::int32_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source_name,
                                           int classes) {
  const std::size_t count = parse_idx_labels_header(bytes, source_name).count;
  check_data_size(bytes, kIdxLabelsHeaderBytes, count, fmt::format("{} labels", count), source_name);
  const auto data = bytes.subspan(kIdxLabelsHeaderBytes);
  std::vector<std::int32_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    check_label(data[i], i, classes, source_name, "index");
    labels[i] = data[i];
  }
  return labels;
}

Split make_idx_split(const IdxImages& images, std::string_view images_name, std::vector<std::int32_t> labels,
                     std::string_view labels_name, ImageShape shape, int classes) {
  if (images.count != labels.size())
    throw DatasetError(fmt::format("{} holds {} images but {} holds {} labels: they must match one to one", images_name,
                                   images.count, labels_name, labels.size()));
  if (images.count == 0) throw DatasetError(fmt::format("{} holds no images", images_name));
  if (images.rows != static_cast<std::size_t>(shape.height) || images.columns != static_cast<std::size_t>(shape.width))
    throw DatasetError(fmt::format("{}: images are {}x{}, expected {}x{}", images_name, images.rows, images.columns,
                                   shape.height, shape.width));
  Split split;
  split.shape = shape;
  split.classes = classes;
  split.labels = std::move(labels);
  split.images.resize(images.pixels.size());
  scale_pixels(images.pixels, split.images);
  return split;
}

}  // namespace memsweep::dataset::detail
