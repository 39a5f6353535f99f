// Faults injected into real sweeps under mpirun: kill -9 of a worker rank or
// of rank 0 at a seeded random moment, SIGTERM and SIGUSR1 likewise, and the
// disk filling up under the results file. What must hold each time: the file
// opens afterwards, every trial that had its final row before the fault
// still has it unchanged (no completed trial is lost), and --resume completes
// the sweep with exactly one final row per trial. docs/reliability.md has
// the figures.

#include "faults/small_disk.hpp"
#include "memsweep/results.hpp"
#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/cgroups.hpp"
#include "support/exit_statuses.hpp"
#include "support/file_text.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Twelve trials of a second or so each on two workers (about 8 s in all):
// a fault at a random moment of the first seconds lands while trials run,
// between trials, or while rank 0 writes a row.
constexpr const char* kSweep = R"(
[sweep]
name = "faults"
[sampler]
interval_ms = 5
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 28000, test_size = 200 }
learning_rate = 0.02
batch_size = 16
epochs = 5
[grid]
hidden = [[32], [48], [64], [80], [96], [112], [128], [144], [160], [176], [192], [208]]
)";
constexpr std::size_t kTrials = 12;

// memsweep with `args` on `ranks` ranks.
std::vector<std::string> memsweep_on_ranks_argv(int ranks, const std::vector<std::string>& args) {
  return on_ranks(MEMSWEEP_MPIEXEC, ranks, memsweep_argv(args));
}

// memsweep's own list (a trial that ran past its time limit on a loaded
// machine is `timeout`, final too).
bool is_final(const std::string& text) {
  const std::optional<TrialStatus> status = parse_status(text);
  return status && memsweep::is_final(*status);
}

// Final rows by trial id, each as all its columns.
std::map<std::string, std::vector<std::string>> final_rows(const TsvTable& trials) {
  std::map<std::string, std::vector<std::string>> rows;
  for (std::size_t row = 0; row < trials.rows.size(); ++row)
    if (is_final(trials.at(row, "status"))) rows[trials.at(row, "trial_id")] = trials.rows[row];
  return rows;
}

// How many of `before`'s final rows are not in `after` exactly as they were.
std::size_t lost_rows(const std::map<std::string, std::vector<std::string>>& before,
                      const std::map<std::string, std::vector<std::string>>& after) {
  std::size_t lost = 0;
  for (const auto& [id, row] : before) {
    const auto found = after.find(id);
    if (found == after.end() || found->second != row) ++lost;
  }
  return lost;
}

// Sample rows by (trial id, attempt): what each row's `samples` must count.
std::map<std::pair<std::string, std::string>, std::size_t> sample_rows_by_attempt(const std::string& out) {
  const TsvTable samples = h5py_table(out, "samples", true);
  std::map<std::pair<std::string, std::string>, std::size_t> rows_of_attempt;
  for (std::size_t row = 0; row < samples.rows.size(); ++row)
    ++rows_of_attempt[{samples.at(row, "trial_id"), samples.at(row, "attempt")}];
  return rows_of_attempt;
}

// Resumes (killed trials run again) and checks that every trial of the sweep
// then has exactly one final row.
void resume_completes(const std::string& sweep, const std::string& out, const std::filesystem::path& dir) {
  const CommandResult resumed =
      run_command(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--resume", "--retry-killed", "3", "-q"}),
                  dir.string(), kEnvironment);
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  const TsvTable trials = h5py_table(out, "trials");
  std::map<std::string, int> finals;
  std::set<std::string> ids;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    ids.insert(trials.at(row, "trial_id"));
    if (is_final(trials.at(row, "status"))) ++finals[trials.at(row, "trial_id")];
  }
  EXPECT_EQ(ids.size(), kTrials);
  EXPECT_EQ(finals.size(), kTrials) << "every trial has a final row after the resume";
  for (const auto& [id, count] : finals) EXPECT_EQ(count, 1) << id;
}

