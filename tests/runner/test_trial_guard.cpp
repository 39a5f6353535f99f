// The trial guard (runner/trial_guard.hpp): what the rank tells it, and a
// real guard process ending a tree whose rank is gone. The whole story,
// under mpirun with real kills, is tests/run/test_rank_death.cpp.

#include "runner/trial_guard.hpp"

#include "support/background_process.hpp"
#include "support/cgroups.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace memsweep::runner::detail {
namespace {

TEST(GuardWatchLine, RoundTripsATrialWithItsGroupAndCgroup) {
  const GuardedTrial trial{.root = 31337, .own_group = true, .cgroup = "/sys/fs/cgroup/a b/memsweep-1-trial-2"};
  const std::optional<GuardedTrial> read =
      parse_guard_watch_line(guard_watch_line(trial).substr(0, guard_watch_line(trial).size() - 1));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->root, 31337);
  EXPECT_TRUE(read->own_group);
  EXPECT_EQ(read->cgroup, trial.cgroup) << "a path with a space stays whole";
}

TEST(GuardWatchLine, ATrialWithoutCgroupOrGroupRoundTrips) {
  const std::string line = guard_watch_line({.root = 77, .own_group = false, .cgroup = {}});
  const std::optional<GuardedTrial> read = parse_guard_watch_line(line.substr(0, line.size() - 1));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->root, 77);
  EXPECT_FALSE(read->own_group);
  EXPECT_TRUE(read->cgroup.empty());
}

TEST(GuardWatchLine, AnythingElseNamesNoTrial) {
  for (const char* line : {"release", "", "watch", "watch 12", "watch 12 1", "watch x 1 /a", "watch 12 2 /a",
                           "watch 1 1 /a", "watch 0 0 ", "watch -5 1 /a", "watch 99999999999 1 /a", "watch  12 1 /a"})
    EXPECT_FALSE(parse_guard_watch_line(line).has_value()) << '"' << line << '"';
}

TEST(GuardGroupsLine, RoundTripsTheRankAndAFolderAndNamesNoTrial) {
  const std::filesystem::path parent = "/sys/fs/cgroup/memory/a b";
  const std::string line = guard_groups_line({4242, parent});
  ASSERT_EQ(line.back(), '\n');
  const std::optional<RankGroups> read = parse_guard_groups_line(line.substr(0, line.size() - 1));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->rank, 4242);
  EXPECT_EQ(read->parent, parent) << "a path with a space stays whole";
  EXPECT_FALSE(parse_guard_watch_line(line.substr(0, line.size() - 1)).has_value());
  for (const char* other : {"groups ", "groups", "groups /a", "groups 12", "groups 12 ", "groups 1 /a", "groups x /a",
                            "release", "watch 12 1 /a", "end"})
    EXPECT_FALSE(parse_guard_groups_line(other).has_value()) << '"' << other << '"';
}

// A "rank" of the test's own (a forked child) starts a real guard and a
// program whose shell starts five background sleeps and waits for them:
// six processes, each carrying `mark`.
struct FakeRank {
  pid_t pid = -1;
  pid_t program = -1;
  pid_t guard = -1;  // the first guard
  FakeRank() = default;
  FakeRank(const FakeRank&) = delete;
  FakeRank& operator=(const FakeRank&) = delete;
  // Whatever a failed test left: the rank, the program's group.
  ~FakeRank() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
    if (program > 0) ::kill(-program, SIGKILL);
  }
};

struct FakeRankSettings {
  bool release_before_death = false;
  std::string executable = MEMSWEEP_EXECUTABLE;
  std::filesystem::path stderr_file{};  // empty: the test's own
};

