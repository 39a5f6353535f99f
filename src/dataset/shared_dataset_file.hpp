#pragma once
// The file that holds a shared dataset (shared_dataset.hpp): a header, then
// the train split's images and labels and the test split's, each array at a
// page-aligned offset. Images are float32 NCHW, labels int32, exactly as
// DatasetView reads them, so a trial process uses the mapping in place.
//
// The file never leaves its node: it is written in the node's byte order and
// the compiler's struct layout, and read by the same memsweep build or one
// of the same format version. kSharedFormatVersion must change with any
// change to the header or to what the arrays hold.
//
// Everything here is pure (bytes in, bytes or findings out); the system
// calls are in shared_dataset.cpp.

#include "memsweep/dataset.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace memsweep::dataset::detail {

inline constexpr std::uint32_t kSharedFormatVersion = 1;
inline constexpr std::array<char, 8> kSharedMagic{'M', 'S', 'W', 'P', 'D', 'A', 'T', 'A'};
// Written last, once every other byte is in place; a file without it was
// never finished (only possible for files made by hand or by the named-file
// fallback, since a copy gets its name only once complete).
inline constexpr std::uint64_t kSharedCompleteMark = 0x636f6d706c657465ULL;  // "complete"
inline constexpr std::size_t kSharedKeyDigits = 16;

// Integers only and no padding (checked below), so that the header's bytes,
// which the checksum covers, are fully determined by its fields.
struct SharedSplitRecord {
  std::int32_t channels = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
  std::int32_t classes = 0;
  std::uint64_t examples = 0;
  std::uint64_t images_offset = 0;  // examples * channels * height * width float32 values
  std::uint64_t labels_offset = 0;  // examples int32 values
};

struct SharedFileHeader {
  std::array<char, 8> magic{};
  std::uint32_t format_version = 0;
  std::uint32_t header_bytes = 0;  // sizeof(SharedFileHeader) of the writer
  std::uint64_t file_bytes = 0;
  // CRC-32 (zlib) of this header, with checksum and complete_mark as 0, then
  // of the four arrays in file order (the padding between them is not covered).
  std::uint64_t checksum = 0;
  std::uint64_t complete_mark = 0;
  std::array<char, kSharedKeyDigits> key{};  // shared_dataset_key(), so a misnamed file is not used
  // The DatasetSpec: the kind, and the synthetic fields (kept for every kind,
  // since DatasetSpec carries them; only the synthetic kind reads them).
  std::int32_t kind = 0;
  std::int32_t synthetic_channels = 0;
  std::int32_t synthetic_height = 0;
  std::int32_t synthetic_width = 0;
  std::int32_t synthetic_classes = 0;
  std::int32_t synthetic_train_size = 0;
  std::int32_t synthetic_test_size = 0;
  std::int32_t reserved = 0;               // keeps the 64-bit fields below aligned without implicit padding
  std::uint64_t synthetic_noise_bits = 0;  // the double's bits
  std::uint64_t synthetic_seed = 0;
  SharedSplitRecord train;
  SharedSplitRecord test;
};

static_assert(std::is_trivially_copyable_v<SharedFileHeader>);
static_assert(std::has_unique_object_representations_v<SharedFileHeader>,
              "the header must have no padding: the checksum covers its bytes");

// The header for `view` (already cut to the limits), arrays aligned to
// `alignment` bytes (the page size), with checksum and complete_mark left 0.
SharedFileHeader make_shared_header(const DatasetView& view, std::string_view key, std::size_t alignment);

// The checksum of the file that `header` describes, its arrays given as
// `view`'s splits (the decoded dataset while writing, the mapping when
// checking).
std::uint64_t shared_checksum(const SharedFileHeader& header, const DatasetView& view);

// What makes `header` unusable for a file of `file_bytes` bytes ("" when
// nothing): magic, format version, header size, completion mark, file size,
// the dataset kind and the arrays' places. The key and checksum are the
// caller's to check (the key is known only to the opener).
std::string shared_header_problem(const SharedFileHeader& header, std::uint64_t file_bytes);

// The dataset that a checked header describes, its arrays in `file` (the
// whole file, e.g. a mapping).
DatasetView shared_view(const SharedFileHeader& header, std::span<const std::byte> file);

}  // namespace memsweep::dataset::detail
