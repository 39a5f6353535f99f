// Ranks that die under mpirun (issue 28, items 1 and 2).
//
// What a rank leaves behind when it dies with SIGKILL: a program trial's
// descendants and the trial cgroups. A program that starts 20 background
// `sleep`s runs under mpirun; a worker rank, rank 0 or mpirun itself is
// killed with SIGKILL once the sleeps run; then /proc must hold none of them
// (each carries the test's mark in its environment), and the rank's trial
// cgroups must be gone. A later run removes the empty trial groups of ranks
// that died before (their guard killed too).
// (A worker stopped with SIGSTOP: test_faults.cpp, StoppedWorker.)

#include "support/background_process.hpp"
#include "support/cgroups.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

constexpr int kChildren = 20;

// The issue's program: 20 sleeps in the background, then one in front.
constexpr const char* kProgram = R"(#!/bin/sh
i=0
while [ $i -lt 20 ]; do sleep 4250 & i=$((i + 1)); done
sleep 30
)";

std::string sweep_text(const fs::path& program) {
  return fmt::format(R"(
[sweep]
name = "orphans"
[defaults]
dataset = "synthetic"
program = ["/bin/sh", "{}"]
[grid]
batch_size = [16, 32]
)",
                     program.string());
}

// Waits up to `limit` for the marked processes to be gone; those left.
std::vector<pid_t> survivors(const std::string& mark, seconds limit) {
  const auto give_up = std::chrono::steady_clock::now() + limit;
  std::vector<pid_t> left = processes_with_environment("MEMSWEEP_ORPHAN_TEST", mark);
  while (!left.empty() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = processes_with_environment("MEMSWEEP_ORPHAN_TEST", mark);
  }
  return left;
}

std::string describe(const std::vector<pid_t>& pids) {
  std::string text;
  for (const pid_t pid : pids) {
    std::ifstream cmdline(fmt::format("/proc/{}/cmdline", pid));
    std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    for (char& c : command)
      if (c == '\0') c = ' ';
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string stat_line;
    std::getline(stat, stat_line);
    text += fmt::format("\n  {} ({}) {}", pid, command, stat_line.substr(stat_line.rfind(')') + 1, 12));
  }
  return text;
}

enum class Victim { worker, rank_zero, mpirun };

std::string victim_name(Victim victim) {
  switch (victim) {
    case Victim::worker: return "worker_rank";
    case Victim::rank_zero: return "rank_zero";
    case Victim::mpirun: return "mpirun";
  }
  return "?";
}

class KilledDuringAProgramTrial : public ::testing::TestWithParam<Victim> {};