void start_fake_rank(FakeRank& started, const std::string& mark, const FakeRankSettings& settings = {}) {
  int report[2];
  if (::pipe(report) != 0) throw std::runtime_error("pipe");
  const pid_t rank = ::fork();
  if (rank == 0) {
    ::close(report[0]);
    if (!settings.stderr_file.empty()) {
      const int err = ::open(settings.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err < 0 || ::dup2(err, STDERR_FILENO) < 0) ::_exit(2);
    }
    ::setenv("OMPI_COMM_WORLD_RANK", "7", 1);  // how a rank under mpirun names itself
    std::optional<TrialGuard> guard = TrialGuard::start(settings.executable);
    if (!guard) ::_exit(3);
    const pid_t program = ::fork();
    if (program == 0) {
      ::setpgid(0, 0);
      ::setenv("MEMSWEEP_GUARD_TEST", mark.c_str(), 1);
      ::execl("/bin/sh", "sh", "-c", "for i in 1 2 3 4 5; do sleep 60 & done; wait", nullptr);
      ::_exit(127);
    }
    ::setpgid(program, program);
    guard->watch({.root = program, .own_group = true, .cgroup = {}});
    if (settings.release_before_death) guard->release();
    const pid_t pids[2] = {program, guard->pid()};
    [[maybe_unused]] const ssize_t wrote = ::write(report[1], pids, sizeof pids);
    for (;;) ::pause();  // until the test kills it
  }
  ::close(report[1]);
  started.pid = rank;
  pid_t pids[2] = {-1, -1};
  if (::read(report[0], pids, sizeof pids) == sizeof pids) {
    started.program = pids[0];
    started.guard = pids[1];
  }
  ::close(report[0]);
}

