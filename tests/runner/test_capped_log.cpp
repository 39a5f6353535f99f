// A program's capped logs (runner/capped_log.hpp): what a log past its
// limit keeps (its first half, one line, its last half, in order), a log
// under it kept whole, a full disk's write a problem and not a crash, and
// the pump reading real pipes written by real processes.

#include "faults/small_disk.hpp"
#include "runner/capped_log.hpp"

#include "support/file_text.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace memsweep::runner::detail {
namespace {

using memsweep::testing::slurp;
using memsweep::testing::SmallDisk;
using memsweep::testing::TempDir;
using ::testing::HasSubstr;

// A stream no two parts of which are alike: numbered lines.
std::string numbered_lines(std::size_t bytes) {
  std::string text;
  for (int line = 0; text.size() < bytes; ++line) text += "line " + std::to_string(line) + " of the program's output\n";
  text.resize(bytes);
  return text;
}

UniqueFd open_log(const std::filesystem::path& path) {
  return UniqueFd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

// `text` written in pieces of uneven sizes (a pipe's reads are).
void write_in_pieces(CappedLog& log, std::string_view text) {
  for (std::size_t at = 0, piece = 1; at < text.size(); at += piece, piece = piece * 7 % 4093 + 1)
    log.write(text.substr(at, std::min(piece, text.size() - at)));
}

TEST(LogOffset, TheHeadAsWrittenThenARingAfterIt) {
  EXPECT_EQ(log_offset(0, 4, 3), 0U);
  EXPECT_EQ(log_offset(3, 4, 3), 3U);
  EXPECT_EQ(log_offset(4, 4, 3), 4U);
  EXPECT_EQ(log_offset(6, 4, 3), 6U);
  EXPECT_EQ(log_offset(7, 4, 3), 4U) << "the ring starts again after the head";
  EXPECT_EQ(log_offset(11, 4, 3), 5U);
  EXPECT_EQ(log_offset(1'000'000, 4, 0), 1'000'000U) << "no ring: no limit";
}

// The case at a small scale: far more written than the limit; the
// file holds the stream's first half-limit, the line, its last half-limit.
TEST(CappedLog, PastItsLimitKeepsTheHeadAndTheTailInOrderWithALineBetween) {
  const TempDir dir;
  const std::filesystem::path path = dir.path() / "t-0.out";
  constexpr std::uint64_t kLimit = 4096;
  const std::string stream = numbered_lines(1'000'003);
  CappedLog log(open_log(path), path, kLimit, "stdout");
  write_in_pieces(log, stream);
  EXPECT_EQ(log.finish(), std::nullopt);
  EXPECT_EQ(log.bytes_written(), stream.size());

  const std::string kept = slurp(path);
  const std::string head = stream.substr(0, kLimit / 2);
  const std::string tail = stream.substr(stream.size() - kLimit / 2);
  ASSERT_TRUE(kept.starts_with(head)) << kept.substr(0, 200);
  ASSERT_TRUE(kept.ends_with(tail)) << kept.substr(kept.size() - 200);
  const std::string between = kept.substr(head.size(), kept.size() - head.size() - tail.size());
  EXPECT_THAT(between, HasSubstr(std::to_string(stream.size() - kLimit) + " bytes of stdout dropped here"));
  EXPECT_EQ(between.back(), '\n');
  EXPECT_EQ(std::count(between.begin(), between.end(), '\n'), head.back() == '\n' ? 1 : 2) << between;
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".part"));
  EXPECT_EQ(log.tail(), stream.substr(stream.size() - CappedLog::kMemoryTailBytes));
}

// One byte past the limit drops one byte; at the limit nothing is dropped.
TEST(CappedLog, AtItsLimitIsKeptWholeAndOneByteMoreDropsOne) {
  const TempDir dir;
  constexpr std::uint64_t kLimit = 1024;
  for (const std::size_t size : {std::size_t{0}, std::size_t{10}, std::size_t{kLimit}, std::size_t{kLimit + 1}}) {
    const std::filesystem::path path = dir.path() / ("t-" + std::to_string(size) + ".err");
    const std::string stream = numbered_lines(size);
    CappedLog log(open_log(path), path, kLimit, "stderr");
    write_in_pieces(log, stream);
    EXPECT_EQ(log.finish(), std::nullopt);
    const std::string kept = slurp(path);
    if (size <= kLimit) {
      EXPECT_EQ(kept, stream) << size;
    } else {
      EXPECT_THAT(kept, HasSubstr("[memsweep: 1 bytes of stderr dropped here")) << size;
      EXPECT_TRUE(kept.ends_with(stream.substr(stream.size() - kLimit / 2)));
    }
  }
}

