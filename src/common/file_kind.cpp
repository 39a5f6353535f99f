#include "common/file_kind.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace memsweep {

std::string file_kind(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

bool starts_with_hdf5_signature(const std::filesystem::path& path) {
  static constexpr char kSignature[] = "\x89HDF\r\n\x1a\n";
  char start[sizeof kSignature - 1] = {};
  std::ifstream file(path, std::ios::binary);
  return file.read(start, sizeof start) && std::memcmp(start, kSignature, sizeof start) == 0;
}

std::optional<UnfollowablePath> unfollowable_path(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) return std::nullopt;
  const int error = errno;
  if (::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
    std::error_code ignored;
    const std::string link = "a symbolic link to " + std::filesystem::read_symlink(path, ignored).string();
    if (error == ENOENT) return UnfollowablePath{link + ", which does not exist", true};
    return UnfollowablePath{link + " that cannot be followed (" + std::strerror(error) + ")", false};
  }
  if (error == ENOENT) return std::nullopt;
  return UnfollowablePath{std::string("cannot look at it (") + std::strerror(error) + ")", false};
}

}  // namespace memsweep