// A fault at a moment drawn from the seed, while the sweep writes its file.
struct Fault {
  unsigned seed;
  // SIGKILL to one rank (the OOM killer, a node dying); SIGTERM to every rank
  // at once (as scancel does); SIGUSR1 to mpirun, which forwards it (as
  // Slurm's --signal=B: warning reaches the job script, which passes it on).
  int signal_number;
  int rank;  // for SIGKILL: 0 (the writer) or a worker
};

std::string fault_name(const Fault& fault) {
  if (fault.signal_number == SIGKILL) return fmt::format("kill9_rank{}_seed{}", fault.rank, fault.seed);
  return fmt::format("{}_seed{}", fault.signal_number == SIGTERM ? "sigterm" : "sigusr1", fault.seed);
}

class FaultDuringSweep : public ::testing::TestWithParam<Fault> {};

TEST_P(FaultDuringSweep, NoFinishedTrialIsLostAndResumeCompletes) {
  const Fault& fault = GetParam();
  const TempDir dir;
  const std::string sweep = dir.write("faults.toml", kSweep).string();
  const std::string out = (dir.path() / "faults.h5").string();
  std::mt19937 random(fault.seed);
  const double delay = std::uniform_real_distribution<double>(0.2, 7.0)(random);

  // A mark in the environment of every process of this run, trial processes
  // included, to find any that survive it.
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out;
  // A longer grace, as jobs/sweep.sbatch gives: mpirun's default of 1 s
  // between its SIGTERM and its SIGKILL was at times too short for rank 0
  // to mark its run on this 2-core machine under a parallel ctest.
  environment["OMPI_MCA_odls_base_sigkill_timeout"] = "3";
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--flush-interval", "0.2"}), dir.path(),
                        environment);
  ASSERT_TRUE(run.wait_for([&] { return std::filesystem::exists(out); }, std::chrono::seconds(60))) << run.err();
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));

  // What the file held just before the fault (rows may still arrive between
  // this read and the fault: they must survive too, but are not counted).
  const auto before = final_rows(h5py_table(out, "trials", true));
  bool delivered = false;
  if (fault.signal_number == SIGKILL) {
    const auto ranks = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", std::to_string(fault.rank));
    if (!ranks.empty()) delivered = ::kill(ranks.front(), SIGKILL) == 0;
  } else if (fault.signal_number == SIGTERM) {
    for (int rank = 0; rank < 3; ++rank)
      for (const pid_t pid : child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", std::to_string(rank)))
        delivered = ::kill(pid, SIGTERM) == 0 || delivered;
  } else {
    delivered = ::kill(run.pid(), fault.signal_number) == 0;
  }
  const int status = run.wait();
  if (fault.signal_number == SIGKILL && delivered) {
    EXPECT_NE(status, kOk) << run.err();
  } else if (delivered) {
    EXPECT_THAT(status, ::testing::AnyOf(kStopped, kOk)) << run.err();
  }

  // The file opens as the fault left it, and nothing finished is lost.
  const TsvTable after = h5py_table(out, "trials", true);
  const std::size_t lost = lost_rows(before, final_rows(after));
  EXPECT_EQ(lost, 0U);
  std::size_t interrupted = 0;
  for (std::size_t row = 0; row < after.rows.size(); ++row) {
    const std::string status_text = after.at(row, "status");
    if (fault.signal_number != SIGKILL) {
      EXPECT_TRUE(is_final(status_text) || status_text == "interrupted") << "a clean stop marks trials interrupted";
    }
    interrupted += status_text == "interrupted" ? 1 : 0;
  }
  std::cout << fmt::format(
                   "fault {}: {} after {:.2f} s: exit status {}; {} final rows before it, {} after, {} interrupted, "
                   "{} lost\n",
                   fault_name(fault), delivered ? "delivered" : "not delivered (the sweep had ended)", delay, status,
                   before.size(), final_rows(after).size(), interrupted, lost)
            << std::flush;

  // No trial cgroup of a rank the fault ended is left (the ranks' guards
  // removed them), before the resume could remove any. A guard works on
  // after mpirun returns; it gives up after 5 s (trial_guard.cpp).
  if (const auto group = own_memory_group()) {
    const auto looked = std::chrono::steady_clock::now();
    const bool at_once = trial_groups_of_dead_ranks(*group).empty();
    const auto left = trial_groups_of_dead_ranks_left_after(*group, std::chrono::seconds(8));
    const double waited = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - looked).count();
    std::cout << fmt::format("fault {}: dead ranks' trial groups {}\n", fault_name(fault),
                             at_once ? "gone when mpirun returned" : fmt::format("looked at for {:.0f} ms", waited));
    EXPECT_TRUE(left.empty()) << left.size() << " trial cgroups of dead ranks left, e.g. " << left.front();
  }

  resume_completes(sweep, out, dir.path());

  // Attempts the fault cut short are recorded by the resume as
  // `interrupted` and ran again, whichever rank died: a lost rank is no
  // result of the trial's. And no trial process outlived the fault.
  const TsvTable resumed = h5py_table(out, "trials");
  for (std::size_t row = 0; row < resumed.rows.size(); ++row) {
    if (resumed.at(row, "end_cause") != "rank_lost") continue;
    const std::string status_text = resumed.at(row, "status");
    std::cout << fmt::format("fault {}: lost attempt on rank {}: {}: {}\n", fault_name(fault), resumed.at(row, "rank"),
                             status_text, resumed.at(row, "message"));
    EXPECT_EQ(status_text, "interrupted") << "its rank (or rank 0) died, not this trial's process";
    if (fault.signal_number == SIGKILL && fault.rank != 0) {
      EXPECT_EQ(resumed.at(row, "rank"), std::to_string(fault.rank));
    }
  }
  EXPECT_TRUE(processes_with_environment("MEMSWEEP_FAULT_TEST", out).empty()) << "a trial process survived";
}

