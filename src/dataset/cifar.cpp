#include "dataset/cifar.hpp"

#include "dataset/labels.hpp"
#include "dataset/pixels.hpp"

#include <fmt/format.h>

namespace memsweep::dataset::detail {

std::size_t count_cifar_records(std::span<const std::uint8_t> bytes, std::string_view source_name) {
  if (bytes.empty()) throw DatasetError(fmt::format("{}: empty file, expected CIFAR-10 records", source_name));
  const std::size_t records = bytes.size() / kCifarRecordBytes;
  const std::size_t left_over = bytes.size() % kCifarRecordBytes;
  if (left_over != 0)
    throw DatasetError(
        fmt::format("{}: {} bytes is not a whole number of CIFAR-10 records ({} bytes each: {} label + {} pixels): "
                    "{}, then {} {} left over (truncated, or not a CIFAR-10 binary batch?)",
                    source_name, bytes.size(), kCifarRecordBytes, kCifarLabelBytes, kCifarImageBytes,
                    record_count(records), left_over, left_over == 1 ? "byte" : "bytes"));
  for (std::size_t record = 0; record < records; ++record)
    check_label(bytes[record * kCifarRecordBytes], record, kCifarClasses, source_name, "record");
  return records;
}

Split make_cifar_split(std::vector<CifarBatchBytes> batches) {
  std::size_t total = 0;
  for (const auto& batch : batches) total += count_cifar_records(batch.bytes, batch.source_name);
  Split split;
  split.shape = kCifarShape;
  split.classes = kCifarClasses;
  split.labels.resize(total);
  split.images.resize(total * kCifarImageBytes);
  std::size_t row = 0;
  for (auto& batch : batches) {
    const std::span<const std::uint8_t> bytes(batch.bytes);
    for (std::size_t record = 0; record * kCifarRecordBytes < bytes.size(); ++record, ++row) {
      const auto source = bytes.subspan(record * kCifarRecordBytes, kCifarRecordBytes);
      split.labels[row] = source[0];
      scale_pixels(source.subspan(kCifarLabelBytes),
                   std::span<float>(split.images).subspan(row * kCifarImageBytes, kCifarImageBytes));
    }
    std::vector<std::uint8_t>().swap(batch.bytes);
  }
  return split;
}

}  // namespace memsweep::dataset::detail
