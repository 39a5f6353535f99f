#pragma once
// Small dataset files built in memory by the tests (IDX, CIFAR-10 records,
// gzip), so every format case, good or corrupt, is spelled out in the test.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::testing {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;
inline constexpr std::size_t kCifarImageBytes = 3 * 32 * 32;

inline std::span<const std::uint8_t> as_bytes(std::string_view text) {
  return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

inline void append_big_endian_u32(std::string& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((value >> shift) & 0xFFU));
}

// A deterministic, varied pixel value for (image, pixel): tests can recompute it.
inline std::uint8_t test_pixel(std::size_t image, std::size_t pixel) {
  return static_cast<std::uint8_t>((image * 31 + pixel * 7) % 256);
}

inline std::string idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t columns,
                              std::uint32_t magic = kIdxImagesMagic) {
  std::string out;
  append_big_endian_u32(out, magic);
  append_big_endian_u32(out, count);
  append_big_endian_u32(out, rows);
  append_big_endian_u32(out, columns);
  const std::size_t pixels = std::size_t{rows} * columns;
  for (std::size_t image = 0; image < count; ++image)
    for (std::size_t pixel = 0; pixel < pixels; ++pixel) out.push_back(static_cast<char>(test_pixel(image, pixel)));
  return out;
}

inline std::string idx_labels(const std::vector<std::uint8_t>& labels, std::uint32_t magic = kIdxLabelsMagic) {
  std::string out;
  append_big_endian_u32(out, magic);
  append_big_endian_u32(out, static_cast<std::uint32_t>(labels.size()));
  for (const std::uint8_t label : labels) out.push_back(static_cast<char>(label));
  return out;
}

// One record per label: the label byte, then test_pixel(record, 0..3071).
inline std::string cifar_records(const std::vector<std::uint8_t>& labels) {
  std::string out;
  for (std::size_t record = 0; record < labels.size(); ++record) {
    out.push_back(static_cast<char>(labels[record]));
    for (std::size_t pixel = 0; pixel < kCifarImageBytes; ++pixel)
      out.push_back(static_cast<char>(test_pixel(record, pixel)));
  }
  return out;
}

// Writes `contents` to `path`, creating its folder.
inline void write_dataset_file(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(contents.data(), static_cast<std::streamsize>(contents.size()));
}

// The smallest files the real datasets' check and load accept (raw, two
// records per split) in root/mnist, root/fashion-mnist and root/cifar-10:
// for tests about a sweep's trials rather than its data.
inline void write_tiny_datasets(const std::filesystem::path& root) {
  for (const char* name : {"mnist", "fashion-mnist"}) {
    const std::filesystem::path folder = root / name;
    write_dataset_file(folder / "train-images-idx3-ubyte", idx_images(2, 28, 28));
    write_dataset_file(folder / "train-labels-idx1-ubyte", idx_labels({0, 1}));
    write_dataset_file(folder / "t10k-images-idx3-ubyte", idx_images(2, 28, 28));
    write_dataset_file(folder / "t10k-labels-idx1-ubyte", idx_labels({1, 0}));
  }
  write_dataset_file(root / "cifar-10" / "data_batch_1.bin", cifar_records({0, 1}));
  write_dataset_file(root / "cifar-10" / "test_batch.bin", cifar_records({1, 0}));
}

// A gzip file (header, deflate data, CRC-32 and size trailer) holding `raw`.
inline std::string gzip(std::string_view raw) {
  constexpr int kGzipWindowBits = 15 + 16;  // +16: gzip wrapper instead of zlib's
  constexpr int kMemoryLevel = 8;
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, kMemoryLevel, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&stream, static_cast<uLong>(raw.size())), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  stream.avail_in = static_cast<uInt>(raw.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&stream, Z_FINISH);
  deflateEnd(&stream);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate did not finish");
  out.resize(stream.total_out);
  return out;
}

// The message of the `Error` that `action` throws; a test failure (and "")
// when it throws nothing.
template <typename Error, typename Action>
std::string thrown_message(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception, none was thrown";
  return {};
}

}  // namespace memsweep::testing
