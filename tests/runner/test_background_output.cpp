// The tests' background programs (support/background_process.hpp): what a
// test reads of one is that program's output from the moment it is started,
// never what an earlier program left in the same folder.

#include "support/background_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace memsweep::testing {
namespace {

TEST(BackgroundProcess, ASecondProgramInTheSameFolderShowsNoneOfTheFirstsOutput) {
  const TempDir dir;
  {
    BackgroundProcess first({"/bin/sh", "-c", "echo first-out; echo first-err >&2"}, dir.path());
    ASSERT_EQ(first.wait(), 0);
    ASSERT_EQ(first.err(), "first-err\n");
  }
  // The second waits before it writes: until then its output is empty, from
  // the first read on (a test that polls for a line must not find the
  // first program's).
  BackgroundProcess second({"/bin/sh", "-c", "sleep 0.3; echo second-err >&2"}, dir.path());
  EXPECT_EQ(second.err(), "");
  EXPECT_EQ(second.out(), "");
  ASSERT_TRUE(second.wait_for([&] { return !second.err().empty(); }, std::chrono::seconds(30)));
  EXPECT_EQ(second.wait(), 0);
  EXPECT_EQ(second.err(), "second-err\n");
}

}  // namespace
}  // namespace memsweep::testing
