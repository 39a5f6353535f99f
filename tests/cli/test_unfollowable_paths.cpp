// A results path that is neither a file nor a free name: a symbolic link
// that loops (`ln -s loop.h5 loop.h5`), one whose target is missing, or a
// path under a regular file. Every command given one (run with and without
// --resume or --force, summary, watch, export's input and its -o) is bad
// input: one line naming the path and what is wrong with it, exit status 2,
// and nothing created or changed. Until issue 28, `run --resume` on a loop
// ended with exit status 1 and a bare "filesystem error", and a dangling
// link was "already exists: pass --resume", which --resume refused in turn.

#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kSweep[] = R"([sweep]
name = "links"
seed = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 4, 4], classes = 2, train_size = 64, test_size = 16 }
hidden = [4]
epochs = 1
batch_size = 32
[grid]
learning_rate = [0.1]
)";

struct PathKind {
  const char* name;
  const char* says;  // what the one line must say of it
};

const PathKind kLoop{"loop", "a symbolic link to loop.h5 that cannot be followed"};
const PathKind kDangling{"dangling", "a symbolic link to missing.h5, which does not exist"};
const PathKind kUnderAFile{"under-a-file", "cannot look at it (Not a directory)"};

bool is(const PathKind& kind, const PathKind& other) { return std::string_view(kind.name) == other.name; }

// "@": the bad path; "%": the sweep file; "&": a good results file.
struct Command {
  const char* name;
  std::vector<std::string> args;
};

const std::vector<Command> kCommands{
    {"run_resume", {"run", "%", "-o", "@", "--resume", "-q"}},
    {"run", {"run", "%", "-o", "@", "-q"}},
    {"run_force", {"run", "%", "-o", "@", "--force", "-q"}},
    {"summary", {"summary", "@"}},
    {"watch", {"watch", "@", "--once"}},
    {"export_input", {"export", "@"}},
    {"export_output", {"export", "&", "-o", "@"}},
    {"export_output_force", {"export", "&", "-o", "@", "--force"}},
};

std::vector<std::string> substituted(std::vector<std::string> args, const std::string& bad, const std::string& sweep,
                                     const std::string& good) {
  for (std::string& arg : args) {
    if (arg == "@") arg = bad;
    if (arg == "%") arg = sweep;
    if (arg == "&") arg = good;
  }
  return args;
}

// Every entry of the folder, links not followed.
std::set<std::string> entries(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.insert(entry.path().filename());
  return names;
}

class UnfollowablePath : public ::testing::TestWithParam<std::tuple<PathKind, Command>> {
 protected:
  // One real results file for export's input, made once.
  static void SetUpTestSuite() {
    shared_ = new TempDir();
    const std::string sweep = shared_->write("links.toml", kSweep).string();
    good_ = (shared_->path() / "good.h5").string();
    const CommandResult made = run_command(memsweep_argv({"run", sweep, "-o", good_, "-q"}), "", kEnvironment);
    ASSERT_EQ(made.exit_status, kOk) << made.err;
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }

  // The bad path of `kind`, made in a folder of its own.
  std::filesystem::path make(const PathKind& kind) const {
    const std::filesystem::path folder = dir_.path();
    if (is(kind, kLoop)) {
      std::filesystem::create_symlink("loop.h5", folder / "loop.h5");
      return folder / "loop.h5";
    }
    if (is(kind, kDangling)) {
      std::filesystem::create_symlink("missing.h5", folder / "dangling.h5");
      return folder / "dangling.h5";
    }
    dir_.write("plain", "a file, not a folder\n");
    return folder / "plain" / "results.h5";
  }

  static inline TempDir* shared_ = nullptr;
  static inline std::string good_;
  const TempDir dir_;
};

TEST_P(UnfollowablePath, IsOneLineNamingItAndStatusTwoWithNothingCreated) {
  const auto& [kind, command] = GetParam();
  ASSERT_NE(shared_, nullptr);
  const std::filesystem::path bad = make(kind);
  const std::string sweep = (shared_->path() / "links.toml").string();
  const std::set<std::string> before = entries(dir_.path());

  const CommandResult result =
      run_command(memsweep_argv(substituted(command.args, bad.string(), sweep, good_)), "", kEnvironment);

  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_THAT(result.err, StartsWith("memsweep: error: ")) << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << "one line: " << result.err;
  EXPECT_THAT(result.err, HasSubstr(bad.string() + ": "));
  EXPECT_THAT(result.err, HasSubstr(kind.says));
  EXPECT_THAT(result.err, Not(HasSubstr("filesystem error")));
  EXPECT_THAT(result.err, Not(HasSubstr("already exists")));  // it does not, as a file
  EXPECT_EQ(entries(dir_.path()), before) << "a file was created or removed beside the path";
  if (!is(kind, kUnderAFile)) {
    EXPECT_TRUE(std::filesystem::is_symlink(std::filesystem::symlink_status(bad))) << "the link was replaced";
    EXPECT_EQ(std::filesystem::read_symlink(bad), is(kind, kLoop) ? "loop.h5" : "missing.h5");
  }
}

INSTANTIATE_TEST_SUITE_P(EveryCommand, UnfollowablePath,
                         ::testing::Combine(::testing::Values(kLoop, kDangling, kUnderAFile),
                                            ::testing::ValuesIn(kCommands)),
                         [](const auto& test) {
                           std::string name =
                               std::string(std::get<0>(test.param).name) + "_" + std::get<1>(test.param).name;
                           for (char& c : name)
                             if (c == '-') c = '_';
                           return name;
                         });

// `watch --wait` waits for a file that is not there yet; a loop never
// becomes one, so it is refused at once rather than waited on for ever.
TEST(UnfollowablePathWatch, WaitRefusesALoopAtOnce) {
  const TempDir dir;
  std::filesystem::create_symlink("loop.h5", dir.path() / "loop.h5");
  const CommandResult result = run_memsweep({"watch", (dir.path() / "loop.h5").string(), "--once", "--wait"});
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_THAT(result.err, HasSubstr("cannot be followed"));
}

// A link to a results file is followed as before.
TEST(UnfollowablePathWatch, ALinkToAResultsFileIsStillRead) {
  const TempDir dir;
  const std::string sweep = dir.write("links.toml", kSweep).string();
  const std::filesystem::path real = dir.path() / "real.h5";
  ASSERT_EQ(run_command(memsweep_argv({"run", sweep, "-o", real.string(), "-q"}), "", kEnvironment).exit_status, kOk);
  std::filesystem::create_symlink("real.h5", dir.path() / "link.h5");
  const CommandResult summary = run_memsweep({"summary", (dir.path() / "link.h5").string()});
  EXPECT_EQ(summary.exit_status, kOk) << summary.err;
  const CommandResult resumed = run_command(
      memsweep_argv({"run", sweep, "-o", (dir.path() / "link.h5").string(), "--resume", "-q"}), "", kEnvironment);
  EXPECT_EQ(resumed.exit_status, kOk) << resumed.err;
}

}  // namespace
}  // namespace memsweep::testing
