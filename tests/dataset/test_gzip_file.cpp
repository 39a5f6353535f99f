// Reading dataset files through zlib: raw and gzip files give the same bytes,
// and a damaged gzip file is an error naming the file and zlib's complaint.

#include "dataset/gzip_file.hpp"
#include "memsweep/dataset.hpp"
#include "support/dataset_files.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

namespace memsweep {
namespace {

using dataset::detail::read_file_bytes;
using testing::as_bytes;
using testing::gzip;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::thrown_message;

// Bytes that deflate cannot shrink much, so a gzip of them is large enough to
// cut and to span several of the reader's chunks.
std::string varied_bytes(std::size_t size) {
  std::string bytes(size, '\0');
  std::uint32_t state = 12345;
  for (char& byte : bytes) {
    state = state * 1664525U + 1013904223U;  // an LCG: fixed, portable
    byte = static_cast<char>(state >> 24);
  }
  return bytes;
}

std::vector<std::uint8_t> to_vector(std::string_view text) {
  const auto bytes = as_bytes(text);
  return {bytes.begin(), bytes.end()};
}

TEST(GzipFile, ReadsARawFileUnchanged) {
  const TempDir dir;
  const std::string contents("raw \0 bytes\xff", 12);
  EXPECT_EQ(read_file_bytes(dir.write("plain.bin", contents)), to_vector(contents));
}

TEST(GzipFile, ReadsAnEmptyRawFileAsNoBytes) {
  const TempDir dir;
  EXPECT_TRUE(read_file_bytes(dir.write("empty.bin", "")).empty());
}

TEST(GzipFile, DecompressesAGzipFileLargerThanOneReadChunk) {
  const TempDir dir;
  const std::string contents = varied_bytes(3'500'000);
  EXPECT_EQ(read_file_bytes(dir.write("big.bin.gz", gzip(contents))), to_vector(contents));
}

TEST(GzipFile, DecompressesByContentNotByName) {
  const TempDir dir;
  const std::string contents = "named like a raw file";
  EXPECT_EQ(read_file_bytes(dir.write("looks-raw.bin", gzip(contents))), to_vector(contents));
}

TEST(GzipFile, AMissingFileNamesThePathAndTheReason) {
  const TempDir dir;
  const auto path = dir.path() / "absent.gz";
  const std::string message = thrown_message<DatasetError>([&] { read_file_bytes(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("No such file"));
}

struct GzipDamage {
  std::string name;
  void (*damage)(std::string& gz);
  std::string zlib_message;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const GzipDamage& test_case, std::ostream* out) { *out << test_case.name; }

// Gzip layout: 10-byte header, deflate blocks, CRC-32 (4 bytes), size (4 bytes).
constexpr std::size_t kGzipHeaderBytes = 10;
constexpr std::size_t kGzipTrailerBytes = 8;

const GzipDamage kDamages[] = {
    {"crc_flipped", [](std::string& gz) { gz[gz.size() - kGzipTrailerBytes] ^= 0x01; }, "incorrect data check"},
    {"size_flipped", [](std::string& gz) { gz[gz.size() - 1] ^= 0x01; }, "incorrect length check"},
    {"cut_in_half", [](std::string& gz) { gz.resize(gz.size() / 2); }, "unexpected end of file"},
    {"trailer_missing", [](std::string& gz) { gz.resize(gz.size() - kGzipTrailerBytes); }, "unexpected end of file"},
    // The first deflate byte's bits 1-2 are the block type; 0b11 is reserved.
    {"invalid_block_type", [](std::string& gz) { gz[kGzipHeaderBytes] = static_cast<char>(0xFF); },
     "invalid block type"},
};

class DamagedGzip : public ::testing::TestWithParam<GzipDamage> {};

TEST_P(DamagedGzip, IsAnErrorNamingTheFileAndZlibsMessage) {
  const TempDir dir;
  std::string gz = gzip(varied_bytes(20'000));
  GetParam().damage(gz);
  const auto path = dir.write("damaged.bin.gz", gz);
  const std::string message = thrown_message<DatasetError>([&] { read_file_bytes(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr(GetParam().zlib_message));
  EXPECT_THAT(message, HasSubstr("damaged or cut short"));
}

INSTANTIATE_TEST_SUITE_P(Cases, DamagedGzip, ::testing::ValuesIn(kDamages),
                         [](const auto& test_case) { return test_case.param.name; });

}  // namespace
}  // namespace memsweep
