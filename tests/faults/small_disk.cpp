#include "faults/small_disk.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace memsweep::testing {

SmallDisk::SmallDisk(const std::filesystem::path& folder, int kib) : folder_(folder) {
  std::filesystem::create_directories(folder);
  const std::string options = "size=" + std::to_string(kib) + "k,mode=0755";
  mounted_ = ::mount("memsweep-test", folder.c_str(), "tmpfs", 0, options.c_str()) == 0;
  if (!mounted_) problem_ = std::string("mount -t tmpfs: ") + std::strerror(errno);
}

SmallDisk::~SmallDisk() {
  if (!mounted_) return;
  // A rank or trial of a failed test may still hold a file there.
  if (::umount(folder_.c_str()) != 0) ::umount2(folder_.c_str(), MNT_DETACH);
}

std::uint64_t SmallDisk::fill(const std::string& name) const {
  const std::filesystem::path path = folder_ / name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "cannot create " + path.string());
  // Halving blocks down to one byte: no byte of the disk is left.
  static const std::array<char, 65536> zeros{};
  std::uint64_t written = 0;
  for (std::size_t block = zeros.size(); block > 0; block /= 2) {
    for (;;) {
      const ssize_t wrote = ::write(fd, zeros.data(), block);
      if (wrote <= 0) break;
      written += static_cast<std::uint64_t>(wrote);
      if (static_cast<std::size_t>(wrote) < block) break;
    }
  }
  ::close(fd);
  return written;
}

void SmallDisk::unfill(const std::string& name) const { std::filesystem::remove(folder_ / name); }

}  // namespace memsweep::testing
