// A trial's message longer than /trials' column, end to end: a program trial
// whose program fails with a long stderr line (multi-byte characters across
// the 256-byte boundary, and bytes that are not UTF-8), run under mpirun on
// two ranks so that the message crosses MPI, read back with h5py alone and
// with h5dump.

#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

// The program's stderr line: 255 ASCII bytes, "é" across byte 256, then a
// 4-byte character across byte 512, then an invalid byte (\377) and a
// truncated sequence (\303 before "("), written by printf's octal escapes.
const std::string kLineStart = std::string(255, 'a') + "é" + std::string(254, 'b') + "😀 tail ";
const std::string kStoredLine = kLineStart + "\xEF\xBF\xBD and \xEF\xBF\xBD( end";  // U+FFFD for each

std::string sweep_text() {
  return "[sweep]\nname = \"long-message\"\nseed = 1\n\n[[trial]]\nprogram = [\"sh\", \"-c\", '''printf '" +
         kLineStart + "\\377 and \\303( end\\n' >&2; exit 1''']\n";
}

// /messages through h5py: each trial's pieces joined in order, decoded as
// strict UTF-8 (a decoding error fails the script), printed as hex, with the
// /trials message column beside it: "<id> <whole hex> <column hex>".
const char* kReadMessages = R"(
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    pieces = {}
    for row in f["messages"][()]:
        key = (row["trial_id"], int(row["attempt"]), int(row["run"]))
        pieces.setdefault(key, []).append((int(row["piece"]), bytes(row["text"])))
    for row in f["trials"][()]:
        key = (row["trial_id"], int(row["attempt"]), int(row["run"]))
        whole = b"".join(t for _, t in sorted(pieces.get(key, [])))
        whole.decode("utf-8")
        print(row["trial_id"].decode(), whole.hex(), bytes(row["message"]).hex())
)";

std::string hex(const std::string& text) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (const unsigned char c : text) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

TEST(WholeMessages, AProgramsLongStderrReachesTheFileWholeAsValidUtf8) {
  const TempDir dir;
  const std::string sweep = dir.write("long.toml", sweep_text()).string();
  const std::string file = (dir.path() / "out.h5").string();
  const CommandResult run = run_command(on_ranks(MEMSWEEP_MPIEXEC, 2, memsweep_argv({"run", sweep, "-o", file})),
                                        dir.path().string(), {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  EXPECT_THAT(run.err, HasSubstr(" failed ")) << "the progress line";

  const CommandResult read = run_command({"/usr/bin/python3", "-c", kReadMessages, file});
  ASSERT_EQ(read.exit_status, 0) << read.err;
  std::istringstream lines(read.out);
  std::string id, whole_hex, column_hex;
  ASSERT_TRUE(lines >> id >> whole_hex >> column_hex) << read.out;
  EXPECT_EQ(id.size(), 12u);
  // hex: two digits a byte.
  EXPECT_THAT(whole_hex, ::testing::StartsWith(hex("the program exited with status 1")));
  EXPECT_THAT(whole_hex, ::testing::EndsWith(hex(": " + kStoredLine))) << "the whole line, invalid bytes replaced";
  EXPECT_GT(whole_hex.size() / 2, kStoredLine.size());
  // /trials' column: the message's first bytes, cut before a character.
  EXPECT_LE(column_hex.size() / 2, 256u);
  EXPECT_GT(column_hex.size() / 2, 250u);
  EXPECT_EQ(whole_hex.substr(0, column_hex.size()), column_hex);

  const CommandResult dump = run_command({MEMSWEEP_H5DUMP, "-d", "/messages", file});
  ASSERT_EQ(dump.exit_status, 0) << dump.err;
  EXPECT_THAT(dump.out, HasSubstr("\"" + id + "\""));
  EXPECT_THAT(dump.out, HasSubstr("H5T_CSET_UTF8"));
}

}  // namespace
}  // namespace memsweep::testing
