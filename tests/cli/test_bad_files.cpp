// Every command that reads a file, given the wrong kind of file, an empty
// one, a directory, or one it may not read: one line on stderr that names
// the file and what is wrong, exit status 2 (README.md), nothing on stdout,
// and no file written.

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

const std::string kQuickstart = MEMSWEEP_SOURCE_DIR "/jobs/examples/quickstart.toml";
// The first bytes of an HDF5 file: enough for a "results file" given where a
// sweep file is expected.
const std::string kHdf5Start("\x89HDF\r\n\x1a\n\0\0\0\0\0\x08\x08\0", 16);

enum class Slot { sweep_file, results_file };

struct Command {
  const char* name;
  Slot slot;
  std::vector<std::string> args;  // "@" is the file
};

enum class Kind { wrong_kind, empty, directory, no_permission };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::wrong_kind: return "wrong_kind";
    case Kind::empty: return "empty";
    case Kind::directory: return "directory";
    case Kind::no_permission: return "no_permission";
  }
  return "?";
}

// What the one line must say, by slot and kind.
std::string expected_words(Slot slot, Kind kind) {
  switch (kind) {
    case Kind::wrong_kind: return slot == Slot::sweep_file ? "not a sweep file" : "not an HDF5 file";
    case Kind::empty: return slot == Slot::sweep_file ? "defines no trials" : "not an HDF5 file";
    case Kind::directory: return "is a directory";
    case Kind::no_permission: return "Permission denied";
  }
  return "";
}

const std::vector<Command> kCommands{
    {"plan", Slot::sweep_file, {"plan", "@"}},
    {"run", Slot::sweep_file, {"run", "@", "-o", "out.h5"}},
    {"run_resume", Slot::results_file, {"run", kQuickstart, "-o", "@", "--resume"}},
    {"summary", Slot::results_file, {"summary", "@"}},
    {"watch", Slot::results_file, {"watch", "@", "--once"}},
};

struct Case {
  Command command;
  Kind kind;
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Command& command : kCommands)
    for (const Kind kind : {Kind::wrong_kind, Kind::empty, Kind::directory, Kind::no_permission})
      cases.push_back({command, kind});
  return cases;
}

class BadFile : public ::testing::TestWithParam<Case> {};

TEST_P(BadFile, OneLineNamingTheFileAndStatusTwo) {
  const auto& [command, kind] = GetParam();
  const TempDir dir;
  // Readable by the unprivileged user the no-permission case runs as (root reads anything).
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_all | std::filesystem::perms::group_read |
                                               std::filesystem::perms::group_exec |
                                               std::filesystem::perms::others_read |
                                               std::filesystem::perms::others_exec);
  const std::filesystem::path file = dir.path() / (command.slot == Slot::sweep_file ? "sweep.toml" : "results.h5");
  switch (kind) {
    case Kind::wrong_kind:
      // A results file where a sweep file goes, a sweep file where a results file goes.
      dir.write(file.filename().string(), command.slot == Slot::sweep_file ? kHdf5Start : "[sweep]\nname = \"x\"\n");
      break;
    case Kind::empty: dir.write(file.filename().string(), ""); break;
    case Kind::directory: std::filesystem::create_directory(file); break;
    case Kind::no_permission:
      dir.write(file.filename().string(), "[sweep]\nname = \"x\"\n");
      std::filesystem::permissions(file, std::filesystem::perms::none);
      break;
  }
  std::vector<std::string> argv;
  if (kind == Kind::no_permission)
    argv = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", MEMSWEEP_EXECUTABLE};
  else
    argv = {MEMSWEEP_EXECUTABLE};
  for (const std::string& arg : command.args) argv.push_back(arg == "@" ? file.string() : arg);
  const std::vector<std::filesystem::path> before{std::filesystem::directory_iterator(dir.path()), {}};

  const CommandResult result = run_command(argv, dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, ::testing::StartsWith("memsweep: error: "));
  EXPECT_THAT(result.err, HasSubstr(file.filename().string()));
  EXPECT_THAT(result.err, HasSubstr(expected_words(command.slot, kind)));
  const std::vector<std::filesystem::path> after{std::filesystem::directory_iterator(dir.path()), {}};
  EXPECT_EQ(after.size(), before.size()) << "a file was written";
}

INSTANTIATE_TEST_SUITE_P(EveryCommand, BadFile, ::testing::ValuesIn(all_cases()), [](const auto& param_info) {
  return fmt::format("{}_{}", param_info.param.command.name, kind_name(param_info.param.kind));
});

}  // namespace
}  // namespace memsweep::testing
