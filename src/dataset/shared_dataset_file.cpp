#include "dataset/shared_dataset_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

namespace memsweep::dataset::detail {
namespace {

std::uint64_t align_up(std::uint64_t offset, std::uint64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

// a * b, or nullopt when it does not fit in 64 bits (a damaged header's
// dimensions must not wrap around into a size that looks plausible).
std::optional<std::uint64_t> checked_product(std::uint64_t a, std::uint64_t b) {
  std::uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

std::uint64_t pixels_of(const SharedSplitRecord& record) {
  return static_cast<std::uint64_t>(record.channels) * static_cast<std::uint64_t>(record.height) *
         static_cast<std::uint64_t>(record.width);
}

SharedSplitRecord place_split(const SplitView& split, std::uint64_t& offset, std::uint64_t alignment) {
  SharedSplitRecord record;
  record.channels = split.shape.channels;
  record.height = split.shape.height;
  record.width = split.shape.width;
  record.classes = split.classes;
  record.examples = split.size();
  record.images_offset = align_up(offset, alignment);
  offset = record.images_offset + split.images.size_bytes();
  record.labels_offset = align_up(offset, alignment);
  offset = record.labels_offset + split.labels.size_bytes();
  return record;
}

uLong crc_of(uLong crc, std::span<const std::byte> bytes) {
  return crc32_z(crc, reinterpret_cast<const Bytef*>(bytes.data()), bytes.size());
}

std::string split_problem(const SharedSplitRecord& record, std::string_view split, std::uint64_t header_bytes,
                          std::uint64_t file_bytes) {
  if (record.channels < 1 || record.height < 1 || record.width < 1 || record.classes < 1)
    return fmt::format("the {} split's shape {}x{}x{} or class count {} is not positive", split, record.channels,
                       record.height, record.width, record.classes);
  const auto array_problem = [&](std::string_view array, std::uint64_t offset, std::uint64_t values,
                                 std::uint64_t value_bytes) -> std::string {
    const auto bytes = checked_product(values, value_bytes);
    if (offset % value_bytes != 0)
      return fmt::format("the {} {} start at offset {}, not a multiple of {}", split, array, offset, value_bytes);
    if (!bytes || offset < header_bytes || offset > file_bytes || *bytes > file_bytes - offset)
      return fmt::format("the {} {} ({} values from offset {}) do not lie within the {} bytes after the header", split,
                         array, values, offset, file_bytes - header_bytes);
    return {};
  };
  const auto image_values = checked_product(record.examples, pixels_of(record));
  if (!image_values)
    return fmt::format("the {} split's size ({} examples of {} pixels) overflows", split, record.examples,
                       pixels_of(record));
  std::string problem = array_problem("images", record.images_offset, *image_values, sizeof(float));
  if (problem.empty()) problem = array_problem("labels", record.labels_offset, record.examples, sizeof(std::int32_t));
  return problem;
}

SplitView split_in(const SharedSplitRecord& record, std::span<const std::byte> file) {
  SplitView split;
  split.shape = ImageShape{record.channels, record.height, record.width};
  split.classes = record.classes;
  // The offsets are aligned and in bounds (shared_header_problem), and the
  // bytes were written as these types.
  split.images = std::span<const float>(reinterpret_cast<const float*>(file.data() + record.images_offset),
                                        record.examples * pixels_of(record));
  split.labels = std::span<const std::int32_t>(
      reinterpret_cast<const std::int32_t*>(file.data() + record.labels_offset), record.examples);
  return split;
}

}  // namespace

SharedFileHeader make_shared_header(const DatasetView& view, std::string_view key, std::size_t alignment) {
  SharedFileHeader header;
  header.magic = kSharedMagic;
  header.format_version = kSharedFormatVersion;
  header.header_bytes = sizeof(SharedFileHeader);
  std::copy_n(key.begin(), std::min(key.size(), header.key.size()), header.key.begin());
  const DatasetSpec& spec = view.spec;
  header.kind = static_cast<std::int32_t>(spec.kind);
  header.synthetic_channels = spec.synthetic.shape.channels;
  header.synthetic_height = spec.synthetic.shape.height;
  header.synthetic_width = spec.synthetic.shape.width;
  header.synthetic_classes = spec.synthetic.classes;
  header.synthetic_train_size = spec.synthetic.train_size;
  header.synthetic_test_size = spec.synthetic.test_size;
  header.synthetic_noise_bits = std::bit_cast<std::uint64_t>(spec.synthetic.noise);
  header.synthetic_seed = spec.synthetic.seed;
  std::uint64_t offset = sizeof(SharedFileHeader);
  header.train = place_split(view.train, offset, alignment);
  header.test = place_split(view.test, offset, alignment);
  header.file_bytes = offset;
  return header;
}

std::uint64_t shared_checksum(const SharedFileHeader& header, const DatasetView& view) {
  SharedFileHeader covered = header;
  covered.checksum = 0;
  covered.complete_mark = 0;
  uLong crc = crc32_z(0, Z_NULL, 0);
  crc = crc_of(crc, std::as_bytes(std::span(&covered, 1)));
  for (const SplitView* split : {&view.train, &view.test}) {
    crc = crc_of(crc, std::as_bytes(split->images));
    crc = crc_of(crc, std::as_bytes(split->labels));
  }
  return crc;
}

std::string shared_header_problem(const SharedFileHeader& header, std::uint64_t file_bytes) {
  if (header.magic != kSharedMagic)
    return fmt::format("not a memsweep shared dataset file (it does not start with \"{}\")",
                       std::string_view(kSharedMagic.data(), kSharedMagic.size()));
  if (header.format_version != kSharedFormatVersion)
    return fmt::format("format version {}, but this memsweep reads version {}", header.format_version,
                       kSharedFormatVersion);
  if (header.header_bytes != sizeof(SharedFileHeader))
    return fmt::format("a header of {} bytes, but format version {} has {}", header.header_bytes, kSharedFormatVersion,
                       sizeof(SharedFileHeader));
  if (header.complete_mark != kSharedCompleteMark)
    return "incomplete: its writer never set the completion mark (it stopped while writing)";
  if (header.file_bytes != file_bytes)
    return fmt::format("the header says {} bytes but the file has {} (truncated or overwritten)", header.file_bytes,
                       file_bytes);
  if (header.kind < static_cast<std::int32_t>(DatasetKind::mnist) ||
      header.kind > static_cast<std::int32_t>(DatasetKind::synthetic))
    return fmt::format("unknown dataset kind {}", header.kind);
  std::string problem = split_problem(header.train, "train", header.header_bytes, file_bytes);
  if (problem.empty()) problem = split_problem(header.test, "test", header.header_bytes, file_bytes);
  return problem;
}

DatasetView shared_view(const SharedFileHeader& header, std::span<const std::byte> file) {
  DatasetView view;
  view.spec.kind = static_cast<DatasetKind>(header.kind);
  SyntheticSpec& synthetic = view.spec.synthetic;
  synthetic.shape = ImageShape{header.synthetic_channels, header.synthetic_height, header.synthetic_width};
  synthetic.classes = header.synthetic_classes;
  synthetic.train_size = header.synthetic_train_size;
  synthetic.test_size = header.synthetic_test_size;
  synthetic.noise = std::bit_cast<double>(header.synthetic_noise_bits);
  synthetic.seed = header.synthetic_seed;
  view.name = std::string(dataset_name(view.spec.kind));
  view.train = split_in(header.train, file);
  view.test = split_in(header.test, file);
  return view;
}

}  // namespace memsweep::dataset::detail
