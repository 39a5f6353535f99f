#include "store/writer_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
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

[[noreturn]] void fail_held(const Hdf5Errors& errors) {
  errors.fail_plain(
      "another memsweep run is writing this file (it holds the writer's lock); wait for that run to end, "
      "or write to another file");
}

bool held_by_another(int error) { return error == EAGAIN || error == EACCES; }

}  // namespace

WriterLock::WriterLock(WriterLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

WriterLock& WriterLock::operator=(WriterLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the description releases its lock
}

WriterLock WriterLock::acquire(const std::filesystem::path& path, const Hdf5Errors& errors) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return WriterLock();  // HDF5's own open will say why
  struct flock request = lock_request(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &request) == 0) return WriterLock(fd);
  const int error = errno;
  ::close(fd);
  if (held_by_another(error)) fail_held(errors);
  return WriterLock();  // no such locks here (EINVAL, ENOLCK): go without
}

namespace {

struct LockState {
  bool queried = false;  // the writer's lock could be queried
  bool memsweep_held = false;
  bool hdf5_locked = false;  // HDF5's exclusive lock: a writer without SWMR
};

std::optional<LockState> lock_state(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  LockState state;
  struct flock request = lock_request(F_WRLCK);
  state.queried = ::fcntl(fd, F_OFD_GETLK, &request) == 0;
  state.memsweep_held = state.queried && request.l_type != F_UNLCK;
  // HDF5's own lock: exclusive while a writer without SWMR has the file open
  // (readers share it, and so does this test, which releases it at close).
  state.hdf5_locked = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return state;
}

}  // namespace

std::optional<bool> WriterLock::is_held(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct flock request = lock_request(F_WRLCK);
  const bool queried = ::fcntl(fd, F_OFD_GETLK, &request) == 0;
  ::close(fd);
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
  if (state->memsweep_held) fail_held(errors);
  if (state->hdf5_locked)
    errors.fail_plain(
        "another process is writing this file (it holds HDF5's lock on it); wait for that run to end, "
        "or write to another file");
}

}  // namespace memsweep::store
