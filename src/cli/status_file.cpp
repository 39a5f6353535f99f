#include "cli/status_file.hpp"

#include "common/file_kind.hpp"
#include "common/unique_fd.hpp"
#include "memsweep/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>

namespace memsweep::cli {
namespace {

namespace fs = std::filesystem;

// A status memsweep writes is at most "NNN\nleft NNNNNNNNNNNNNNNNNNNN\n".
constexpr std::size_t kLongestStatus = 64;

// Opened so that nothing can block or redirect it: not through a link
// (ELOOP), not waiting for a FIFO's reader (ENXIO instead, or at once).
constexpr int kNoSurprises = O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;

bool all_digits(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

// The lines write() writes: a status, then perhaps "left N".
bool is_status_text(std::string_view text) {
  if (text.empty()) return true;
  if (!text.ends_with('\n')) return false;
  text.remove_suffix(1);
  const std::size_t newline = text.find('\n');
  if (!all_digits(text.substr(0, newline))) return false;
  if (newline == std::string_view::npos) return true;
  const std::string_view left = text.substr(newline + 1);
  return left.starts_with("left ") && all_digits(left.substr(5));
}

// What the regular file holds, when it is short enough to be a status;
// nullopt when it is longer or cannot be read.
std::optional<std::string> short_contents(const fs::path& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | kNoSurprises));
  if (!fd) return std::nullopt;
  char buffer[kLongestStatus + 1];
  std::size_t got = 0;
  while (got < sizeof buffer) {
    const ssize_t n = ::read(fd.get(), buffer + got, sizeof buffer - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kLongestStatus) return std::nullopt;
  return std::string(buffer, got);
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Where a path would be, links in its folders resolved: two spellings of
// one path not yet created compare equal.
fs::path resolved(const fs::path& path) {
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  if (error) return path;
  const fs::path canonical = fs::weakly_canonical(absolute, error);
  return error ? absolute.lexically_normal() : canonical;
}

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::optional<StatusFile> StatusFile::from_environment(const fs::path& sweep_file) {
  const char* value = std::getenv(kStatusFileVariable);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return checked(value, sweep_file);
}

StatusFile StatusFile::checked(const fs::path& path, const fs::path& sweep_file) {
  StatusFile file(path);
  const auto refuse = [&](const std::string& why) { return InputError(fmt::format("{}: {}", file.named(), why)); };
  constexpr char kGiveAnother[] = "give the path of a file of its own (one that does not exist yet is created)";
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno != ENOENT) throw refuse(fmt::format("cannot look at it ({})", std::strerror(errno)));
    const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
    std::error_code error;
    if (!fs::is_directory(folder, error))
      throw refuse(fmt::format("no such folder {}; the status file is created in an existing folder", folder.string()));
    return file;  // created by write()
  }
  if (S_ISLNK(info.st_mode))
    throw refuse(fmt::format("a symbolic link (to {}), which memsweep does not follow; {}",
                             fs::read_symlink(path).string(), kGiveAnother));
  if (!S_ISREG(info.st_mode))
    throw refuse(fmt::format("{}, not a regular file; {}", file_kind(info.st_mode), kGiveAnother));
  struct stat sweep {};
  if (::stat(sweep_file.c_str(), &sweep) == 0 && same_file(info, sweep))
    throw refuse(fmt::format("is the sweep file ({}); {}", sweep_file.string(), kGiveAnother));
  const std::optional<std::string> contents = short_contents(path);
  if (!contents || !is_status_text(*contents))
    file.foreign_contents_ = fmt::format(
        "{} holds something other than an exit status ({} bytes); memsweep "
        "replaces only an empty file or a status it wrote",
        starts_with_hdf5_signature(path) ? "an HDF5 file that" : "a file that", info.st_size);
  return file;
}

void StatusFile::refuse_results_file_or_contents(const fs::path& results) const {
  struct stat status {};
  struct stat output {};
  const bool status_exists = ::lstat(path_.c_str(), &status) == 0;
  const bool results_exist = ::stat(results.c_str(), &output) == 0;
  const bool same = status_exists && results_exist     ? same_file(status, output)
                    : !status_exists && !results_exist ? resolved(path_) == resolved(results)
                                                       : false;
  if (same)
    throw InputError(
        fmt::format("{}: is the results file ({}); give the path of a file of its own", named(), results.string()));
  if (!foreign_contents_.empty())
    throw InputError(fmt::format("{}: {}; give the path of a file of its own", named(), foreign_contents_));
}

void StatusFile::write(int exit_status, std::optional<std::size_t> trials_left) const {
  std::string text = fmt::format("{}\n", exit_status);
  if (trials_left) text += fmt::format("left {}\n", *trials_left);
  const auto not_written = [&](const std::string& why) {
    std::fprintf(stderr, "memsweep: %s: exit status %d not written: %s\n", named().c_str(), exit_status, why.c_str());
  };
  if (!foreign_contents_.empty()) return not_written(foreign_contents_);
  // 0666 less the umask, as for any file a command creates.
  const UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | kNoSurprises, 0666));
  if (!fd) {
    const int error = errno;
    if (error == ELOOP) return not_written("it is now a symbolic link, which memsweep does not follow");
    if (error == ENXIO) return not_written("it is now a FIFO (named pipe), not a regular file");
    return not_written(std::strerror(error));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) return not_written(std::strerror(errno));
  if (!S_ISREG(info.st_mode))
    return not_written(fmt::format("it is now {}, not a regular file", file_kind(info.st_mode)));
  // Truncated only once known to be a regular file (O_TRUNC would act first).
  if (::ftruncate(fd.get(), 0) != 0 || !write_all(fd.get(), text)) return not_written(std::strerror(errno));
}

std::string StatusFile::named() const { return fmt::format("{}={}", kStatusFileVariable, path_.string()); }

}  // namespace memsweep::cli