INSTANTIATE_TEST_SUITE_P(Seeds, FaultDuringSweep,
                         ::testing::Values(Fault{11, SIGKILL, 1}, Fault{12, SIGKILL, 2}, Fault{13, SIGKILL, 1},
                                           Fault{21, SIGKILL, 0}, Fault{22, SIGKILL, 0}, Fault{23, SIGKILL, 0},
                                           Fault{31, SIGTERM, 0}, Fault{41, SIGUSR1, 0}),
                         [](const auto& param_info) { return fault_name(param_info.param); });

// ---- rank 0 killed right after trials finished ------------------------------

// Each final row's `samples` against the rows /samples holds for its
// attempt. Rank 0 used to keep sample rows in memory until they filled a
// chunk: killed seconds after a trial's row was written, it took that
// trial's series with it (44 ok rows of 66 runs had short or empty ones).
TEST(KillRankZero, EveryFinishedTrialKeepsItsWholeSeries) {
  const TempDir dir;
  const std::string sweep = dir.write("faults.toml", kSweep).string();
  const std::string out = (dir.path() / "faults.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out;
  // The default --flush-interval: workers send samples every 2 s, so rows
  // wait on rank 0 as in a real sweep.
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "-q"}), dir.path(), environment);
  constexpr std::size_t kFinishedBeforeTheKill = 3;
  ASSERT_TRUE(run.wait_for(
      [&] {
        return std::filesystem::exists(out) &&
               final_rows(h5py_table(out, "trials", true)).size() >= kFinishedBeforeTheKill;
      },
      std::chrono::seconds(90)))
      << run.err();
  const auto rank0 = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "0");
  ASSERT_FALSE(rank0.empty());
  ASSERT_EQ(::kill(rank0.front(), SIGKILL), 0);
  EXPECT_NE(run.wait(), kOk);

  const TsvTable trials = h5py_table(out, "trials", true);
  auto rows_of_attempt = sample_rows_by_attempt(out);
  std::size_t finished = 0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (!is_final(trials.at(row, "status"))) continue;
    ++finished;
    const std::string id = trials.at(row, "trial_id");
    EXPECT_GT(std::stoul(trials.at(row, "samples")), 0U) << id;
    const std::size_t in_file = rows_of_attempt[std::make_pair(id, trials.at(row, "attempt"))];
    EXPECT_EQ(in_file, std::stoul(trials.at(row, "samples")))
        << "trial " << id << " (" << trials.at(row, "status") << "): its row counts samples the file does not hold";
  }
  EXPECT_GE(finished, kFinishedBeforeTheKill);
  std::size_t sample_rows = 0;
  for (const auto& [attempt, count] : rows_of_attempt) sample_rows += count;
  std::cout << fmt::format("rank 0 killed after {} final rows; {} sample rows in the file\n", finished, sample_rows);
  EXPECT_TRUE(processes_with_environment("MEMSWEEP_FAULT_TEST", out).empty()) << "a trial process survived";
}

