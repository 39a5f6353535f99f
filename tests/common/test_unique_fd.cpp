// The one owner of a descriptor: it closes exactly what it owns, once, and
// hands it on whole.

#include "common/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <utility>

namespace memsweep {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(UniqueFd, ClosesWhatItOwnsAtTheEndOfItsScope) {
  int fd = -1;
  {
    const UniqueFd owner(open_null());
    fd = owner.get();
    ASSERT_TRUE(is_open(fd));
  }
  EXPECT_FALSE(is_open(fd));
}

TEST(UniqueFd, AMoveHandsTheDescriptorOnAndTheSourceClosesNothing) {
  UniqueFd first(open_null());
  const int fd = first.get();
  UniqueFd second(std::move(first));
  EXPECT_FALSE(first);  // a moved-from owner owns nothing
  EXPECT_EQ(second.get(), fd);
  first = UniqueFd(open_null());
  const int other = first.get();
  first = std::move(second);  // the one it held is closed
  EXPECT_FALSE(is_open(other));
  EXPECT_EQ(first.get(), fd);
  EXPECT_TRUE(is_open(fd));
}

TEST(UniqueFd, ReleaseLeavesTheDescriptorOpen) {
  UniqueFd owner(open_null());
  const int fd = owner.release();
  EXPECT_FALSE(owner);
  owner.reset();
  EXPECT_TRUE(is_open(fd));
  ::close(fd);
}

TEST(Pipe, CarriesBytesAndItsEndsCloseOnExec) {
  Pipe pipe = make_pipe("a test");
  EXPECT_EQ(::fcntl(pipe.read_end.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  EXPECT_EQ(::fcntl(pipe.write_end.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ASSERT_EQ(::write(pipe.write_end.get(), "x", 1), 1);
  pipe.write_end.reset();  // the reader then sees the end
  char got[2] = {};
  EXPECT_EQ(::read(pipe.read_end.get(), got, sizeof got), 1);
  EXPECT_EQ(got[0], 'x');
  EXPECT_EQ(::read(pipe.read_end.get(), got, sizeof got), 0);
}

}  // namespace
}  // namespace memsweep
