#pragma once
// The few POSIX file tools that shared datasets need beside the owned
// descriptor (common/unique_fd.hpp): whole writes and reads at an offset,
// "does this name still refer to this open file", and a read-only mapping. Failures come back as errno values;
// the callers know what was being attempted and say so in their errors.

#include "common/unique_fd.hpp"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace memsweep::dataset::detail {

std::string errno_text(int error);

// flock() retried on EINTR; 0 or the errno value.
int lock_file(int fd, int operation);

// All of `bytes` at `offset`, retried on short writes and EINTR; 0 or errno.
int write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset);
// Exactly out.size() bytes from `offset`; 0, errno, or -1 for end of file.
int read_exact(int fd, std::span<std::byte> out, std::uint64_t offset);

// True when `path` (not followed if a symbolic link) names the file open as `fd`:
// false when the name is gone or now refers to another file.
bool names_open_file(const std::filesystem::path& path, int fd);

// What /proc/self/fd/N points to, for messages ("" when unknown).
std::string descriptor_target(int fd);

// A whole file mapped PROT_READ, MAP_SHARED; with `populate`, every page is
// made resident (MAP_POPULATE) before the constructor returns.
class ReadOnlyMapping {
 public:
  ReadOnlyMapping() = default;
  // On failure, failed() is the errno value and bytes() is empty.
  ReadOnlyMapping(int fd, std::size_t size, bool populate);
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping& operator=(ReadOnlyMapping&& other) noexcept;
  ReadOnlyMapping(const ReadOnlyMapping&) = delete;
  ReadOnlyMapping& operator=(const ReadOnlyMapping&) = delete;
  ~ReadOnlyMapping();

  int failed() const { return error_; }
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(base_), size_}; }

 private:
  void* base_ = nullptr;
  std::size_t size_ = 0;
  int error_ = 0;
};

}  // namespace memsweep::dataset::detail
