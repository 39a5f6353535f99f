// A user's program as a trial (docs/runner.md, "Programs"): the real runner
// starts tests/runner/tree_program.cpp, a program that touches known
// amounts of memory in itself and in a child, and measures its whole
// process tree from outside. Every way a program trial ends is its status,
// and nothing of its tree outlives it.

#include "memsweep/program.hpp"
#include "runner/runner_support.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

std::string status_of(const TrialRow& row) { return get_fixed(row.status); }
std::string message_of(const TrialRow& row) { return get_fixed(row.message); }

TrialSpec program_trial(std::vector<std::string> arguments) {
  TrialSpec trial = synthetic_trial({16}, 1);
  ProgramSpec program;
  program.name = "tree";
  program.command = {MEMSWEEP_TREE_PROGRAM};
  program.command.insert(program.command.end(), arguments.begin(), arguments.end());
  program.place = "test.toml:1: program";
  trial.program = program;
  trial.id = trial_id(trial);
  return trial;
}

struct Report {
  std::int64_t parent_base = -1;
  std::int64_t child_base = -1;
  int grandchild = 0;
};

Report read_report(const std::filesystem::path& path) {
  Report report;
  std::ifstream in(path);
  in >> report.parent_base >> report.child_base >> report.grandchild;
  return report;
}

// Gone, or a zombie nobody reaps (a container's init may not): either way
// it holds no memory and runs no more.
bool is_gone(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'Z';
}

class ProgramTrialTest : public ::testing::Test {
 protected:
  TrainingRunnerOptions options() const {
    TrainingRunnerOptions settings = fixture_.options();
    settings.log_dir = logs_.path();
    settings.use_cgroups = false;
    return settings;
  }
  std::filesystem::path scratch(const std::string& name) const { return logs_.path() / name; }
  // hwm_program touching `mib` MiB, holding it `hold_ms`, as a trial.
  struct OwnPeakRun run_hwm_program(int mib, int hold_ms) const;
  void TearDown() override { EXPECT_THAT(child_processes(), ::testing::IsEmpty()) << "a program outlived its trial"; }
  TempDir logs_;

 private:
  RunnerFixture fixture_;
};

