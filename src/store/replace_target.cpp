#include "store/replace_target.hpp"

#include "common/file_kind.hpp"
#include "store/attributes.hpp"
#include "store/file_access.hpp"
#include "store/file_header.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

namespace memsweep::store {
namespace {

constexpr char kAllowed[] = "--force replaces only a memsweep results file or an empty file";

[[noreturn]] void refuse(const Hdf5Errors& errors, const std::string& what) {
  errors.fail_plain(fmt::format("{}, not a results file; {}", what, kAllowed));
}

bool start_mentions_memsweep(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> start(kDamagedFileScanBytes);
  file.read(start.data(), static_cast<std::streamsize>(start.size()));
  return std::string_view(start.data(), static_cast<std::size_t>(file.gcount())).find("memsweep") !=
         std::string_view::npos;
}

}  // namespace

void check_replaceable_kind(const std::filesystem::path& path, const Hdf5Errors& errors) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;  // gone: nothing to replace
  if (S_ISLNK(info.st_mode)) {
    std::error_code ignored;
    refuse(errors, fmt::format("a symbolic link (to {})", std::filesystem::read_symlink(path, ignored).string()));
  }
  if (!S_ISREG(info.st_mode)) refuse(errors, file_kind(info.st_mode));
}

void check_replaceable_content(const std::filesystem::path& path, const Hdf5Errors& errors) {
  check_replaceable_kind(path, errors);  // again: the name may hold another file by now
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || info.st_size == 0) return;
  if (!starts_with_hdf5_signature(path)) refuse(errors, "a file that is not HDF5 (no HDF5 signature)");
  // A damaged results file (see the header) may fail either way.
  constexpr char kForeign[] = "an HDF5 file of another program (its root has no memsweep format attribute)";
  FileHandle file;
  try {
    file = open_file_to_inspect(path, errors);
  } catch (const StoreError&) {
    if (start_mentions_memsweep(path)) return;
    refuse(errors, "an HDF5 file that HDF5 cannot open and that shows no sign of memsweep");
  }
  std::optional<std::string> format;
  try {
    format = read_string_attribute(file.get(), kFormatAttribute, errors);
  } catch (const StoreError&) {
    if (start_mentions_memsweep(path)) return;
    refuse(errors, kForeign);  // e.g. a format attribute that is not text
  }
  if (format != kFormatName) refuse(errors, kForeign);
}

}  // namespace memsweep::store
