#pragma once
// Whole-file reads through zlib's gz* interface, which decompresses gzip
// files and passes other files through unchanged, so every dataset file may
// be stored either way.

#include <cstdint>
#include <filesystem>
#include <vector>

namespace memsweep::dataset_detail {

// Returns the file's (decompressed) bytes. Throws DatasetError naming the file
// and zlib's or the system's message when it cannot be opened or a gzip
// stream is corrupt or cut short.
std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path);

}  // namespace memsweep::dataset_detail
