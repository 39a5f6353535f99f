#pragma once
// The one owner of a file descriptor in memsweep, and a pipe made of two:
// a descriptor is closed exactly once, on every path out of the code that
// opened it, early returns and exceptions included.

#include <string_view>

namespace memsweep {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // The descriptor, no longer owned: the caller (or a process it was
  // handed to) closes it.
  int release();
  // Closes it now. No retry on EINTR: Linux frees the descriptor even
  // then, and a retry could close one that another thread has just been
  // given.
  void reset();

 private:
  int fd_ = -1;
};

// A pipe's two ends, each closed when it goes out of scope unless handed
// on (release()) or closed early (reset()): a child's end is closed in the
// parent once the child has its copy, so that the child's exit ends the
// pipe.
struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};

// A pipe with O_CLOEXEC on both ends. Throws std::system_error "cannot make
// a pipe for WHAT".
Pipe make_pipe(std::string_view what);

}  // namespace memsweep