TEST_F(ProgramTrialTest, MeasuresTheWholeTreeWithinTwoPercent) {
  constexpr int kParentMiB = 96, kChildMiB = 160;
  const auto report_path = scratch("report.txt");
  const TrialSpec trial =
      program_trial({"--touch", std::to_string(kParentMiB), "--child-touch", std::to_string(kChildMiB), "--hold-ms",
                     "400", "--report", report_path.string()});
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  const Report report = read_report(report_path);
  ASSERT_GT(report.parent_base, 0);
  ASSERT_GT(report.child_base, 0);

  // Both processes at their top at once: each one's start plus its block.
  const double expected =
      static_cast<double>(report.parent_base + report.child_base) + static_cast<double>(kParentMiB + kChildMiB) * kMiB;
  EXPECT_NEAR(static_cast<double>(row.rss_peak), expected, 0.02 * expected)
      << "tree peak " << row.rss_peak << " against " << expected;
  EXPECT_EQ(row.processes, 2);
  EXPECT_EQ(row.rss_baseline, 0);
  EXPECT_EQ(row.rss_footprint, row.rss_peak);
  // The largest single process is the child; the sum of each one's own
  // peak bounds the tree's from above.
  const double child_top = static_cast<double>(report.child_base) + static_cast<double>(kChildMiB) * kMiB;
  EXPECT_NEAR(static_cast<double>(row.process_peak_max), child_top, 0.02 * child_top);
  EXPECT_GE(row.rss_peak_hwm_sum, row.rss_peak);
  std::printf("tree peak %.1f MiB, expected %.1f MiB (%+.2f %%); largest process %.1f MiB\n",
              static_cast<double>(row.rss_peak) / kMiB, expected / kMiB,
              100.0 * (static_cast<double>(row.rss_peak) - expected) / expected,
              static_cast<double>(row.process_peak_max) / kMiB);

  // Its events lines: one epoch, its phases on the samples, and the Q&A
  // rule's estimate from the model size it reported.
  ASSERT_EQ(sink.epoch_rows.size(), 1U);
  EXPECT_EQ(sink.epoch_rows[0].epoch, 1);
  EXPECT_DOUBLE_EQ(sink.epoch_rows[0].train_loss, 0.5);
  EXPECT_DOUBLE_EQ(sink.epoch_rows[0].test_accuracy, 0.75);
  EXPECT_EQ(row.epochs_done, 1);
  EXPECT_DOUBLE_EQ(row.test_accuracy, 0.75);
  ASSERT_FALSE(sink.sample_rows.empty());
  EXPECT_TRUE(std::any_of(sink.sample_rows.begin(), sink.sample_rows.end(), [](const SampleRow& sample) {
    return sample.epoch == 1;
  })) << "samples after the train phase carry epoch 1";
  // Unknown until the program reports a phase (the first sample is taken
  // at its exec), then what it reported: training during its 400 ms hold.
  EXPECT_EQ(sink.sample_rows.front().phase, sample_phase::kUnknown);
  EXPECT_TRUE(std::any_of(sink.sample_rows.begin(), sink.sample_rows.end(), [](const SampleRow& sample) {
    return sample.phase == sample_phase::kTraining && sample.epoch == 1;
  }));
  for (const SampleRow& sample : sink.sample_rows) {
    EXPECT_TRUE(sample.phase == sample_phase::kUnknown || sample.phase == sample_phase::kTraining ||
                sample.phase == sample_phase::kEvaluating)
        << sample.phase;
    if (sample.phase == sample_phase::kUnknown) {
      EXPECT_EQ(sample.epoch, 0);
    }
  }
  // parameters × 3 × 4 B + activations × 2 × batch × 4 B + batch × 784 × 4 B
  const std::int64_t rule = 1000 * 3 * 4 + 100 * 2 * trial.batch_size * 4 + trial.batch_size * 784 * 4;
  EXPECT_EQ(row.predicted_bytes, rule);
  // The row records the rule's parts and the program's count (schema 10): the analysis reads them.
  EXPECT_EQ(row.parameters, 1000);
  const auto part = [&](std::string_view name) { return row.estimate_parts[*estimate_part_slot(name)]; };
  EXPECT_EQ(part(estimate_part::kRuleParameters), 1000 * 3 * 4);
  EXPECT_EQ(part(estimate_part::kRuleActivations), 100 * 2 * trial.batch_size * 4);
  EXPECT_EQ(part(estimate_part::kInputBatch), trial.batch_size * 784 * 4);
  EXPECT_EQ(part(estimate_part::kParameters), -1) << "not a part of the rule";
  EXPECT_EQ(get_fixed(row.trainer), "tree");
  EXPECT_EQ(row.bad_event_lines, 0);

  // Its output is kept, by trial and attempt.
  std::ifstream out(logs_.path() / (trial.id + "-0.out"));
  std::string line;
  std::getline(out, line);
  EXPECT_EQ(line, "tree_program: done");
}

TEST_F(ProgramTrialTest, ANonZeroExitIsAFailureWithTheEndOfItsStderr) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow failed = runner.run(program_trial({"--exit", "3"}), plain_context(), sink).row;
  EXPECT_EQ(status_of(failed), "failed");
  EXPECT_THAT(message_of(failed), HasSubstr("exited with status 3"));
  EXPECT_THAT(message_of(failed), HasSubstr("something went wrong | boom: exit 3"));
  EXPECT_EQ(get_fixed(failed.end_cause), "exited");

  const TrialRow next = runner.run(program_trial({}), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << "the runner goes on: " << message_of(next);
}

TEST_F(ProgramTrialTest, BadEventLinesAreCountedAndReportedOnceNeverFatal) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(program_trial({"--bad-lines", "3"}), plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "ok");
  EXPECT_EQ(row.bad_event_lines, 3);
  EXPECT_THAT(message_of(row), HasSubstr("3 events lines not understood; the first: this is not an event"));
  EXPECT_EQ(sink.epoch_rows.size(), 1U) << "the good lines still count";
}

