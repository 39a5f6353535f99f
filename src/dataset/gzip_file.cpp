#include "dataset/gzip_file.hpp"

#include "memsweep/dataset.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace memsweep::dataset::detail {
namespace {

constexpr unsigned kGzipBufferBytes = 1U << 17;  // zlib's default 8 KiB makes many small reads
constexpr std::size_t kReadChunkBytes = std::size_t{1} << 20;
constexpr std::array<unsigned char, 2> kGzipMagic{0x1f, 0x8b};
constexpr std::size_t kGzipTrailerSizeBytes = 4;  // ISIZE: uncompressed size mod 2^32, little-endian
// Deflate cannot expand data by more than this; a larger ISIZE is damage,
// not a reason to reserve gigabytes.
constexpr std::uintmax_t kMaxDeflateRatio = 1032;

// The size the file will most likely have once read, so the buffer can be
// reserved once: a gzip file's trailer holds its uncompressed size (mod 2^32,
// and of the last member only), a raw file is as large as it is. Only a hint:
// reading copes with any size.
std::size_t expected_size(const std::filesystem::path& path) {
  std::error_code error;
  const std::uintmax_t file_size = std::filesystem::file_size(path, error);
  if (error) return 0;
  if (!is_gzip_file(path)) return static_cast<std::size_t>(file_size);
  const std::optional<std::uint64_t> size = gzip_recorded_size(path);
  if (!size) return 0;
  return static_cast<std::size_t>(std::min<std::uintmax_t>(*size, file_size * kMaxDeflateRatio));
}

// Owns a gzFile; every failure names the file and carries zlib's message.
class GzipReader {
 public:
  explicit GzipReader(const std::filesystem::path& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      // gzopen sets errno when the open itself fails and leaves it 0 when
      // zlib could not allocate its state.
      const std::string reason = errno != 0 ? std::strerror(errno) : "zlib could not allocate its state";
      throw DatasetError(fmt::format("cannot open {}: {}", path.string(), reason));
    }
    if (gzbuffer(file_, kGzipBufferBytes) != 0) {
      gzclose_r(file_);  // the destructor does not run for a constructor that throws
      throw DatasetError(fmt::format("cannot read {}: zlib refused a {}-byte buffer", path.string(), kGzipBufferBytes));
    }
  }
  ~GzipReader() {
    if (file_ != nullptr) gzclose_r(file_);
  }
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Fills up to `size` bytes; 0 means the end of the data.
  std::size_t read(std::uint8_t* destination, unsigned size) {
    const int count = gzread(file_, destination, size);
    // A gzip stream cut short is not an error for gzread: it returns what it
    // could decompress and records Z_BUF_ERROR ("unexpected end of file"),
    // so the state is checked at the end as well.
    if (count < 0 || (count == 0 && zlib_status() != Z_OK)) fail();
    return static_cast<std::size_t>(count);
  }

  void close() {
    const int status = gzclose_r(file_);
    file_ = nullptr;
    if (status == Z_BUF_ERROR)
      throw DatasetError(fmt::format("cannot read {}: {} (zlib: unexpected end of file)", path_.string(), kDamaged));
    if (status != Z_OK) throw DatasetError(fmt::format("cannot close {}: zlib status {}", path_.string(), status));
  }

 private:
  static constexpr std::string_view kDamaged = "the gzip data is damaged or cut short";

  int zlib_status() const {
    int status = Z_OK;
    gzerror(file_, &status);
    return status;
  }

  [[noreturn]] void fail() const {
    int status = Z_OK;
    const char* message = gzerror(file_, &status);
    if (status == Z_ERRNO) throw DatasetError(fmt::format("cannot read {}: {}", path_.string(), std::strerror(errno)));
    throw DatasetError(fmt::format("cannot read {}: {} (zlib: {})", path_.string(), kDamaged, zlib_text(message)));
  }

  // gzerror's text starts with the path given to gzopen, which our message
  // already names.
  std::string_view zlib_text(const char* message) const {
    if (message == nullptr || *message == '\0') return "no message";
    std::string_view text = message;
    const std::string prefix = path_.string() + ": ";
    if (text.starts_with(prefix)) text.remove_prefix(prefix.size());
    return text;
  }

  std::filesystem::path path_;
  gzFile file_ = nullptr;
};

}  // namespace

std::vector<std::uint8_t> read_file_head(const std::filesystem::path& path, std::size_t count) {
  GzipReader reader(path);
  std::vector<std::uint8_t> bytes(count);
  std::size_t used = 0;
  while (used < count) {
    const std::size_t got = reader.read(bytes.data() + used, static_cast<unsigned>(count - used));
    if (got == 0) break;
    used += got;
  }
  bytes.resize(used);
  // Not close(): it reports a stream cut short, and the rest was never read.
  return bytes;
}

std::optional<std::uint64_t> gzip_recorded_size(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, kGzipTrailerSizeBytes> trailer{};
  in.seekg(-static_cast<std::streamoff>(trailer.size()), std::ios::end);
  if (!in.read(reinterpret_cast<char*>(trailer.data()), trailer.size())) return std::nullopt;
  std::uint64_t size = 0;
  for (std::size_t i = trailer.size(); i-- > 0;) size = (size << 8) | trailer[i];
  return size;
}

bool is_gzip_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 2> magic{};
  return in.read(reinterpret_cast<char*>(magic.data()), magic.size()) && magic == kGzipMagic;
}

std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path) {
  GzipReader reader(path);
  std::vector<std::uint8_t> bytes;
  // One chunk of slack: the last read asks for a whole chunk, and the buffer
  // must not grow (and copy everything) just for it.
  bytes.reserve(expected_size(path) + kReadChunkBytes);
  for (;;) {
    const std::size_t used = bytes.size();
    bytes.resize(used + kReadChunkBytes);
    const std::size_t count = reader.read(bytes.data() + used, static_cast<unsigned>(kReadChunkBytes));
    bytes.resize(used + count);
    if (count == 0) break;
  }
  reader.close();
  return bytes;
}

}  // namespace memsweep::dataset::detail