// ---- rank 0 killed in a sweep of 10^6 trials -------------------------------------

// Issue 29: no rank holds a large sweep's list; rank 0 hands out positions
// and a resume walks the sweep once. Killed with kill -9 a few trials into
// 10^6, then resumed and stopped a few trials later: no trial has two final
// rows, and the trials that finished before the kill keep their rows.
TEST(KillRankZero, AMillionTrialSweepResumesWithEachTrialOnce) {
  const TempDir dir;
  std::string text =
      "[sweep]\nname = \"million\"\n[defaults]\ndataset = \"synthetic\"\n"
      "synthetic = { shape = [1, 4, 4], classes = 2, train_size = 16, test_size = 8 }\nbatch_size = 8\n"
      "hidden = [4]\n[grid]\nepochs = [";
  for (int k = 1; k <= 100; ++k) text += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  text += "]\nlearning_rate = [";
  for (int k = 1; k <= 100; ++k) text += fmt::format("{}{}", k == 1 ? "" : ", ", k / 1000.0);
  text += "]\nseed = [";
  for (int k = 1; k <= 100; ++k) text += fmt::format("{}{}", k == 1 ? "" : ", ", k);
  text += "]\n";
  const std::string sweep = dir.write("million.toml", text).string();
  const std::string out = (dir.path() / "million.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out;
  const auto finals_at_least = [&](std::size_t count) {
    return std::filesystem::exists(out) && final_rows(h5py_table(out, "trials", true)).size() >= count;
  };

  BackgroundProcess first(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "-q", "--flush-interval", "0.2"}),
                          dir.path(), environment);
  ASSERT_TRUE(first.wait_for([&] { return finals_at_least(4); }, std::chrono::seconds(90))) << first.err();
  const auto rank0 = child_processes_with_environment(first.pid(), "OMPI_COMM_WORLD_RANK", "0");
  ASSERT_FALSE(rank0.empty());
  ASSERT_EQ(::kill(rank0.front(), SIGKILL), 0);
  EXPECT_NE(first.wait(), kOk);
  // Opened as a SWMR reader: the writer died with the file open.
  const auto before = final_rows(h5py_table(out, "trials", true));

  BackgroundProcess resumed(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--resume", "--flush-interval", "0.2"}),
                            dir.path(), environment);
  ASSERT_TRUE(resumed.wait_for([&] { return finals_at_least(before.size() + 4); }, std::chrono::seconds(120)))
      << resumed.err();
  // SIGTERM to every rank, as a job's end would: a graceful stop.
  for (int rank = 0; rank < 3; ++rank)
    for (const pid_t pid :
         child_processes_with_environment(resumed.pid(), "OMPI_COMM_WORLD_RANK", std::to_string(rank)))
      ::kill(pid, SIGTERM);
  EXPECT_THAT(resumed.wait(), ::testing::AnyOf(kStopped, kOk)) << resumed.err();
  EXPECT_THAT(resumed.err(), HasSubstr(fmt::format("{} of 1000000 trials done", before.size())));

  EXPECT_EQ(h5py_attributes(out).at("planned_trials"), "1000000");
  const TsvTable trials = h5py_table(out, "trials");
  std::map<std::string, std::size_t> finals;
  std::set<int> positions;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    if (!is_final(trials.at(row, "status"))) continue;
    ++finals[trials.at(row, "trial_id")];
    positions.insert(std::stoi(trials.at(row, "plan_index")));
  }
  for (const auto& [id, count] : finals) EXPECT_EQ(count, 1U) << "trial " << id << " has " << count << " final rows";
  EXPECT_EQ(lost_rows(before, final_rows(trials)), 0U);
  EXPECT_GE(finals.size(), before.size() + 4);
  // Handed out in the sweep's order: the finished trials are its first ones
  // (bar those running when each run ended).
  EXPECT_LT(*positions.rbegin(), static_cast<int>(finals.size()) + 8);
  std::cout << fmt::format("10^6-trial sweep: {} final rows before the kill, {} after the resume\n", before.size(),
                           finals.size());
}

