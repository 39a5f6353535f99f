// Sweep files that crashed or hung memsweep before it checked them (issue
// 20): nesting deep enough to run toml11 out of stack, /dev/zero, a file
// over the size limit, a FIFO, a socket. `plan` and `run` each answer with
// one line naming the file and what is wrong, exit status 2, promptly, and
// write nothing (`run`: no results file).

#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

// Each answer is immediate; a hang or a read of /dev/zero until memory runs
// out would take far longer than this.
constexpr auto kPromptly = std::chrono::seconds(20);

std::string repeated(const std::string& piece, int times) {
  std::string text;
  text.reserve(piece.size() * static_cast<std::size_t>(times));
  for (int i = 0; i < times; ++i) text += piece;
  return text;
}

// A valid sweep's first lines, so that the deep part is on line 4.
const std::string kPreamble = "[sweep]\nname = \"deep\"  # [[[[ in a comment\nnote = \"\"\"[[[[\"\"\"\n";

struct Input {
  const char* name;
  // Makes the input in `dir` and returns its path.
  std::function<std::filesystem::path(const TempDir& dir)> make;
  std::string expected;  // in the one line, after the path
};

std::filesystem::path sweep_text(const TempDir& dir, const std::string& text) { return dir.write("sweep.toml", text); }

const std::vector<Input> kInputs{
    {"arrays_20000_deep",
     [](const TempDir& dir) {
       return sweep_text(dir, kPreamble + "a = " + repeated("[", 20000) + repeated("]", 20000) + "\n");
     },
     ":4: nested deeper than 64"},
    {"inline_tables_20000_deep",
     [](const TempDir& dir) {
       return sweep_text(dir, kPreamble + "a = " + repeated("{b = ", 20000) + "1" + repeated("}", 20000) + "\n");
     },
     ":4: nested deeper than 64"},
    {"arrays_of_inline_tables_20000_deep",
     [](const TempDir& dir) {
       return sweep_text(dir, kPreamble + "a = " + repeated("[{b = ", 10000) + "1" + repeated("}]", 10000) + "\n");
     },
     ":4: nested deeper than 64"},
    {"table_header_200000_deep",
     [](const TempDir& dir) { return sweep_text(dir, kPreamble + "[x" + repeated(".x", 199999) + "]\n"); },
     ":4: nested deeper than 64"},
    {"array_of_tables_header_200000_deep",
     [](const TempDir& dir) { return sweep_text(dir, kPreamble + "[[x" + repeated(".x", 199999) + "]]\n"); },
     ":4: nested deeper than 64"},
    {"dotted_key_200000_deep",
     [](const TempDir& dir) { return sweep_text(dir, kPreamble + "x" + repeated(".x", 199999) + " = 1\n"); },
     ":4: nested deeper than 64"},
    {"larger_than_16_mib",
     [](const TempDir& dir) {
       // Text, so that only its size is wrong: a valid sweep padded with comment lines.
       const std::string line = "# " + std::string(1021, '-') + "\n";
       return sweep_text(dir, kPreamble + "[[trial]]\n" + repeated(line, 16 * 1024 + 1));
     },
     ": larger than 16 MiB"},
    {"dev_zero", [](const TempDir&) { return std::filesystem::path("/dev/zero"); }, ": is a character device"},
    {"fifo",
     [](const TempDir& dir) {
       const std::filesystem::path path = dir.path() / "sweep.toml";
       EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
       return path;
     },
     ": is a FIFO"},
    {"socket",
     [](const TempDir& dir) {
       const std::filesystem::path path = dir.path() / "sweep.toml";
       const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
       sockaddr_un address{};
       address.sun_family = AF_UNIX;
       EXPECT_LT(path.string().size(), sizeof(address.sun_path));
       std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
       EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0) << std::strerror(errno);
       ::close(fd);  // the socket file stays
       return path;
     },
     ": is a socket"},
};

