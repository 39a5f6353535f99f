#include "store/writer_lock.hpp"

#include "store/lock_holder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace memsweep::store {
namespace {

// 1 TiB: far from HDF5's data, which takes no byte-range locks anyway.
constexpr off_t kLockOffset = off_t{1} << 40;

struct flock lock_request(short type) {
  struct flock request {};
  request.l_type = type;
  request.l_whence = SEEK_SET;
  request.l_start = kLockOffset;
  request.l_len = 1;
  request.l_pid = 0;  // must be 0 for open-file-description locks
  return request;
}

// How often the name may be found to hold another file than the one just
// locked (a --force renamed its file onto it meanwhile) before giving up.
constexpr int kLookups = 8;

struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
};

std::optional<FileId> id_of(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return std::nullopt;
  return FileId{info.st_dev, info.st_ino};
}

std::optional<pid_t> holder_of(const std::optional<FileId>& file) {
  return file ? process_holding_write_lock(file->device, file->inode) : std::nullopt;
}

[[noreturn]] void fail_held(const Hdf5Errors& errors, const std::optional<FileId>& file) {
  const std::optional<pid_t> pid = holder_of(file);
  errors.fail_plain(
      fmt::format("another memsweep run{} is writing this file (it holds the writer's lock); wait for that run to end, "
                  "or write to another file",
                  pid ? fmt::format(" (process {})", *pid) : std::string()));
}

[[noreturn]] void fail_hdf5_held(const Hdf5Errors& errors, const std::optional<FileId>& file) {
  const std::optional<pid_t> pid = holder_of(file);
  errors.fail_plain(fmt::format(
      "{} is writing this file (it holds HDF5's lock on it); wait for that run to end, or write to another file",
      pid ? fmt::format("process {}", *pid) : std::string("another process")));
}

bool held_by_another(int error) { return error == EAGAIN || error == EACCES; }

bool names_file(const std::filesystem::path& path, int fd) {
  struct stat named {};
  struct stat opened {};
  return ::stat(path.c_str(), &named) == 0 && ::fstat(fd, &opened) == 0 && named.st_dev == opened.st_dev &&
         named.st_ino == opened.st_ino;
}

// The descriptor of the file at `path`, locked; none when there is nothing to
// lock (no file, or no such locks here: go without). A name found to hold
// another file once locked was replaced meanwhile: that file's turn.
// O_NONBLOCK on every open here: a FIFO at the path must not hang the run
// (it has no effect on a regular file).
UniqueFd lock_file_at(const std::filesystem::path& path, const Hdf5Errors& errors) {
  for (int lookup = 0; lookup < kLookups; ++lookup) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK));
    if (!fd) return {};  // HDF5's own open, or the caller, will say why
    struct flock request = lock_request(F_WRLCK);
    if (::fcntl(fd.get(), F_OFD_SETLK, &request) != 0) {
      const int error = errno;
      const std::optional<FileId> file = id_of(fd.get());
      fd.reset();
      if (held_by_another(error)) fail_held(errors, file);
      return {};  // no such locks here (EINVAL, ENOLCK)
    }
    if (names_file(path, fd.get())) return fd;
  }
  errors.fail_plain(
      "the file was replaced again and again while this run tried to lock it: other runs are replacing it "
      "(--force); wait for them to end, or write to another file");
}

}  // namespace

WriterLock WriterLock::acquire(const std::filesystem::path& path, const Hdf5Errors& errors) {
  return WriterLock(lock_file_at(path, errors));
}

WriterLock WriterLock::acquire_to_replace(const std::filesystem::path& path, const Hdf5Errors& errors) {
  UniqueFd locked = lock_file_at(path, errors);
  if (!locked) {
    check_free(path, errors);  // no lock to hold: at least no live writer now
    return WriterLock();
  }
  const int fd = locked.get();
  WriterLock lock(std::move(locked));
  // A writer without SWMR holds HDF5's exclusive flock() and not memsweep's
  // lock; a shared flock, let go at once, tells. flock() and the
  // open-file-description lock above are apart on local filesystems.
  if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
    ::flock(fd, LOCK_UN);
  } else if (errno == EWOULDBLOCK) {
    fail_hdf5_held(errors, id_of(fd));
  }
  return lock;
}

namespace {

struct LockState {
  bool queried = false;  // the writer's lock could be queried
  bool memsweep_held = false;
  bool hdf5_locked = false;  // HDF5's exclusive lock: a writer without SWMR
  std::optional<FileId> file;
};

std::optional<LockState> lock_state(const std::filesystem::path& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return std::nullopt;
  LockState state;
  struct flock request = lock_request(F_WRLCK);
  state.queried = ::fcntl(fd.get(), F_OFD_GETLK, &request) == 0;
  state.memsweep_held = state.queried && request.l_type != F_UNLCK;
  // HDF5's own lock: exclusive while a writer without SWMR has the file open
  // (readers share it, and so does this test, which releases it at close).
  state.hdf5_locked = ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  state.file = id_of(fd.get());
  return state;
}

}  // namespace

std::optional<bool> WriterLock::is_held(const std::filesystem::path& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return std::nullopt;
  struct flock request = lock_request(F_WRLCK);
  const bool queried = ::fcntl(fd.get(), F_OFD_GETLK, &request) == 0;
  if (!queried) return std::nullopt;
  return request.l_type != F_UNLCK;
}

bool WriterLock::hdf5_lock_held(const std::filesystem::path& path) {
  const std::optional<LockState> state = lock_state(path);
  return state && state->hdf5_locked;
}

void WriterLock::check_free(const std::filesystem::path& path, const Hdf5Errors& errors) {
  const std::optional<LockState> state = lock_state(path);
  if (!state) return;
  if (state->memsweep_held) fail_held(errors, state->file);
  if (state->hdf5_locked) fail_hdf5_held(errors, state->file);
}

}  // namespace memsweep::store