// ---- a worker stopped with SIGSTOP ---------------------------------------------

// The issue's case: a stopped worker hung the sweep for ever, its time limit
// unenforced (its rank enforces it, and was stopped too). Now rank 0 gives it
// up, its trial runs again on the other worker, the sweep completes and the
// job ends with status 4; a resume then finds nothing to run.
TEST(StoppedWorker, IsGivenUpAndTheSweepCompletesWithStatusFour) {
  const TempDir dir;
  const std::string sweep = dir.write("faults.toml", kSweep).string();
  const std::string out = (dir.path() / "faults.h5").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out;
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--trial-timeout", "3s", "--worker-silence",
                                                   "3s", "--flush-interval", "0.2"}),
                        dir.path(), environment);
  ASSERT_TRUE(run.wait_for([&] { return std::filesystem::exists(out); }, std::chrono::seconds(60))) << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const auto rank2 = child_processes_with_environment(run.pid(), "OMPI_COMM_WORLD_RANK", "2");
  ASSERT_EQ(rank2.size(), 1U);
  ASSERT_EQ(::kill(rank2.front(), SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  // Bounded: under ctest -j beside the cluster tests this job once never
  // ended (a ctest timeout at 600 s, and in CI no timeout at all); the
  // processes still there then say where it stood.
  if (!run.wait_until_ended(std::chrono::seconds(180))) {
    ADD_FAILURE() << "the job did not end within 180 s of rank 2's SIGSTOP; its processes:\n"
                  << run_command({"ps", "-eo", "pid,ppid,stat,etimes,wchan:24,args", "--forest"}).out
                  << "\nits stderr:\n"
                  << run.err();
    run.signal(SIGKILL);
    for (const pid_t pid : processes_with_environment("MEMSWEEP_FAULT_TEST", out)) ::kill(pid, SIGKILL);
  }
  const int status = run.wait();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();

  EXPECT_EQ(status, kRankSilent) << run.err();
  EXPECT_LT(took, 60.0) << "time limit 3 s, grace 3 s, and the other worker's half of the sweep";
  EXPECT_THAT(run.err(), HasSubstr("rank 2 went silent"));
  EXPECT_THAT(run.err(), HasSubstr("exit status 4"));

  const TsvTable trials = h5py_table(out, "trials");
  auto rows_of_attempt = sample_rows_by_attempt(out);
  std::map<std::string, std::size_t> finals;
  std::size_t interrupted = 0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    const std::string status_text = trials.at(row, "status");
    const std::size_t in_file = rows_of_attempt[std::make_pair(id, trials.at(row, "attempt"))];
    EXPECT_EQ(in_file, std::stoul(trials.at(row, "samples")))
        << "trial " << id << " (" << status_text << "): its row counts samples the file does not hold";
    if (is_final(status_text)) {
      ++finals[id];
      continue;
    }
    ++interrupted;
    EXPECT_EQ(status_text, "interrupted");
    EXPECT_EQ(trials.at(row, "rank"), "2");
    EXPECT_EQ(trials.at(row, "end_cause"), "silent");
    EXPECT_THAT(trials.at(row, "message"), HasSubstr("went silent"));
  }
  std::cout << fmt::format("SIGSTOP of rank 2: the job ended {:.1f} s later with status {}; {} interrupted, {} final\n",
                           took, status, interrupted, finals.size());
  EXPECT_LE(interrupted, 1U) << "rank 2 was stopped during one trial at most (or between two)";
  EXPECT_EQ(finals.size(), kTrials) << "every trial ends, the stopped rank's on the other worker";
  for (const auto& [id, count] : finals) EXPECT_EQ(count, 1U) << id;
  // mpirun returns once rank 0 has aborted; the stopped rank (SIGKILL works
  // on a stopped process) and its trial process end moments later.
  const auto still_there = [&] { return !processes_with_environment("MEMSWEEP_FAULT_TEST", out).empty(); };
  for (int wait = 0; wait < 100 && still_there(); ++wait) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(still_there()) << "a rank or a trial survived the job by 10 s";

  const CommandResult resumed =
      run_command(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--resume"}), dir.path().string(), kEnvironment);
  EXPECT_EQ(resumed.exit_status, kOk) << resumed.err;
  EXPECT_THAT(resumed.err, HasSubstr("0 to run"));
}

// ---- Ctrl-C under mpirun -----------------------------------------------------

// The issue's case: Ctrl-C (SIGINT to mpirun) stopped the sweep cleanly and
// memsweep said "exit status 3", but mpirun returned 1: Open MPI ends the job
// itself on SIGINT and reports its own status. README documents what each
// launcher returns; memsweep's own status is in $MEMSWEEP_STATUS_FILE, which
// jobs/sweep.sbatch reads before deciding to requeue.
TEST(CtrlC, UnderMpirunStopsCleanlyAndTheStatusFileSaysThree) {
  const TempDir dir;
  const std::string sweep = dir.write("faults.toml", kSweep).string();
  const std::string out = (dir.path() / "faults.h5").string();
  const std::string status_file = (dir.path() / "status").string();
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out;
  environment["MEMSWEEP_STATUS_FILE"] = status_file;
  BackgroundProcess run(memsweep_on_ranks_argv(3, {"run", sweep, "-o", out, "--flush-interval", "0.2"}), dir.path(),
                        environment);
  ASSERT_TRUE(run.wait_for([&] { return std::filesystem::exists(out); }, std::chrono::seconds(60))) << run.err();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ASSERT_EQ(::kill(run.pid(), SIGINT), 0);
  const int status = run.wait();
  std::cout << fmt::format("SIGINT to mpirun: mpirun exited with {}; memsweep's status file says {}", status,
                           slurp(status_file));
  EXPECT_THAT(status, ::testing::AnyOf(1, kStopped)) << "README: mpirun reports 1 when it ends the job itself";
  EXPECT_THAT(run.err(), HasSubstr("exit status 3"));
  const TsvTable trials = h5py_table(out, "trials");
  std::size_t finished = 0;
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    EXPECT_TRUE(is_final(trials.at(row, "status")) || trials.at(row, "status") == "interrupted");
    if (is_final(trials.at(row, "status"))) ++finished;
  }
  // Its status, then the trials a requeue would have to run (jobs/sweep.sbatch).
  EXPECT_EQ(slurp(status_file), fmt::format("{}\nleft {}\n", kStopped, kTrials - finished)) << run.err();
  resume_completes(sweep, out, dir.path());
  EXPECT_TRUE(processes_with_environment("MEMSWEEP_FAULT_TEST", out).empty()) << "a rank or a trial survived";
}