TEST_F(ProgramTrialTest, AHangingProgramEndsAtItsTimeLimit) {
  TrainingRunner runner(options());
  TrialSpec trial = program_trial({"--hang"});
  trial.timeout_seconds = 1.0;
  RecordingSink sink;
  const auto start = std::chrono::steady_clock::now();
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "timeout") << message_of(row);
  EXPECT_EQ(row.end_signal, SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

class OrphanedGrandchild : public ProgramTrialTest, public ::testing::WithParamInterface<bool> {};

// A grandchild whose parent exits is reparented away from the tree; one
// that calls setsid leaves the process group too. Found by the sampler
// while it lived in the tree, it is killed with the trial either way.
TEST_P(OrphanedGrandchild, IsKilledWithTheTrial) {
  const bool own_session = GetParam();
  const auto report_path = scratch("grandchild.txt");
  std::vector<std::string> arguments{"--grandchild", "--hold-ms", "300", "--report", report_path.string()};
  if (own_session) arguments.push_back("--setsid");
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(program_trial(arguments), plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  const Report report = read_report(report_path);
  ASSERT_GT(report.grandchild, 0);
  // SIGKILL is delivered at once, the exit a moment later.
  bool gone = false;
  for (int wait = 0; wait < 100 && !gone; ++wait) {
    gone = is_gone(report.grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "grandchild " << report.grandchild << " outlived its trial";
  if (!gone) ::kill(report.grandchild, SIGKILL);
  EXPECT_GE(row.processes, 3) << "the program, its child and the middle process, at least";
}

INSTANTIATE_TEST_SUITE_P(Session, OrphanedGrandchild, ::testing::Values(false, true),
                         [](const auto& param_info) { return param_info.param ? "OwnSession" : "SameSession"; });

TEST_F(ProgramTrialTest, AStopRequestInterruptsTheProgram) {
  TrainingRunner runner(options());
  std::atomic<bool> stop{false};
  TrialContext context = plain_context();
  context.stop = &stop;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  RecordingSink sink;
  const TrialRow row = runner.run(program_trial({"--hang"}), context, sink).row;
  stopper.join();
  EXPECT_EQ(status_of(row), "interrupted") << message_of(row);
  EXPECT_EQ(row.end_signal, SIGTERM) << "asked with SIGTERM, whose default ends it";
}

// A workdir given relative to the run's folder, and a program relative to
// the workdir: the program runs there, found there.
TEST_F(ProgramTrialTest, ARelativeProgramRunsInItsRelativeWorkdir) {
  const std::filesystem::path program = MEMSWEEP_TREE_PROGRAM;
  TrialSpec trial = program_trial({"--report", "report-here.txt"});
  trial.program->command.front() = "./" + program.filename().string();
  trial.program->workdir = std::filesystem::relative(program.parent_path()).string();
  trial.id = trial_id(trial);
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  const auto report = program.parent_path() / "report-here.txt";
  EXPECT_TRUE(std::filesystem::exists(report)) << "written in the workdir";
  std::filesystem::remove(report);
}

// hwm_program.cpp's run as a trial: the row, its samples, and the peak the
// program read from its own /proc/self/status (-1 if it wrote none).
struct OwnPeakRun {
  TrialRow row;
  std::vector<SampleRow> samples;
  double own = -1;
};

OwnPeakRun ProgramTrialTest::run_hwm_program(int mib, int hold_ms) const {
  const auto own_path = scratch("own.txt");
  TrialSpec trial = program_trial({});
  trial.program->command = {MEMSWEEP_HWM_PROGRAM, std::to_string(mib), std::to_string(hold_ms), own_path.string()};
  trial.id = trial_id(trial);
  TrainingRunner runner(options());
  RecordingSink sink;
  OwnPeakRun run;
  run.row = runner.run(trial, plain_context(), sink).row;
  run.samples = sink.sample_rows;
  std::ifstream report(own_path);
  if (!(report >> run.own)) run.own = -1;
  return run;
}

// Within a third of a MiB of the program's own peak (the bound).
constexpr double kOwnPeakToleranceBytes = 0.3 * kMiB;

// An ok trial whose peak, tree and largest process, is the program's own.
void expect_own_peak(const OwnPeakRun& run) {
  ASSERT_EQ(status_of(run.row), "ok") << message_of(run.row);
  ASSERT_GT(run.own, 0) << "hwm_program's report";
  EXPECT_NEAR(static_cast<double>(run.row.rss_peak), run.own, kOwnPeakToleranceBytes);
  EXPECT_NEAR(static_cast<double>(run.row.process_peak_max), run.own, kOwnPeakToleranceBytes);
}

// Until its exec the program's child is a fork of this test process (the
// rank): neither its samples nor its peak may count that image. A program
// touching 2 MiB reports its own VmHWM; the run under mpirun and by
// `memsweep run` is tests/run/test_program_peaks.cpp.
TEST_F(ProgramTrialTest, ATinyProgramsPeakIsItsOwnNotItsRanks) {
  const OwnPeakRun run = run_hwm_program(2, 300);
  expect_own_peak(run);
  std::size_t readable = 0;
  for (const SampleRow& sample : run.samples) {
    if (sample.rss < 0) continue;
    ++readable;
    EXPECT_GT(sample.rss, 0) << "at " << sample.t << " s";
    EXPECT_LE(static_cast<double>(sample.rss), run.own + kOwnPeakToleranceBytes) << "at " << sample.t << " s";
  }
  EXPECT_GE(readable, 10U);
  EXPECT_GE(run.row.rss_mean, 0.75 * run.own);
  std::printf("recorded %.3f MiB, its own VmHWM %.3f MiB\n", static_cast<double>(run.row.rss_peak) / kMiB,
              run.own / kMiB);
}

// A program larger than its rank that reaches its peak just before it
// exits, between two reads: wait4's ru_maxrss, above the rank's image, is
// then the program's and counts.
TEST_F(ProgramTrialTest, ALargeProgramsLastMomentCountsThroughItsRusage) { expect_own_peak(run_hwm_program(96, 0)); }

TEST_F(ProgramTrialTest, AMissingProgramFailsTheTrialNamingIt) {
  TrialSpec trial = program_trial({});
  trial.program->command = {"memsweep-no-such-program"};
  trial.id = trial_id(trial);
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("\"memsweep-no-such-program\" not found on PATH"));
}

// In a cgroup whose limit is the budget, the kernel's OOM killer ends the
// program's tree when it passes it: the trial's status, not the runner's end.
TEST_F(ProgramTrialTest, OverItsBudgetInACgroupTheKernelStopsIt) {
  TrainingRunnerOptions settings = options();
  settings.use_cgroups = true;
  TrainingRunner runner(settings);
  if (runner.isolation() == "proc")
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("no cgroup for trials here: " + runner.isolation_problem());
  TrialContext context = plain_context();
  context.mem_budget_bytes = 128 * kMiB;
  RecordingSink sink;
  const TrialRow row = runner.run(program_trial({"--touch", "64", "--child-touch", "512"}), context, sink).row;
  EXPECT_EQ(status_of(row), "over_budget") << message_of(row);
  EXPECT_LT(row.cgroup_peak, static_cast<std::int64_t>(160 * kMiB)) << message_of(row);
  const TrialRow next = runner.run(program_trial({}), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << "the runner goes on: " << message_of(next);
}

// ---------------------------------------------------------------- issue 43: logs and folders

// A shell script as a program trial.
TrialSpec shell_trial(const std::string& script, std::vector<std::string> arguments = {}) {
  TrialSpec trial = synthetic_trial({16}, 1);
  ProgramSpec program;
  program.name = "sh";
  program.command = {"/bin/sh", "-c", script, "sh"};
  program.command.insert(program.command.end(), arguments.begin(), arguments.end());
  program.place = "test.toml:1: program";
  trial.program = program;
  trial.id = trial_id(trial);
  return trial;
}

std::string seq_output(int from, int to) {
  std::string text;
  for (int i = from; i <= to; ++i) text += std::to_string(i) + "\n";
  return text;
}

std::string whole_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Item 6: a program writing ~20 MB on stdout and ~7 MB on stderr under a
// 1 MiB log_limit: each log is its first and last 512 KiB with one line
// between, and a failure's message still ends with stderr's last line.
TEST_F(ProgramTrialTest, LogsPastTheirLimitKeepTheirHeadAndTailAndTheFailureItsStderrEnd) {
  constexpr std::uint64_t kLimit = 1 << 20;
  TrialSpec trial = shell_trial("seq 1 3000000; seq 1 1000000 >&2; exit 3");
  trial.program->log_limit_bytes = kLimit;
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("exited with status 3"));
  EXPECT_THAT(message_of(row), HasSubstr("999999 | 1000000")) << "stderr's last lines, past the limit";
  EXPECT_THAT(message_of(row), ::testing::Not(HasSubstr("log"))) << "nothing went wrong with the logs";

  for (const auto& [extension, last] : {std::pair{".out", 3000000}, std::pair{".err", 1000000}}) {
    const std::string stream = seq_output(1, last);
    const std::string kept = whole_file(logs_.path() / (trial.id + "-0" + extension));
    std::printf("%s: %zu bytes written, %zu kept\n", extension, stream.size(), kept.size());
    EXPECT_LE(kept.size(), kLimit + 200) << extension;
    EXPECT_TRUE(kept.starts_with(stream.substr(0, kLimit / 2))) << extension;
    EXPECT_TRUE(kept.ends_with(stream.substr(stream.size() - kLimit / 2))) << extension;
    EXPECT_THAT(kept, HasSubstr(std::to_string(stream.size() - kLimit) + " bytes of " +
                                (extension == std::string(".out") ? "stdout" : "stderr") + " dropped here"));
  }
}

// Item 12: {trial_dir} as the working directory. Each attempt starts in
// an empty folder of its own beside its logs; by default it is removed
// after an ok attempt and kept after one that failed; `always` and `never`
// keep or remove it whatever the outcome. A folder of the same name from
// an earlier run is emptied first.
TEST_F(ProgramTrialTest, EachAttemptRunsInAnEmptyTrialDirOfItsOwnKeptAsAsked) {
  const std::filesystem::path report = scratch("cwd.txt");
  TrialSpec trial = shell_trial("pwd > \"$1\"; ls -A | wc -l >> \"$1\"; echo {trial_id} > model.pt; exit $2",
                                {report.string(), "{attempt}"});
  trial.program->workdir = "{trial_dir}";
  trial.program->uses_trial_dir = true;
  trial.id = trial_id(trial);
  TrainingRunner runner(options());
  RecordingSink sink;
  const auto run = [&](int attempt, KeepTrialDir keep) {
    trial.program->keep_trial_dir = keep;
    TrialContext context = plain_context();
    context.attempt = attempt;
    return runner.run(trial, context, sink).row;
  };
  const auto folder = [&](int attempt) { return logs_.path() / (trial.id + "-" + std::to_string(attempt)); };
  const auto seen = [&] {
    std::ifstream in(report);
    std::string cwd, count;
    std::getline(in, cwd);
    std::getline(in, count);
    return std::pair{cwd, std::stoi(count.empty() ? "-1" : count)};
  };

  // attempt 0 exits 0: ok, its folder removed.
  TrialRow row = run(0, KeepTrialDir::failed);
  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  EXPECT_EQ(seen(), std::pair(std::filesystem::canonical(logs_.path()).string() + "/" + trial.id + "-0", 0));
  EXPECT_FALSE(std::filesystem::exists(folder(0))) << "an ok attempt's folder is removed by default";

  // attempt 1 exits 1: failed, its folder kept with what the program left.
  ASSERT_TRUE(std::filesystem::create_directories(folder(1)));
  { std::ofstream(folder(1) / "stale.pt") << "an earlier run's"; }
  row = run(1, KeepTrialDir::failed);
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_EQ(seen().second, 0) << "an earlier run's file was left in the folder";
  EXPECT_EQ(whole_file(folder(1) / "model.pt"), trial.id + "\n") << "a failed attempt's folder is kept";

  row = run(2, KeepTrialDir::never);
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_FALSE(std::filesystem::exists(folder(2))) << "never: removed even after a failure";

  row = run(0, KeepTrialDir::always);
  EXPECT_EQ(status_of(row), "ok");
  EXPECT_TRUE(std::filesystem::exists(folder(0) / "model.pt")) << "always: kept after an ok attempt";
  std::filesystem::remove(report);
}

}  // namespace
}  // namespace memsweep::testing
