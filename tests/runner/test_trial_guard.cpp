// The trial guard (runner/trial_guard.hpp): what the rank tells it, and a
// real guard process ending a tree whose rank is gone. The whole story,
// under mpirun with real kills, is tests/run/test_rank_death.cpp.

#include "runner/trial_guard.hpp"

#include "support/background_process.hpp"
#include "support/cgroups.hpp"
#include "support/skip_or_fail.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

namespace memsweep::runner_detail {
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
  FakeRank() = default;
  FakeRank(const FakeRank&) = delete;
  FakeRank& operator=(const FakeRank&) = delete;
  // Whatever a failed test left: the rank, the program's group.
  ~FakeRank() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
    if (program > 0) ::kill(-program, SIGKILL);
  }
};

void start_fake_rank(FakeRank& started, const std::string& mark, bool release_before_death) {
  int report[2];
  if (::pipe(report) != 0) throw std::runtime_error("pipe");
  const pid_t rank = ::fork();
  if (rank == 0) {
    ::close(report[0]);
    std::optional<TrialGuard> guard = TrialGuard::start(MEMSWEEP_EXECUTABLE);
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
    if (release_before_death) guard->release();
    [[maybe_unused]] const ssize_t wrote = ::write(report[1], &program, sizeof program);
    for (;;) ::pause();  // until the test kills it
  }
  ::close(report[1]);
  started.pid = rank;
  if (::read(report[0], &started.program, sizeof started.program) != sizeof started.program) started.program = -1;
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
  start_fake_rank(rank, mark, false);
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
  start_fake_rank(rank, mark, true);
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
}  // namespace memsweep::runner_detail
