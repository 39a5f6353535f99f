#pragma once
// Reading a sweep file's bytes, refusing what is not a sweep file before a
// read that would never end: a FIFO (open blocks until a writer comes), a
// device (/dev/zero is endless), a socket, a directory, a file too large.

#include <cstdint>
#include <filesystem>
#include <string>

namespace memsweep::config::detail {

// A sweep file is text a person (or a script) writes: the examples are a
// few KiB, and 10^5 explicit [[trial]] tables of five fields about 8 MiB.
// Twice that leaves room; more is not a sweep file (/dev/zero by mistake).
inline constexpr std::uint64_t kMaxSweepFileBytes = 16 * 1024 * 1024;

// The whole file. Throws InputError naming the file and what is wrong:
// cannot be read (with the system's reason), not a regular file (saying
// what it is), or larger than kMaxSweepFileBytes. Never reads more than
// kMaxSweepFileBytes + 1 bytes, and never waits for a writer.
std::string read_sweep_text(const std::filesystem::path& path);

}  // namespace memsweep::config::detail
