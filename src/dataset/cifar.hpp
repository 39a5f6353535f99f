#pragma once
// The CIFAR-10 binary format, parsed from bytes already in memory. A batch
// file is a run of records, each one label byte then 1024 red, 1024 green and
// 1024 blue bytes (32x32, row-major): already the CHW layout of a split.

#include "memsweep/dataset.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::dataset::detail {

inline constexpr ImageShape kCifarShape{3, 32, 32};
inline constexpr int kCifarClasses = 10;
inline constexpr std::size_t kCifarLabelBytes = 1;
inline constexpr std::size_t kCifarImageBytes =
    static_cast<std::size_t>(kCifarShape.channels) * kCifarShape.height * kCifarShape.width;
inline constexpr std::size_t kCifarRecordBytes = kCifarLabelBytes + kCifarImageBytes;
inline constexpr std::size_t kCifarRecordsPerBatch = 10'000;  // in the original files; ours may hold fewer

// Checks a batch (a whole number of records, at least one, every label in
// range) and returns its record count. Throws DatasetError naming
// `source_name` and what is wrong.
std::size_t count_cifar_records(std::span<const std::uint8_t> bytes, std::string_view source_name);

// "1 record", "2 records": counts in messages and notes.
inline std::string record_count(std::size_t records) {
  return std::to_string(records) + (records == 1 ? " record" : " records");
}

struct CifarBatchBytes {
  std::string source_name;
  std::vector<std::uint8_t> bytes;
};

// One split from consecutive batches, pixels scaled to [0, 1]. Each batch's
// bytes are released as soon as they are unpacked, so the bytes and the
// floats of the whole split are not held twice.
Split make_cifar_split(std::vector<CifarBatchBytes> batches);

}  // namespace memsweep::dataset::detail
