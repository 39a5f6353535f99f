// The trial guard (runner/trial_guard.hpp): what the rank tells it, and a
// real guard process ending a tree whose rank is gone. The whole story,
// under mpirun with real kills, is tests/run/test_rank_death.cpp.

#include "runner/trial_guard.hpp"

#include "support/background_process.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
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

}  // namespace
}  // namespace memsweep::runner_detail