struct Command {
  const char* name;
  std::vector<std::string> args;  // "@" is the sweep file
};

const std::vector<Command> kCommands{
    {"plan", {"plan", "@"}},
    {"run", {"run", "@", "-o", "out.h5"}},
};

struct Case {
  Command command;
  Input input;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Command& command : kCommands)
    for (const Input& input : kInputs) cases.push_back({command, input});
  return cases;
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files{std::filesystem::directory_iterator(dir), {}};
  std::sort(files.begin(), files.end());
  return files;
}

class SweepFileLimit : public ::testing::TestWithParam<Case> {};

TEST_P(SweepFileLimit, RefusedInOneLineWithStatusTwoAndNothingWritten) {
  const auto& [command, input] = GetParam();
  const TempDir dir;
  const TempDir capture;
  const std::filesystem::path file = input.make(dir);
  const std::vector<std::filesystem::path> before = files_in(dir.path());

  const auto start = Clock::now();
  BackgroundProcess process(memsweep_argv(with_file(command.args, file.string())), capture.path(), {}, dir.path());
  ASSERT_TRUE(process.wait_until_ended(kPromptly)) << "still running after " << kPromptly.count() << " s";
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int status = process.wait();
  const std::string err = process.err();

  EXPECT_FALSE(process.ended_by_signal()) << "ended by signal " << status - 128;
  EXPECT_EQ(status, kBadInput) << err;
  EXPECT_EQ(process.out(), "");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_THAT(err, StartsWith("memsweep: error: " + file.string() + input.expected)) << err;
  EXPECT_LT(seconds, 10.0);
  EXPECT_EQ(files_in(dir.path()), before) << "a file was written";
}

INSTANTIATE_TEST_SUITE_P(PlanAndRun, SweepFileLimit, ::testing::ValuesIn(all_cases()), [](const auto& param_info) {
  return fmt::format("{}_{}", param_info.param.command.name, param_info.param.input.name);
});

// Just inside the limits, a file is read and parsed as before.
TEST(SweepFileLimit, JustUnderSixteenMiBIsPlanned) {
  const TempDir dir;
  std::string text = "[sweep]\nname = \"inside\"\n[[trial]]\ndataset = \"synthetic\"\nmodel = \"mlp\"\nhidden = [64]\n";
  const std::string line = "# " + std::string(1021, '-') + "\n";
  text += repeated(line, static_cast<int>((16 * 1024 * 1024 - text.size()) / line.size()));
  ASSERT_LE(text.size(), 16u * 1024 * 1024);
  ASSERT_GT(text.size(), 16u * 1024 * 1024 - line.size());
  const std::filesystem::path file = dir.write("inside.toml", text);

  const CommandResult result = run_memsweep({"plan", file.string()}, dir.path().string());
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("synthetic"));
}

// 64 deep reaches toml11 and the checks after it, which refuse the value
// for what it is, not for its depth.
TEST(SweepFileLimit, SixtyFourDeepIsParsed) {
  const TempDir dir;
  // [[trial]] is 2 deep, its params 3, and 61 arrays in them 64.
  const std::string text = "[[trial]]\nparams = {deep = " + repeated("[", 61) + repeated("]", 61) + "}\n";
  const std::filesystem::path file = dir.write("deep.toml", text);

  const CommandResult result = run_memsweep({"plan", file.string()}, dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_THAT(result.err, HasSubstr("deep.toml:2: trial[0].params.deep[0]: expected a string, a number or a boolean"));

  dir.write("deep.toml", "[[trial]]\nparams = {deep = " + repeated("[", 62) + repeated("]", 62) + "}\n");
  const CommandResult deeper = run_memsweep({"plan", file.string()}, dir.path().string());
  EXPECT_EQ(deeper.exit_status, kBadInput) << deeper.err;
  EXPECT_THAT(deeper.err, HasSubstr("deep.toml:2: nested deeper than 64"));
}

}  // namespace
}  // namespace memsweep::testing
