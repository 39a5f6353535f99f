#pragma once
// The IDX format of MNIST and Fashion-MNIST, parsed from bytes already in
// memory (reading the file is gzip_file's job). Layout: a big-endian 32-bit
// magic number (0x0000 08 nd: unsigned bytes, nd dimensions), nd big-endian
// 32-bit sizes, then the data, row-major.

#include "memsweep/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace memsweep::dataset::detail {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
inline constexpr std::size_t kIdxImagesHeaderBytes = 16;      // magic, count, rows, columns
inline constexpr std::size_t kIdxLabelsHeaderBytes = 8;       // magic, count

struct IdxImages {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::span<const std::uint8_t> pixels;  // count * rows * columns bytes, a view into the parsed buffer
};

// The header alone (the first kIdx*HeaderBytes of a file): what the file
// announces, checked as far as the header goes (length, magic number, a
// plausible image size). Throws DatasetError as the parsers below.
struct IdxHeader {
  std::size_t count = 0;
  std::size_t rows = 0;          // images only
  std::size_t columns = 0;       // images only
  std::uint64_t file_bytes = 0;  // header + data: the whole uncompressed file
};
IdxHeader parse_idx_images_header(std::span<const std::uint8_t> bytes, std::string_view source_name);
IdxHeader parse_idx_labels_header(std::span<const std::uint8_t> bytes, std::string_view source_name);

// Each throws DatasetError naming `source_name` and what is wrong: a short
// header, a wrong magic number, a data size other than the header implies
// (truncated, or bytes after the data), a label outside [0, classes).
IdxImages parse_idx_images(std::span<const std::uint8_t> bytes, std::string_view source_name);
std::vector<std::int32_t> parse_idx_labels(std::span<const std::uint8_t> bytes, std::string_view source_name,
                                           int classes);

// A split from parsed images and labels, pixels scaled to [0, 1]. Throws
// DatasetError when the counts differ or the images are not `shape`.
Split make_idx_split(const IdxImages& images, std::string_view images_name, std::vector<std::int32_t> labels,
                     std::string_view labels_name, ImageShape shape, int classes);

}  // namespace memsweep::dataset::detail