std::size_t marked(const std::string& mark) {
  return memsweep::testing::processes_with_environment("MEMSWEEP_GUARD_TEST", mark).size();
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// The program's six processes are left alone while the rank lives, and all
// gone soon after the rank is killed: the sleeps the program started too,
// which its own death (reparented to init) would have left running.
TEST(TrialGuard, EndsTheWatchedTreeOnceItsRankIsKilled) {
  const std::string mark = "watched-" + std::to_string(::getpid());
  FakeRank rank;
  start_fake_rank(rank, mark);
  ASSERT_GT(rank.program, 0);
  ASSERT_TRUE(wait_until([&] { return marked(mark) == 6; }, std::chrono::seconds(10))) << marked(mark);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(marked(mark), 6U) << "the guard touches nothing while its rank lives";
  ::kill(rank.pid, SIGKILL);
  ::waitpid(rank.pid, nullptr, 0);
  rank.pid = -1;
  EXPECT_TRUE(wait_until([&] { return marked(mark) == 0; }, std::chrono::seconds(5)))
      << marked(mark) << " processes of the trial outlived its rank";
  for (const pid_t pid : memsweep::testing::processes_with_environment("MEMSWEEP_GUARD_TEST", mark))
    ::kill(pid, SIGKILL);
}

// A released trial is the rank's own business: its death then ends nothing.
TEST(TrialGuard, LeavesAReleasedTrialAlone) {
  const std::string mark = "released-" + std::to_string(::getpid());
  FakeRank rank;
  start_fake_rank(rank, mark, {.release_before_death = true});
  ASSERT_GT(rank.program, 0);
  ASSERT_TRUE(wait_until([&] { return marked(mark) == 6; }, std::chrono::seconds(10))) << marked(mark);
  ::kill(rank.pid, SIGKILL);
  ::waitpid(rank.pid, nullptr, 0);
  rank.pid = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(marked(mark), 6U);
  ::kill(-rank.program, SIGKILL);
  EXPECT_TRUE(wait_until([&] { return marked(mark) == 0; }, std::chrono::seconds(5)));
}

std::string text_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Issue 43, item 4: a guard killed alone was never noticed, and the rank's
// death later left the program's children running. Now the rank starts
// another at once, tells it of the running trial, and says so in one line
// on stderr; the rank's death then ends the whole tree again.
TEST(TrialGuard, AGuardKilledAloneIsReplacedAndTheTreeStillEndsWithTheRank) {
  const std::string mark = "replaced-" + std::to_string(::getpid());
  const memsweep::testing::TempDir dir;
  const std::filesystem::path err = dir.path() / "rank.err";
  FakeRank rank;
  start_fake_rank(rank, mark, {.stderr_file = err});
  ASSERT_GT(rank.program, 0);
  ASSERT_GT(rank.guard, 0);
  ASSERT_TRUE(wait_until([&] { return marked(mark) == 6; }, std::chrono::seconds(10))) << marked(mark);
  ASSERT_EQ(::kill(rank.guard, SIGKILL), 0);
  ASSERT_TRUE(
      wait_until([&] { return text_of(err).find("started another") != std::string::npos; }, std::chrono::seconds(10)))
      << "nothing said of the guard's death: " << text_of(err);
  const std::string note = text_of(err);
  EXPECT_EQ(std::count(note.begin(), note.end(), '\n'), 1) << note;
  EXPECT_THAT(
      note, ::testing::HasSubstr("memsweep: rank 7 (pid " + std::to_string(rank.pid) + "): its trial guard (process " +
                                 std::to_string(rank.guard) + ") was killed by signal 9"));
  EXPECT_THAT(note, ::testing::HasSubstr("which guards the trial running now"));
  EXPECT_EQ(marked(mark), 6U) << "the new guard touches nothing while its rank lives";

  ::kill(rank.pid, SIGKILL);
  ::waitpid(rank.pid, nullptr, 0);
  rank.pid = -1;
  EXPECT_TRUE(wait_until([&] { return marked(mark) == 0; }, std::chrono::seconds(5)))
      << marked(mark) << " processes of the trial outlived its rank, its first guard killed before it";
  for (const pid_t pid : memsweep::testing::processes_with_environment("MEMSWEEP_GUARD_TEST", mark))
    ::kill(pid, SIGKILL);
}

// Where no other guard can start (its executable gone), one line says the
// rank's trials are unguarded from then on.
TEST(TrialGuard, AGuardThatCannotBeReplacedIsSaidToLeaveTheRankUnguarded) {
  const std::string mark = "unguarded-" + std::to_string(::getpid());
  const memsweep::testing::TempDir dir;
  const std::filesystem::path err = dir.path() / "rank.err";
  const std::filesystem::path executable = dir.path() / "memsweep";
  std::filesystem::create_symlink(MEMSWEEP_EXECUTABLE, executable);
  FakeRank rank;
  start_fake_rank(rank, mark, {.executable = executable.string(), .stderr_file = err});
  ASSERT_GT(rank.guard, 0);
  ASSERT_TRUE(wait_until([&] { return marked(mark) == 6; }, std::chrono::seconds(10))) << marked(mark);
  std::filesystem::remove(executable);
  ASSERT_EQ(::kill(rank.guard, SIGKILL), 0);
  ASSERT_TRUE(wait_until([&] { return text_of(err).find("unguarded") != std::string::npos; }, std::chrono::seconds(10)))
      << text_of(err);
  const std::string note = text_of(err);
  EXPECT_EQ(std::count(note.begin(), note.end(), '\n'), 1) << note;
  EXPECT_THAT(note, ::testing::HasSubstr("no other could start (" + executable.string() + ")"));
  EXPECT_THAT(note, ::testing::HasSubstr("this rank's trials are unguarded from now on"));
  ::kill(-rank.program, SIGKILL);
  EXPECT_TRUE(wait_until([&] { return marked(mark) == 0; }, std::chrono::seconds(5)));
}

TEST(RankLabel, NamesTheMpiRankFromTheLaunchersEnvironmentElseTheProcess) {
  const auto with = [](std::map<std::string, std::string> values) {
    return [values](const char* name) -> const char* {
      const auto found = values.find(name);
      return found == values.end() ? nullptr : found->second.c_str();
    };
  };
  EXPECT_EQ(rank_label(with({{"OMPI_COMM_WORLD_RANK", "2"}, {"SLURM_PROCID", "9"}}), 41), "rank 2 (pid 41)");
  EXPECT_EQ(rank_label(with({{"PMI_RANK", "3"}}), 41), "rank 3 (pid 41)");
  EXPECT_EQ(rank_label(with({{"SLURM_PROCID", "0"}}), 41), "rank 0 (pid 41)");
  EXPECT_EQ(rank_label(with({{"PMIX_RANK", "x1"}}), 41), "memsweep (pid 41)") << "not a number";
  EXPECT_EQ(rank_label(with({}), 41), "memsweep (pid 41)");
}

TEST(GuardEndText, SaysTheSignalOrTheExitStatus) {
  EXPECT_EQ(guard_end_text(SIGKILL), "was killed by signal 9 (Killed)");  // a wait status: signalled
  EXPECT_EQ(guard_end_text(3 << 8), "exited with status 3");
  EXPECT_EQ(guard_end_text(-1), "ended (its status could not be read)");
}

// The window a CI run once hit: the rank killed after making a trial's
// cgroup and moving the trial into it, before telling the guard. The guard,
// told only where the rank makes its groups, kills what the group holds
// and removes it; a group named as a live process's is not touched.
TEST(TrialGuard, RemovesTheGroupsOfItsDeadRankItWasNotToldOf) {
  const std::optional<std::filesystem::path> parent = memsweep::testing::own_memory_group();
  if (!parent || ::access(parent->c_str(), W_OK) != 0)
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("no writable memory cgroup here (needs root, as CI runs)");
  const std::string mark = "untold-" + std::to_string(::getpid());
  const std::filesystem::path live_group = *parent / ("memsweep-" + std::to_string(::getpid()) + "-trial-424242");
  ASSERT_EQ(::mkdir(live_group.c_str(), 0755), 0) << live_group;

  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  FakeRank rank;
  rank.pid = ::fork();
  if (rank.pid == 0) {
    ::close(report[0]);
    std::optional<TrialGuard> guard = TrialGuard::start(MEMSWEEP_EXECUTABLE);
    if (!guard) ::_exit(3);
    guard->watch_groups_under(*parent);
    const std::filesystem::path group = *parent / ("memsweep-" + std::to_string(::getpid()) + "-trial-1");
    if (::mkdir(group.c_str(), 0755) != 0) ::_exit(4);
    const pid_t trial = ::fork();
    if (trial == 0) {
      ::setenv("MEMSWEEP_GUARD_TEST", mark.c_str(), 1);
      ::execl("/bin/sleep", "sleep", "60", nullptr);
      ::_exit(127);
    }
    const std::string pid_text = std::to_string(trial);
    const int procs = ::open((group / "cgroup.procs").c_str(), O_WRONLY);
    if (procs < 0 || ::write(procs, pid_text.data(), pid_text.size()) != static_cast<ssize_t>(pid_text.size()))
      ::_exit(5);
    [[maybe_unused]] const ssize_t wrote = ::write(report[1], &trial, sizeof trial);
    for (;;) ::pause();  // until the test kills it
  }
  ::close(report[1]);
  pid_t trial = -1;
  const bool started = ::read(report[0], &trial, sizeof trial) == sizeof trial;
  ::close(report[0]);
  const std::filesystem::path group = *parent / ("memsweep-" + std::to_string(rank.pid) + "-trial-1");
  if (started) {
    EXPECT_TRUE(std::filesystem::exists(group));
    EXPECT_TRUE(wait_until([&] { return marked(mark) == 1; }, std::chrono::seconds(10)));
  }
  ::kill(rank.pid, SIGKILL);
  int status = 0;
  ::waitpid(rank.pid, &status, 0);
  rank.pid = -1;
  ASSERT_TRUE(started) << "the fake rank exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_TRUE(wait_until([&] { return !std::filesystem::exists(group) && marked(mark) == 0; }, std::chrono::seconds(5)))
      << group << (std::filesystem::exists(group) ? " is left" : " is gone") << ", " << marked(mark)
      << " trial processes left";
  EXPECT_TRUE(std::filesystem::exists(live_group)) << "a live process's group was removed";
  ::rmdir(live_group.c_str());
  for (const pid_t pid : memsweep::testing::processes_with_environment("MEMSWEEP_GUARD_TEST", mark))
    ::kill(pid, SIGKILL);
  wait_until([&] { return ::rmdir(group.c_str()) == 0 || errno == ENOENT; }, std::chrono::seconds(2));
}

}  // namespace
}  // namespace memsweep::runner::detail
