#include "store/disk_fill_hook.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace memsweep::store {
namespace {

constexpr std::string_view kFillBeforeChunk = "fill_disk_before_chunk=";

}  // namespace

StoreHook parse_store_hook(std::string_view spec, const Hdf5Errors& errors) {
  StoreHook hook;
  if (spec.empty()) return hook;
  const auto refuse = [&] {
    errors.fail_plain(
        fmt::format("{}: expected fill_disk_before_chunk=N (N from 1), got \"{}\"", kStoreHookEnvVar, spec));
  };
  if (!spec.starts_with(kFillBeforeChunk)) refuse();
  const std::string_view number = spec.substr(kFillBeforeChunk.size());
  const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), hook.fill_disk_before_chunk);
  if (error != std::errc() || end != number.data() + number.size() || hook.fill_disk_before_chunk == 0) refuse();
  return hook;
}

StoreHook store_hook_from_environment(const Hdf5Errors& errors) {
  const char* spec = std::getenv(std::string(kStoreHookEnvVar).c_str());
  return spec == nullptr ? StoreHook{} : parse_store_hook(spec, errors);
}

void fill_disk_beside(const std::filesystem::path& file, const Hdf5Errors& errors) {
  const std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  struct statvfs disk {};
  if (::statvfs(folder.c_str(), &disk) != 0)
    errors.fail_plain(fmt::format("{}: cannot read the free space of {}: {}", kStoreHookEnvVar, folder.string(),
                                  std::strerror(errno)));
  const std::uint64_t free_bytes = std::uint64_t{disk.f_bavail} * disk.f_frsize;
  if (free_bytes > kMaxDiskFillBytes)
    errors.fail_plain(fmt::format("{}: {} has {} bytes free; the hook fills only a small test disk (up to {})",
                                  kStoreHookEnvVar, folder.string(), free_bytes, kMaxDiskFillBytes));
  const std::filesystem::path fill = folder / kDiskFillFile;
  const int fd = ::open(fill.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    errors.fail_plain(fmt::format("{}: cannot create {}: {}", kStoreHookEnvVar, fill.string(), std::strerror(errno)));
  // Halving blocks down to one byte: the disk ends with no byte left.
  static const std::array<char, 65536> zeros{};
  for (std::size_t block = zeros.size(); block > 0; block /= 2)
    while (::write(fd, zeros.data(), block) == static_cast<ssize_t>(block)) {
    }
  ::close(fd);
}

void allocate_past_last_page(hid_t file, const Hdf5Errors& errors) {
  errors.check(H5Fincrement_filesize(file, kSkippedBytes),
               fmt::format("{}: move the end of allocation past the file's last page", kStoreHookEnvVar));
}

}  // namespace memsweep::store