TEST_P(KilledDuringAProgramTrial, LeavesNoProcessAndNoCgroupBehind) {
  const TempDir dir;
  const fs::path program = dir.write("t.sh", kProgram);
  const std::string sweep = dir.write("o.toml", sweep_text(program)).string();
  const std::string out = (dir.path() / "o.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_ORPHAN_TEST"] = out;
  BackgroundProcess run(on_ranks(MEMSWEEP_MPIEXEC, 2, memsweep_argv({"run", sweep, "-o", out, "-q"})), dir.path(),
                        environment);

  // The program's sleeps run: 20 of them, and the one in front.
  const auto sleeps = [&] {
    std::size_t count = 0;
    for (const pid_t pid : processes_with_environment("MEMSWEEP_ORPHAN_TEST", out)) {
      std::ifstream comm(fmt::format("/proc/{}/comm", pid));
      std::string name;
      std::getline(comm, name);
      count += name == "sleep" ? 1 : 0;
    }
    return count;
  };
  ASSERT_TRUE(run.wait_for([&] { return sleeps() > kChildren; }, seconds(60))) << run.err();
  std::vector<pid_t> ranks;
  for (const char* rank : {"0", "1"})
    for (const pid_t pid : child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", rank))
      ranks.push_back(pid);
  ASSERT_EQ(ranks.size(), 2U);
  const std::optional<fs::path> group = own_memory_group();
  const bool grouped = group && !trial_groups_of(*group, ranks).empty();

  const pid_t victim = GetParam() == Victim::worker ? ranks[1] : GetParam() == Victim::rank_zero ? ranks[0] : run.pid();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  // mpirun ends the job (or is the one killed); its ranks go with it.
  if (GetParam() != Victim::mpirun) {
    EXPECT_NE(run.wait(), 0);
  }
  for (const pid_t rank : ranks) {
    const auto give_up = std::chrono::steady_clock::now() + seconds(30);
    while (::kill(rank, 0) == 0 && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (GetParam() == Victim::mpirun) run.wait();

  const std::vector<pid_t> left = survivors(out, seconds(10));
  std::cout << fmt::format("kill -9 of the {}: {} marked processes left {:.1f} s after the kill{}\n",
                           victim_name(GetParam()), left.size(),
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(),
                           grouped ? ", trial cgroups checked" : ", no trial cgroups on this machine");
  EXPECT_TRUE(left.empty()) << "processes outlived their rank:" << describe(left);
  for (const pid_t pid : left) ::kill(pid, SIGKILL);
  if (grouped) {
    EXPECT_TRUE(trial_groups_of(*group, ranks).empty()) << "the dead rank's trial cgroups are left";
  } else if (running_in_ci()) {
    ADD_FAILURE() << "CI runs as root with a memory cgroup: the trial cgroups were not made";
  }
}

INSTANTIATE_TEST_SUITE_P(Victims, KilledDuringAProgramTrial,
                         ::testing::Values(Victim::worker, Victim::rank_zero, Victim::mpirun),
                         [](const auto& param_info) { return victim_name(param_info.param); });

// Issue 43, item 4: the worker's guard killed alone with SIGKILL during a
// program trial whose program started 300 background sleeps, then the
// worker itself. Before, nothing was said and all 300 outlived the rank (2
// of 2 runs); now the rank starts another guard at once, says so in one
// line naming itself, and its death leaves none of them.
constexpr int kManyChildren = 300;
constexpr const char* kManyProgram = R"(#!/bin/sh
i=0
while [ $i -lt 300 ]; do sleep 4250 & i=$((i + 1)); done
sleep 60
)";

// `memsweep guard` processes whose parent is `rank`.
std::vector<pid_t> guards_of(pid_t rank) {
  std::vector<pid_t> guards;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    if (parent_of(pid) != rank) continue;
    std::ifstream cmdline(entry.path() / "cmdline");
    const std::string command((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (command == std::string("memsweep\0guard\0", 15)) guards.push_back(pid);
  }
  return guards;
}

TEST(GuardKilledFirst, ThenTheWorkerDuringAProgramTrial_LeavesNoProcessBehind) {
  const TempDir dir;
  const fs::path program = dir.write("t.sh", kManyProgram);
  const std::string sweep = dir.write("o.toml", sweep_text(program)).string();
  const std::string out = (dir.path() / "o.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_ORPHAN_TEST"] = out;
  BackgroundProcess run(on_ranks(MEMSWEEP_MPIEXEC, 2, memsweep_argv({"run", sweep, "-o", out, "-q"})), dir.path(),
                        environment);
  const auto sleeps = [&] {
    std::size_t count = 0;
    for (const pid_t pid : processes_with_environment("MEMSWEEP_ORPHAN_TEST", out)) {
      std::ifstream comm(fmt::format("/proc/{}/comm", pid));
      std::string name;
      std::getline(comm, name);
      count += name == "sleep" ? 1 : 0;
    }
    return count;
  };
  ASSERT_TRUE(run.wait_for([&] { return sleeps() > kManyChildren; }, seconds(120))) << run.err();
  const std::vector<pid_t> workers = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "1");
  ASSERT_EQ(workers.size(), 1U);
  const pid_t worker = workers[0];
  const std::vector<pid_t> guards = guards_of(worker);
  ASSERT_EQ(guards.size(), 1U) << "the worker's guard";
  ASSERT_EQ(::kill(guards[0], SIGKILL), 0);

  // The note, one line, naming the rank; a new guard, told of the trial.
  const std::string note_start = fmt::format(
      "memsweep: rank 1 (pid {}): its trial guard (process {}) was killed by "
      "signal 9",
      worker, guards[0]);
  ASSERT_TRUE(run.wait_for([&] { return run.err().find(note_start) != std::string::npos; }, seconds(20)))
      << "nothing said of the guard's death:\n"
      << run.err();
  const std::string err = run.err();
  const std::string note =
      err.substr(err.find(note_start), err.find('\n', err.find(note_start)) - err.find(note_start));
  std::cout << note << "\n";
  EXPECT_THAT(note, ::testing::HasSubstr("which guards the trial running now"));
  ASSERT_TRUE(run.wait_for(
      [&] {
        const std::vector<pid_t> now = guards_of(worker);
        return now.size() == 1 && now[0] != guards[0];
      },
      seconds(10)))
      << "no new guard under the worker";
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the new guard reads its lines and the tree

  ASSERT_EQ(::kill(worker, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  EXPECT_NE(run.wait(), 0);
  const std::vector<pid_t> left = survivors(out, seconds(10));
  std::cout << fmt::format("guard killed, then the worker: {} of the program's {} sleeps left {:.1f} s after\n",
                           left.size(), kManyChildren,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count());
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived their rank:" << describe(left);
  for (const pid_t pid : left) ::kill(pid, SIGKILL);
}

// The empty trial groups of a rank that is gone (its pid free, or taken by
// a process that started after the group) are removed by the next run that
// makes groups there; a live process's groups and anything not named as
// memsweep names its groups are kept.
TEST(StaleTrialCgroups, AreRemovedByTheNextRunWhenTheirRankIsGone) {
  const std::optional<fs::path> group = own_memory_group();
  if (!group || ::access(group->c_str(), W_OK) != 0)
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("no writable memory cgroup here (needs root, as CI runs)");
  // A pid that is surely gone: a child's, reaped.
  const pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  std::vector<fs::path> stale = {*group / fmt::format("memsweep-{}-trial-7", gone),
                                 *group / fmt::format("memsweep-{}-trial-8-2", gone),
                                 *group / fmt::format("memsweep-probe-{}", gone)};
  const std::vector<fs::path> kept = {*group / fmt::format("memsweep-{}-trial-1", ::getpid()),
                                      *group / fmt::format("memsweep-{}-scratch", gone)};
  // A pid reused: a live process that started after the group was made (an
  // hour before, as a node that lost its processes and started anew sees it).
  const TempDir newer_dir;
  BackgroundProcess newer({"/bin/sleep", "60"}, newer_dir.path());
  const fs::path reused = *group / fmt::format("memsweep-{}-trial-9", newer.pid());
  stale.push_back(reused);
  for (const fs::path& path : stale) ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path;
  for (const fs::path& path : kept) ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path;
  fs::last_write_time(reused, fs::file_time_type::clock::now() - std::chrono::hours(1));

  const TempDir dir;
  const std::string sweep = dir.write("one.toml", R"(
[sweep]
name = "one"
[[trial]]
dataset = "synthetic"
program = ["/bin/true"]
)")
                                .string();
  const CommandResult result = run_command(memsweep_argv({"run", sweep, "-o", (dir.path() / "one.h5").string()}));
  for (const fs::path& path : kept) {
    EXPECT_TRUE(fs::exists(path)) << path << " is not a stale trial group of memsweep's";
    ::rmdir(path.c_str());
  }
  EXPECT_EQ(result.exit_status, 0) << result.err;
  for (const fs::path& path : stale) EXPECT_FALSE(fs::exists(path)) << path << " was left";
}

}  // namespace
}  // namespace memsweep::testing
