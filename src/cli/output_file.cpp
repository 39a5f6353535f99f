#include "cli/output_file.hpp"

#include "common/file_kind.hpp"
#include "common/unique_fd.hpp"
#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace memsweep::cli {
namespace {

std::string error_text() { return std::strerror(errno); }

// --force replaces a file such as this command writes, a regular file (an
// earlier export): the rename would put a text file in place of a device
// node or a link (as root, -o /dev/null --force would replace the system's),
// and an HDF5 file is a results file (or another tool's), not an export.
void check_replaceable(const std::filesystem::path& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) return;  // nothing there to replace
  constexpr char kAllowed[] = "--force replaces only a regular file, such as an earlier export";
  if (!S_ISREG(info.st_mode))
    throw InputError(
        fmt::format("-o {}: {}, not a file to replace; {}", path.string(), file_kind(info.st_mode), kAllowed));
  if (starts_with_hdf5_signature(path))
    throw InputError(
        fmt::format("-o {}: an HDF5 file (a results file?), not an export to replace; {}", path.string(), kAllowed));
}

}  // namespace

OutputFile::OutputFile(std::filesystem::path path, bool replace) : path_(std::move(path)), replace_(replace) {
  // Neither a file nor a free name: "exists, add --force" would be refused
  // by --force in turn.
  if (const std::optional<UnfollowablePath> bad = unfollowable_path(path_))
    throw InputError(fmt::format("-o {}: {}; expected a file to write", path_.string(), bad->why));
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path_, error);
  if (status.type() == std::filesystem::file_type::directory)
    throw InputError(fmt::format("-o {}: is a directory; expected a file to write", path_.string()));
  if (std::filesystem::exists(status) && !replace_)
    throw InputError(fmt::format("-o {}: the file exists; add --force to replace it", path_.string()));
  if (replace_) check_replaceable(path_);
  const std::filesystem::path folder = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(folder, error))
    throw InputError(fmt::format("-o {}: no such folder {}", path_.string(), folder.string()));
  // Beside the path, so that the rename stays in one filesystem; hidden, and
  // named by this process, so that two exports never share one.
  temporary_ = folder / fmt::format(".{}.{}.tmp", path_.filename().string(), ::getpid());
  // 0666 less the umask, as for any file a command creates.
  UniqueFd fd(::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd)
    throw InputError(fmt::format("-o {}: cannot create {}: {}", path_.string(), temporary_.string(), error_text()));
  stream_ = ::fdopen(fd.get(), "w");
  if (stream_ == nullptr) {
    const std::string why = error_text();
    fd.reset();
    std::filesystem::remove(temporary_, error);
    throw std::runtime_error(fmt::format("cannot open {}: {}", temporary_.string(), why));
  }
  fd.release();  // the stream's now: fclose closes it
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (stream_ != nullptr) std::fclose(stream_);
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void OutputFile::commit() {
  const bool flushed = std::fflush(stream_) == 0 && ::fsync(::fileno(stream_)) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(stream_) == 0;
  stream_ = nullptr;
  if (!flushed || !closed) {
    errno = flushed ? errno : flush_errno;
    throw std::runtime_error(fmt::format("cannot write {}: {}", temporary_.string(), error_text()));
  }
  // Without --force, a file that appeared at the path since the check above
  // is not replaced either.
  const unsigned flags = replace_ ? 0 : RENAME_NOREPLACE;
  if (::renameat2(AT_FDCWD, temporary_.c_str(), AT_FDCWD, path_.c_str(), flags) != 0) {
    if (errno == EEXIST)
      throw InputError(fmt::format("-o {}: the file exists; add --force to replace it", path_.string()));
    throw std::runtime_error(
        fmt::format("cannot rename {} to {}: {}", temporary_.string(), path_.string(), error_text()));
  }
  committed_ = true;
}

}  // namespace memsweep::cli
