#pragma once
// Reading a sweep file's bytes, refusing what is not a sweep file before a
// read that would never end: a FIFO (open blocks until a writer comes), a
// device (/dev/zero is endless), a socket, a directory, a file too large.

#include <cstdint>
#include <filesystem>
#include <string>

namespace memsweep::config_detail {

// A sweep file is text a person writes: the largest examples are a few
// KiB, and 10^5 explicit [[trial]] tables about 10 MiB. Past this, the
// parser's copies of the text would cost more memory than a sweep needs.
inline constexpr std::uint64_t kMaxSweepFileBytes = 16 * 1024 * 1024;

// The whole file. Throws InputError naming the file and what is wrong:
// cannot be read (with the system's reason), not a regular file (saying
// what it is), or larger than kMaxSweepFileBytes. Never reads more than
// kMaxSweepFileBytes + 1 bytes, and never waits for a writer.
std::string read_sweep_text(const std::filesystem::path& path);

}  // namespace memsweep::config_detail