// ---- the disk filling up ---------------------------------------------------------

// Trials of 0.2 to 0.5 s sampled every millisecond. A new file takes about
// 100 KB; each trial's row comes with its samples (a partial chunk, whose
// earlier copies SWMR does not free), so the file passes the 160 KiB disk
// after about six trials of the 16 (five at 128 KiB, ten at 256 KiB).
constexpr const char* kFillSweep = R"(
[sweep]
name = "fill"
[sampler]
interval_ms = 1
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 2000, test_size = 100 }
epochs = 150
batch_size = 8
hidden = [32]
[grid]
learning_rate = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.11, 0.12, 0.13, 0.14, 0.15, 0.16]
)";

// The fill sweep, its results file on a 160 KiB disk of its own; skipped
// (failed in CI) when the tmpfs cannot be mounted.
class DiskFull : public ::testing::Test {
 protected:
  void SetUp() override {
    disk_.emplace(dir_.path() / "small", 160);
    if (!disk_->mounted())
      MEMSWEEP_SKIP_OR_FAIL_IN_CI("cannot mount a tmpfs (this test needs root): " + disk_->problem());
  }

  const TempDir dir_;
  const std::string sweep_ = dir_.write("fill.toml", kFillSweep).string();
  std::optional<SmallDisk> disk_;
  const std::string out_ = (dir_.path() / "small" / "fill.h5").string();
};

