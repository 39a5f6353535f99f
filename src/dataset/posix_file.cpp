#include "dataset/posix_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <utility>

namespace memsweep::dataset::detail {

std::string errno_text(int error) { return std::strerror(error); }

int lock_file(int fd, int operation) {
  while (::flock(fd, operation) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

int write_all(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
  while (!bytes.empty()) {
    const ssize_t written = ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes = bytes.subspan(static_cast<std::size_t>(written));
    offset += static_cast<std::uint64_t>(written);
  }
  return 0;
}

int read_exact(int fd, std::span<std::byte> out, std::uint64_t offset) {
  while (!out.empty()) {
    const ssize_t got = ::pread(fd, out.data(), out.size(), static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (got == 0) return -1;
    out = out.subspan(static_cast<std::size_t>(got));
    offset += static_cast<std::uint64_t>(got);
  }
  return 0;
}

bool names_open_file(const std::filesystem::path& path, int fd) {
  struct stat named {};
  struct stat open_file {};
  if (::lstat(path.c_str(), &named) != 0 || ::fstat(fd, &open_file) != 0) return false;
  return named.st_dev == open_file.st_dev && named.st_ino == open_file.st_ino;
}

std::string descriptor_target(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  char target[PATH_MAX];
  const ssize_t length = ::readlink(link.c_str(), target, sizeof(target));
  if (length <= 0) return {};
  return std::string(target, static_cast<std::size_t>(length));
}

ReadOnlyMapping::ReadOnlyMapping(int fd, std::size_t size, bool populate) {
  void* base = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
  if (base == MAP_FAILED) {
    error_ = errno;
    return;
  }
  base_ = base;
  size_ = size;
}

ReadOnlyMapping::ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      error_(std::exchange(other.error_, 0)) {}

ReadOnlyMapping& ReadOnlyMapping::operator=(ReadOnlyMapping&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) ::munmap(base_, size_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
    error_ = std::exchange(other.error_, 0);
  }
  return *this;
}

ReadOnlyMapping::~ReadOnlyMapping() {
  if (base_ != nullptr) ::munmap(base_, size_);
}

}  // namespace memsweep::dataset::detail