TEST(CappedLog, WithoutALimitKeepsEverything) {
  const TempDir dir;
  const std::filesystem::path path = dir.path() / "t-0.out";
  const std::string stream = numbered_lines(3'000'000);
  CappedLog log(open_log(path), path, 0, "stdout");
  write_in_pieces(log, stream);
  EXPECT_EQ(log.finish(), std::nullopt);
  EXPECT_EQ(slurp(path), stream);
}

// A disk that fills: the first failed write is a problem naming the file
// and the errno, nothing is thrown, and the bytes still count.
TEST(CappedLog, AFullDiskIsAProblemNamingTheLog) {
  const TempDir dir;
  const std::filesystem::path disk = dir.path() / "small";
  // Unmounted however the test ends (SmallDisk's destructor).
  const SmallDisk small(disk, 64);
  if (!small.mounted()) MEMSWEEP_SKIP_OR_FAIL_IN_CI("cannot mount a tmpfs (this test needs root): " + small.problem());
  std::optional<std::string> problem;
  std::uint64_t written = 0;
  {
    const std::filesystem::path path = disk / "t-0.out";
    CappedLog log(open_log(path), path, 1 << 20, "stdout");
    write_in_pieces(log, numbered_lines(300'000));
    problem = log.finish();
    written = log.bytes_written();
  }
  ASSERT_TRUE(problem.has_value()) << "300 kB fit a 64 KiB disk";
  EXPECT_THAT(*problem, HasSubstr("t-0.out could not be written past byte"));
  EXPECT_THAT(*problem, HasSubstr("No space left on device"));
  EXPECT_EQ(written, 300'000U);
}

// Real pipes, written by a real process that writes more than a pipe holds
// to both: the pump reads them whole into their logs, and its observer sees
// every byte of stdout, before the limit.
TEST(OutputPump, ReadsBothPipesOfARealProcessIntoTheirLogs) {
  const TempDir dir;
  const std::string out_text = numbered_lines(700'000);
  const std::string err_text = numbered_lines(300'000);
  Pipe out = make_pipe("test stdout");
  Pipe err = make_pipe("test stderr");
  const std::filesystem::path out_path = dir.path() / "t-0.out";
  const std::filesystem::path err_path = dir.path() / "t-0.err";
  CappedLog out_log(open_log(out_path), out_path, 0, "stdout");
  CappedLog err_log(open_log(err_path), err_path, 100'000, "stderr");
  std::string observed;
  std::optional<OutputPump> pump;
  pump.emplace(std::move(out.read_end), out_log, std::move(err.read_end), err_log,
               [&](std::string_view bytes) { observed += bytes; });
  const pid_t writer = ::fork();
  if (writer == 0) {
    // Alternately, so that neither pipe may be left unread.
    for (std::size_t at = 0; at < out_text.size() || at < err_text.size(); at += 50'000) {
      if (at < out_text.size()) {
        const std::string_view part = std::string_view(out_text).substr(at, 50'000);
        for (std::size_t done = 0; done < part.size();)
          done += static_cast<std::size_t>(
              std::max<ssize_t>(0, ::write(out.write_end.get(), part.data() + done, part.size() - done)));
      }
      if (at < err_text.size()) {
        const std::string_view part = std::string_view(err_text).substr(at, 50'000);
        for (std::size_t done = 0; done < part.size();)
          done += static_cast<std::size_t>(
              std::max<ssize_t>(0, ::write(err.write_end.get(), part.data() + done, part.size() - done)));
      }
    }
    ::_exit(0);
  }
  out.write_end.reset();
  err.write_end.reset();
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the writer was held up or failed";
  pump->stop();
  pump.reset();
  EXPECT_EQ(out_log.finish(), std::nullopt);
  EXPECT_EQ(err_log.finish(), std::nullopt);
  EXPECT_EQ(slurp(out_path), out_text);
  EXPECT_EQ(observed, out_text);
  const std::string err_kept = slurp(err_path);
  EXPECT_TRUE(err_kept.starts_with(err_text.substr(0, 50'000)));
  EXPECT_TRUE(err_kept.ends_with(err_text.substr(err_text.size() - 50'000)));
  EXPECT_NE(err_kept.find("200000 bytes of stderr dropped here"), std::string::npos) << err_kept.size();
}

// stop() does not wait for a writer that keeps its end open (a process
// that escaped the trial's tree): it reads what is there and returns.
TEST(OutputPump, StopsWhileAWriterStillHoldsThePipe) {
  Pipe out = make_pipe("test stdout");
  Pipe err = make_pipe("test stderr");
  CappedLog out_log(UniqueFd(), {}, 0, "stdout");
  CappedLog err_log(UniqueFd(), {}, 0, "stderr");
  OutputPump pump(std::move(out.read_end), out_log, std::move(err.read_end), err_log);
  ASSERT_EQ(::write(err.write_end.get(), "Traceback: the end\n", 19), 19);
  pump.stop();
  EXPECT_EQ(err_log.tail(), "Traceback: the end\n");
}

}  // namespace
}  // namespace memsweep::runner::detail
