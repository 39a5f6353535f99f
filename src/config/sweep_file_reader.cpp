#include "config/sweep_file_reader.hpp"

#include "common/file_kind.hpp"
#include "common/unique_fd.hpp"
#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace memsweep::config::detail {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

[[noreturn]] void cannot_read(const std::filesystem::path& path, int error) {
  throw InputError(fmt::format("{}: cannot read the sweep file: {}", path.string(), std::strerror(error)));
}

[[noreturn]] void too_large(const std::filesystem::path& path) {
  throw InputError(fmt::format("{}: larger than {} MiB, the most a sweep file may hold; expected a sweep file (TOML)",
                               path.string(), kMaxSweepFileBytes / kMiB));
}

void check_kind_and_size(const std::filesystem::path& path, const struct stat& status) {
  if (!S_ISREG(status.st_mode))
    throw InputError(fmt::format("{}: is {}; expected a sweep file (TOML)", path.string(), file_kind(status.st_mode)));
  if (static_cast<std::uint64_t>(status.st_size) > kMaxSweepFileBytes) too_large(path);
}

}  // namespace

std::string read_sweep_text(const std::filesystem::path& path) {
  // Looked at before opening: opening a FIFO to read waits for a writer.
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) cannot_read(path, errno);
  check_kind_and_size(path, status);

  // Without blocking, in case the path became a FIFO since; the open file
  // is what is checked again and read.
  const UniqueFd file(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!file) cannot_read(path, errno);
  if (::fstat(file.get(), &status) != 0) cannot_read(path, errno);
  check_kind_and_size(path, status);
  const int flags = ::fcntl(file.get(), F_GETFL);
  if (flags < 0 || ::fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) cannot_read(path, errno);

  // At most one byte past the limit: the size can change after fstat (a
  // file still being written), and that byte tells.
  std::string text;
  text.resize(static_cast<std::size_t>(std::min<std::uint64_t>(status.st_size, kMaxSweepFileBytes)) + 1);
  std::size_t filled = 0;
  while (true) {
    if (filled == text.size()) {
      if (filled > kMaxSweepFileBytes) too_large(path);
      text.resize(std::min<std::size_t>(2 * filled, kMaxSweepFileBytes + 1));
    }
    const ssize_t got = ::read(file.get(), text.data() + filled, text.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      cannot_read(path, errno);
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  if (filled > kMaxSweepFileBytes) too_large(path);
  text.resize(filled);
  return text;
}

}  // namespace memsweep::config::detail