// The run's error: one line, once (rank 0's alone), naming the full disk's
// file and how to continue.
void expect_one_line_disk_full_error(const CommandResult& run, const std::string& out) {
  const std::size_t at = run.err.find("memsweep: error: ");
  ASSERT_NE(at, std::string::npos) << run.err;
  EXPECT_EQ(run.err.rfind("memsweep: error: "), at) << "more than one error line: " << run.err;
  const std::string error_line = run.err.substr(at, run.err.find('\n', at) - at);
  EXPECT_THAT(error_line, HasSubstr(out));
  EXPECT_THAT(error_line, HasSubstr("No space left on device"));
  EXPECT_THAT(error_line, HasSubstr("--resume"));
}

// Every trial the progress lines reported ok before the error is in the
// file, read by h5py alone and by memsweep summary; returns the file's final rows.
std::map<std::string, std::vector<std::string>> expect_reported_trials_in_file(const CommandResult& run,
                                                                               const std::string& out) {
  std::set<std::string> reported;
  const std::regex progress(R"(\] ([0-9a-f]{12}) ok )");
  for (auto it = std::sregex_iterator(run.err.begin(), run.err.end(), progress); it != std::sregex_iterator(); ++it)
    reported.insert((*it)[1]);
  EXPECT_GE(reported.size(), 1U) << run.err;
  const auto in_file = final_rows(h5py_table(out, "trials", true));
  for (const std::string& id : reported) EXPECT_TRUE(in_file.contains(id)) << id << " was reported ok";
  const CommandResult summary = run_memsweep({"summary", out});
  EXPECT_EQ(summary.exit_status, kOk) << summary.err;
  return in_file;
}

// Each table's rows and how many have an empty trial id, as h5py reads the
// file itself, with no reader's rule applied: rows a failed flush sized the
// table for but never wrote read as zeros.
struct RawRows {
  long rows = 0;
  long blank = 0;
};
std::map<std::string, RawRows> raw_rows(const std::string& file) {
  constexpr char kScript[] = R"(
import sys, h5py
with h5py.File(sys.argv[1], "r", libver="latest", swmr=True) as f:
    for name in ("trials", "samples", "epochs", "messages"):
        ids = f[name].fields("trial_id")[()]
        print(name, len(ids), int((ids == b"").sum()))
)";
  const CommandResult read = run_command({"/usr/bin/python3", "-c", kScript, file});
  EXPECT_EQ(read.exit_status, kOk) << read.err;
  std::map<std::string, RawRows> tables;
  std::istringstream lines(read.out);
  std::string name;
  RawRows counts;
  while (lines >> name >> counts.rows >> counts.blank) tables[name] = counts;
  EXPECT_EQ(tables.size(), 4U) << read.out;
  return tables;
}

// The rows of a table as memsweep's own reader gives them (export reads with
// ResultReader), and how many of them have an empty trial id.
RawRows exported_rows(const std::string& file, const std::string& table) {
  const CommandResult exported = run_memsweep({"export", file, "--table", table, "--format", "tsv"});
  EXPECT_EQ(exported.exit_status, kOk) << exported.err;
  RawRows counts;
  std::istringstream lines(exported.out);
  std::string line;
  std::getline(lines, line);  // the header
  EXPECT_TRUE(line.starts_with("trial_id\t")) << line;
  while (std::getline(lines, line)) {
    ++counts.rows;
    if (line.starts_with("\t")) ++counts.blank;
  }
  return counts;
}

