#pragma once
// Whole-file reads through zlib's gz* interface, which decompresses gzip
// files and passes other files through unchanged, so every dataset file may
// be stored either way.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

namespace memsweep::dataset::detail {

// Returns the file's (decompressed) bytes. Throws DatasetError naming the file
// and zlib's or the system's message when it cannot be opened or a gzip
// stream is corrupt or cut short.
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path);

// The first `count` (decompressed) bytes, fewer when the data are shorter:
// a header, without reading the rest. Throws DatasetError as read_file_bytes.
std::vector<std::uint8_t> read_file_head(const std::filesystem::path& path, std::size_t count);

// True when the file starts with gzip's magic bytes (false when unreadable).
bool is_gzip_file(const std::filesystem::path& path);

// A gzip file's uncompressed size as its trailer records it (ISIZE: of the
// last member only, modulo 2^32), or nullopt when it cannot be read. A hint:
// exact for the single-member files of datasets under 4 GiB.
std::optional<std::uint64_t> gzip_recorded_size(const std::filesystem::path& path);

}  // namespace memsweep::dataset::detail