// After the stop no reader sees a row that was not written whole: the file
// holds none (the writer set the tables' sizes back to the last flush; until
// issue 28 /epochs or /samples ended with rows of zeros), and memsweep's
// reader shows every row h5py sees.
void expect_no_blank_rows(const std::string& file) {
  for (const auto& [table, counts] : raw_rows(file)) {
    EXPECT_EQ(counts.blank, 0) << "/" << table << ": " << counts.blank << " of " << counts.rows
                               << " rows have an empty trial id";
    if (table == "trials" || table == "messages") continue;  // export shows a trial's message in its row
    const RawRows exported = exported_rows(file, table);
    EXPECT_EQ(exported.blank, 0) << "/" << table;
    EXPECT_EQ(exported.rows, counts.rows) << "/" << table;
  }
}

TEST_F(DiskFull, AClearErrorAndTheFileReadableUpToItsLastFlushedTrial) {
  const CommandResult run = run_command({MEMSWEEP_EXECUTABLE, "run", sweep_, "-o", out_}, "", kEnvironment);
  std::cout << "disk full (a 160 KiB tmpfs): exit status " << run.exit_status << "\n"
            << run.err.substr(run.err.rfind("memsweep:") == std::string::npos ? 0 : run.err.rfind("memsweep:"))
            << std::flush;
  ASSERT_EQ(run.exit_status, kBadInput) << "the disk filled before the sweep's end: " << run.err;
  expect_one_line_disk_full_error(run, out_);
  EXPECT_EQ(run.err.back(), '\n');
  EXPECT_EQ(run.err.find('\n', run.err.rfind("memsweep: error: ")), run.err.size() - 1) << "the error is the last line";
  const auto in_file = expect_reported_trials_in_file(run, out_);
  expect_no_blank_rows(out_);

  // With room again (the file moved to a larger disk), --resume completes it.
  const std::string moved = (dir_.path() / "fill.h5").string();
  std::filesystem::copy_file(out_, moved);
  const CommandResult resumed =
      run_command({MEMSWEEP_EXECUTABLE, "run", sweep_, "-o", moved, "--resume", "-q"}, "", kEnvironment);
  ASSERT_EQ(resumed.exit_status, kOk) << resumed.err;
  const auto finished = final_rows(h5py_table(moved, "trials"));
  EXPECT_EQ(finished.size(), 16U);
  EXPECT_EQ(lost_rows(in_file, finished), 0U);
}

// The same under mpirun -np 3: rank 0 stops the workers, and every rank
// ends with exit status 2 and rank 0's one line (until issue 21, rank 0
// aborted the job: status 1 and Open MPI's MPI_ABORT banner). mpirun adds
// its own lines on a non-zero status, as after a stop (exit status 3).
TEST_F(DiskFull, UnderMpirunEveryRankExitsTwoWithTheOneLineMessage) {
  std::map<std::string, std::string> environment = kEnvironment;
  environment["MEMSWEEP_FAULT_TEST"] = out_;

  const CommandResult run = run_command(memsweep_on_ranks_argv(3, {"run", sweep_, "-o", out_}), "", environment);
  ASSERT_EQ(run.exit_status, kBadInput) << "the disk filled before the sweep's end: " << run.err;
  expect_one_line_disk_full_error(run, out_);
  EXPECT_THAT(run.err, Not(HasSubstr("MPI_ABORT")));
  EXPECT_THAT(run.err, Not(HasSubstr("error during the sweep")));
  expect_reported_trials_in_file(run, out_);
  expect_no_blank_rows(out_);
  EXPECT_TRUE(processes_with_environment("MEMSWEEP_FAULT_TEST", out_).empty()) << "a rank or a trial survived";
}

}  // namespace
}  // namespace memsweep::testing
