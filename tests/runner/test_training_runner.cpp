// The real trial runner: each trial trains in a process of its own (the
// memsweep binary built beside these tests) that the runner watches from
// outside, and every way a trial can end becomes its row's status: ok,
// diverged, failed, a crash, an outside kill, the budget, the time limit, a
// stop request answered or not. Small synthetic trials, one OpenMP thread.

#include "memsweep/byte_size.hpp"
#include "memsweep/estimate.hpp"
#include "runner/runner_support.hpp"
#include "runner/test_hooks.hpp"
#include "support/skip_or_fail.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// A trial that trains for well over a second on one thread.
TrialSpec long_trial(int epochs) { return synthetic_trial({256, 256}, epochs, 16, small_data(1, 3000, 200)); }

std::string status_of(const TrialRow& row) { return get_fixed(row.status); }
std::string status_of(const TrialRecord& record) { return status_of(record.row); }
std::string message_of(const TrialRow& row) { return get_fixed(row.message); }
std::string cause_of(const TrialRow& row) { return get_fixed(row.end_cause); }

// Sets the trial processes' test hook (runner/test_hooks.hpp) for one test.
class ScopedHook {
 public:
  explicit ScopedHook(const std::string& spec) {
    ::setenv(std::string(runner::detail::kTestHookEnvVar).c_str(), spec.c_str(), 1);
  }
  ~ScopedHook() { ::unsetenv(std::string(runner::detail::kTestHookEnvVar).c_str()); }
  ScopedHook(const ScopedHook&) = delete;
  ScopedHook& operator=(const ScopedHook&) = delete;
};

class TrainingRunnerTest : public ::testing::Test {
 protected:
  TrainingRunnerOptions options() const { return fixture_.options(); }
  void TearDown() override {
    EXPECT_THAT(child_processes(), ::testing::IsEmpty()) << "a trial process outlived its trial";
  }

 private:
  RunnerFixture fixture_;
};

TEST_F(TrainingRunnerTest, OkTrialRecordsSamplesEpochsAndItsFigures) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({64}, 3);
  TrialContext context = plain_context();
  context.attempt = 1;
  context.run = 2;
  context.rank = 3;
  const TrialRow row = runner.run(trial, context, sink).row;

  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  EXPECT_EQ(message_of(row), "");
  EXPECT_EQ(get_fixed(row.trial_id), trial.id);
  EXPECT_EQ(row.attempt, 1);
  EXPECT_EQ(row.run, 2);
  EXPECT_EQ(row.rank, 3);
  EXPECT_EQ(get_fixed(row.host), "test-host");
  EXPECT_EQ(row.epochs_done, 3);
  EXPECT_TRUE(std::isfinite(row.final_train_loss));
  EXPECT_GE(row.test_accuracy, 0.0);
  EXPECT_LE(row.test_accuracy, 1.0);
  EXPECT_GT(row.predicted_bytes, 0);
  EXPECT_GT(row.rss_baseline, 0);
  EXPECT_GE(row.rss_peak, row.rss_baseline);
  EXPECT_EQ(row.rss_footprint, row.rss_peak - row.rss_baseline);
  EXPECT_GT(row.rss_mean, 0.0);
  EXPECT_LE(row.rss_mean, static_cast<double>(row.rss_peak));
  EXPECT_GT(row.sys_used_mean, 0.0);
  EXPECT_LE(row.start_time, row.end_time);
  EXPECT_GT(row.wall_seconds, 0.0);

  // The trial ran in a process of its own, which exited after reporting.
  EXPECT_GT(row.pid, 0);
  EXPECT_NE(row.pid, ::getpid());
  EXPECT_EQ(cause_of(row), "exited");
  EXPECT_EQ(row.end_signal, 0);
  EXPECT_EQ(row.oom_killed, 0);
  EXPECT_GT(row.start_seconds, 0.0);
  EXPECT_LT(row.start_seconds, row.wall_seconds);
  const std::string isolation = get_fixed(row.isolation);
  EXPECT_THAT(isolation, AnyOf("cgroup1", "cgroup2", "proc"));
  EXPECT_EQ(isolation, runner.isolation());
  if (isolation != "proc") {
    EXPECT_GT(row.cgroup_peak, 0) << "the trial's cgroup saw its memory";
  }

  ASSERT_FALSE(sink.sample_rows.empty());
  EXPECT_EQ(row.samples, sink.sample_rows.size() + row.dropped_samples);
  double previous_t = -1.0;
  int previous_epoch = 0;
  for (const SampleRow& sample : sink.sample_rows) {
    EXPECT_EQ(get_fixed(sample.trial_id), trial.id);
    EXPECT_EQ(sample.attempt, 1);
    EXPECT_EQ(sample.rank, 3);
    EXPECT_GT(sample.sys_used, 0);
    EXPECT_GE(sample.t, previous_t);
    EXPECT_GE(sample.epoch, previous_epoch);
    EXPECT_LE(sample.epoch, 3);
    previous_t = sample.t;
    previous_epoch = sample.epoch;
  }
  // Every sample read the trial's process (the last may find it ended: -1).
  for (std::size_t i = 0; i + 1 < sink.sample_rows.size(); ++i)
    EXPECT_GE(sink.sample_rows[i].rss, row.rss_baseline / 2);
  ASSERT_EQ(sink.epoch_rows.size(), 3U);
  for (std::size_t i = 0; i < sink.epoch_rows.size(); ++i) {
    const EpochRow& epoch = sink.epoch_rows[i];
    EXPECT_EQ(epoch.epoch, static_cast<int>(i) + 1);
    EXPECT_EQ(get_fixed(epoch.trial_id), trial.id);
    EXPECT_EQ(epoch.attempt, 1);
    EXPECT_GT(epoch.rss, 0);
    EXPECT_GT(epoch.sys_used, 0);
    EXPECT_GT(epoch.seconds, 0.0);
  }
  EXPECT_DOUBLE_EQ(sink.epoch_rows.back().test_accuracy, row.test_accuracy);
  EXPECT_EQ(sink.overlapping_calls, 0);
}

TEST_F(TrainingRunnerTest, StreamsSamplesWhileTheTrialRuns) {
  TrainingRunnerOptions settings = options();
  settings.max_chunk_age = std::chrono::milliseconds(200);
  TrainingRunner runner(settings);
  RecordingSink sink;
  const Clock::time_point start = Clock::now();
  // 60 epochs: over a second even on a fast core (20 took 0.5 s on a Zen 5).
  const TrialRow row = runner.run(long_trial(60), plain_context(), sink).row;
  const Clock::time_point end = Clock::now();
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  ASSERT_GT(row.wall_seconds, 1.0) << "the trial must last long enough to see streaming";
  ASSERT_FALSE(sink.sample_calls.empty());
  const double first_call = std::chrono::duration<double>(sink.sample_calls.front() - start).count();
  const double run_seconds = std::chrono::duration<double>(end - start).count();
  std::printf("first samples after %.3f s of a %.3f s run; %zu calls\n", first_call, run_seconds,
              sink.sample_calls.size());
  EXPECT_LT(first_call, run_seconds - 0.5) << "samples arrive before the trial ends";
  EXPECT_GE(static_cast<double>(sink.sample_calls.size()), run_seconds / 0.2 * 0.5)
      << "a partial chunk at least every 200 ms";
  EXPECT_EQ(sink.overlapping_calls, 0);
}

// The runner skips a trial whose prediction does not fit, whichever budget
// (the rank's --mem-budget or the trial's own) is the smaller.
struct BudgetCase {
  const char* name;
  std::optional<std::uint64_t> rank_budget;
  std::optional<std::uint64_t> trial_budget;
  const char* status;
};

void PrintTo(const BudgetCase& budget_case, std::ostream* out) { *out << budget_case.name; }

class BudgetBeforeStart : public ::testing::TestWithParam<BudgetCase> {};

constexpr std::uint64_t kTiB = kMiB * 1024 * 1024;

INSTANTIATE_TEST_SUITE_P(Budgets, BudgetBeforeStart,
                         ::testing::Values(BudgetCase{"RankBudgetTooSmall", kMiB, std::nullopt, "over_budget"},
                                           BudgetCase{"TrialBudgetTooSmall", std::nullopt, kMiB, "over_budget"},
                                           BudgetCase{"SmallerOfBothWinsTrial", kTiB, kMiB, "over_budget"},
                                           BudgetCase{"SmallerOfBothWinsRank", kMiB, kTiB, "over_budget"},
                                           BudgetCase{"BothLarge", kTiB, kTiB, "ok"},
                                           BudgetCase{"None", std::nullopt, std::nullopt, "ok"}),
                         [](const ::testing::TestParamInfo<BudgetCase>& test) { return test.param.name; });

TEST_P(BudgetBeforeStart, SkipsATrialWhosePredictionDoesNotFit) {
  const BudgetCase& param = GetParam();
  const RunnerFixture fixture;
  TrainingRunner runner(fixture.options());
  RecordingSink sink;
  TrialSpec trial = synthetic_trial();
  trial.mem_budget_bytes = param.trial_budget;
  TrialContext context = plain_context();
  context.mem_budget_bytes = param.rank_budget;
  const TrialRow row = runner.run(trial, context, sink).row;
  EXPECT_EQ(status_of(row), param.status) << message_of(row);
  EXPECT_GT(row.predicted_bytes, 0);
  if (std::string(param.status) == "ok") return;
  EXPECT_THAT(message_of(row), HasSubstr("not run: predicted "));
  EXPECT_THAT(message_of(row), HasSubstr("exceeds the budget 1.00 MiB"));
  EXPECT_EQ(row.epochs_done, 0);
  EXPECT_EQ(row.samples, 0U);
  EXPECT_GT(row.rss_baseline, 0) << "the ready process's memory";
  EXPECT_TRUE(sink.sample_rows.empty());
  EXPECT_TRUE(sink.epoch_rows.empty()) << "not trained";
}

// The estimate cannot foresee memory a trial takes for other reasons: here
// the trial process allocates 512 MiB more than its model (the test hook),
// and is stopped for it. Through /proc alone, the rank sees the RSS pass the
// budget and kills the process; in a cgroup, the budget is also the
// cgroup's limit, where the kernel stops it first.
class BudgetWhileRunning : public TrainingRunnerTest, public ::testing::WithParamInterface<bool> {};

TEST_P(BudgetWhileRunning, StopsATrialWhoseMemoryPassesTheBudget) {
  const bool cgroups = GetParam();
  TrainingRunnerOptions settings = options();
  settings.use_cgroups = cgroups;
  TrainingRunner runner(settings);
  if (cgroups && runner.isolation() == "proc")
    MEMSWEEP_SKIP_OR_FAIL_IN_CI("no cgroup for trials here: " + runner.isolation_problem());
  const TrialSpec trial = synthetic_trial({64}, 4);
  RecordingSink warm_up;
  const TrialRow first = runner.run(trial, plain_context(), warm_up).row;
  ASSERT_EQ(status_of(first), "ok") << message_of(first);

  // Room for the trial as it ran, not for 512 MiB more.
  const std::uint64_t budget = static_cast<std::uint64_t>(first.rss_peak) + 128 * kMiB;
  const ScopedHook hook(trial.id + ":allocate=512MiB");
  RecordingSink sink;
  TrialContext context = plain_context();
  context.mem_budget_bytes = budget;
  const TrialRow row = runner.run(trial, context, sink).row;

  EXPECT_EQ(status_of(row), "over_budget") << message_of(row);
  EXPECT_EQ(cause_of(row), "budget") << message_of(row);
  EXPECT_EQ(row.end_signal, SIGKILL);
  EXPECT_EQ(row.epochs_done, 0);
  EXPECT_FALSE(sink.sample_rows.empty()) << "what was measured is kept";
  if (!cgroups) {
    EXPECT_EQ(row.oom_killed, 0);
    EXPECT_THAT(message_of(row), HasSubstr("passed the budget " + format_byte_size(budget)));
    EXPECT_GT(row.rss_peak, static_cast<std::int64_t>(budget));
  } else {
    // Whichever came first, the rank's kill or the cgroup's limit, the
    // process never held much more than the budget.
    EXPECT_LT(row.cgroup_peak, static_cast<std::int64_t>(budget + 64 * kMiB)) << message_of(row);
  }
  std::printf("%s: %s; peak %s, cgroup peak %s, budget %s\n", cgroups ? "cgroup" : "proc", message_of(row).c_str(),
              format_byte_size(static_cast<std::uint64_t>(std::max<std::int64_t>(row.rss_peak, 0))).c_str(),
              format_byte_size(static_cast<std::uint64_t>(std::max<std::int64_t>(row.cgroup_peak, 0))).c_str(),
              format_byte_size(budget).c_str());

  const TrialRow next = runner.run(trial, plain_context(), warm_up).row;
  EXPECT_EQ(status_of(next), "ok") << "the runner goes on: " << message_of(next);
}

INSTANTIATE_TEST_SUITE_P(Isolation, BudgetWhileRunning, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& test) { return test.param ? "Cgroup" : "Proc"; });

TEST_F(TrainingRunnerTest, StopRequestInterruptsTheTrialAtItsNextStep) {
  TrainingRunner runner(options());
  RecordingSink sink;
  std::atomic<bool> stop{false};
  TrialContext context = plain_context();
  context.stop = &stop;
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    stop = true;
  });
  const TrialSpec trial = long_trial(60);
  const TrialRow row = runner.run(trial, context, sink).row;
  signaller.join();
  EXPECT_EQ(status_of(row), "interrupted") << message_of(row);
  EXPECT_THAT(message_of(row), HasSubstr("interrupted: stopped at epoch"));
  EXPECT_EQ(cause_of(row), "exited") << "it stopped itself when asked";
  EXPECT_LT(row.epochs_done, trial.epochs);
  EXPECT_LT(row.wall_seconds, 3.0) << "it stops at the next step, not at the end";
  EXPECT_FALSE(sink.sample_rows.empty()) << "what was measured is kept";
  EXPECT_GT(row.rss_peak, 0);
}

// A process that stops making progress (the test hook) ends at its time
// limit as `timeout`, and the runner goes on with the next trial.
TEST_F(TrainingRunnerTest, AHangingTrialEndsAtItsTimeLimit) {
  TrainingRunnerOptions settings = options();
  settings.trial_timeout = std::chrono::milliseconds(1500);
  TrainingRunner runner(settings);
  const TrialSpec hangs = synthetic_trial({32}, 2);
  TrialSpec shorter = synthetic_trial({48}, 2);
  shorter.timeout_seconds = 0.8;  // the trial's own limit wins when smaller
  RecordingSink sink;
  TrialRow row;
  TrialRow own_limit;
  {
    const ScopedHook hook("*:hang");
    row = runner.run(hangs, plain_context(), sink).row;
    own_limit = runner.run(shorter, plain_context(), sink).row;
  }
  EXPECT_EQ(status_of(row), "timeout") << message_of(row);
  EXPECT_EQ(cause_of(row), "timeout");
  EXPECT_EQ(row.end_signal, SIGKILL);
  EXPECT_THAT(message_of(row), HasSubstr("no result within its time limit of 1.5 s; killed at "));
  EXPECT_GE(row.wall_seconds, 1.5);
  EXPECT_LT(row.wall_seconds, 5.0);
  EXPECT_EQ(status_of(own_limit), "timeout") << message_of(own_limit);
  EXPECT_THAT(message_of(own_limit), HasSubstr("time limit of 0.8 s"));
  EXPECT_LT(own_limit.wall_seconds, 1.5);

  const TrialRow next = runner.run(synthetic_trial({32}, 2), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
}

// A process that does not answer a stop request is killed after the grace
// period; the trial is still `interrupted` (it runs again on resume).
TEST_F(TrainingRunnerTest, AStopRequestNotAnsweredEndsInAKillAfterTheGrace) {
  TrainingRunnerOptions settings = options();
  settings.stop_grace = std::chrono::milliseconds(400);
  TrainingRunner runner(settings);
  std::atomic<bool> stop{true};
  TrialContext context = plain_context();
  context.stop = &stop;
  RecordingSink sink;
  const ScopedHook hook("*:hang");
  const TrialRow row = runner.run(synthetic_trial({32}, 2), context, sink).row;
  EXPECT_EQ(status_of(row), "interrupted") << message_of(row);
  EXPECT_EQ(cause_of(row), "stopped");
  EXPECT_EQ(row.end_signal, SIGKILL);
  EXPECT_THAT(message_of(row), HasSubstr("did not stop within 0.4 s of the request"));
  EXPECT_LT(row.wall_seconds, 3.0);
}

// The trial process killed from outside while it trains: by SIGSEGV (as if
// it had crashed) → failed with the signal; by SIGKILL that no OOM killer
// sent → killed. Either way the runner goes on.
struct OutsideSignal {
  int signal_number;
  const char* status;
  const char* cause;
  const char* words;
};

class KilledFromOutside : public TrainingRunnerTest, public ::testing::WithParamInterface<OutsideSignal> {};

TEST_P(KilledFromOutside, IsTheTrialsStatusAndTheRunnerGoesOn) {
  const OutsideSignal& param = GetParam();
  // Under AddressSanitizer (ci/sanitize.sh) the trial process would catch
  // the SIGSEGV itself, report it and exit; a crash is meant to end it.
  const std::string asan = std::getenv("ASAN_OPTIONS") != nullptr ? std::getenv("ASAN_OPTIONS") : "";
  ::setenv("ASAN_OPTIONS", (asan + (asan.empty() ? "" : ":") + "handle_segv=0").c_str(), 1);
  TrainingRunner runner(options());
  RecordingSink sink;
  std::vector<pid_t> signalled;
  sink.on_epoch = [&](const EpochRow& epoch) {
    if (epoch.epoch != 1) return;
    signalled = child_processes();
    for (const pid_t pid : signalled) ::kill(pid, param.signal_number);
  };
  const TrialRow row = runner.run(long_trial(30), plain_context(), sink).row;
  ASSERT_EQ(signalled.size(), 1U) << "one trial process, the runner's child";
  EXPECT_EQ(row.pid, signalled.front());
  EXPECT_EQ(status_of(row), param.status) << message_of(row);
  EXPECT_EQ(cause_of(row), param.cause);
  EXPECT_EQ(row.end_signal, param.signal_number);
  EXPECT_EQ(row.oom_killed, 0);
  EXPECT_THAT(message_of(row), HasSubstr(param.words));
  EXPECT_THAT(message_of(row), HasSubstr("epoch "));
  EXPECT_GT(row.rss_peak, row.rss_baseline) << "the peak it reached is kept";
  EXPECT_EQ(row.epochs_done, 0) << "no result came";

  sink.on_epoch = nullptr;
  const TrialRow next = runner.run(synthetic_trial({32}, 1), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
}

INSTANTIATE_TEST_SUITE_P(Signals, KilledFromOutside,
                         ::testing::Values(OutsideSignal{SIGSEGV, "failed", "crash",
                                                         "crashed: SIGSEGV (Segmentation fault)"},
                                           OutsideSignal{SIGKILL, "killed", "signal",
                                                         "killed by SIGKILL (Killed), which memsweep did not send"}),
                         [](const ::testing::TestParamInfo<OutsideSignal>& test) {
                           return test.param.signal_number == SIGKILL ? "Sigkill" : "Sigsegv";
                         });

TEST_F(TrainingRunnerTest, MissingDatasetFailsTheTrialAndTheNextOneRuns) {
  const TempDir empty;
  TrainingRunnerOptions settings = options();
  settings.data_dirs = {empty.path()};
  TrainingRunner runner(settings);
  RecordingSink sink;
  TrialSpec mnist = synthetic_trial();
  mnist.dataset.kind = DatasetKind::mnist;
  const TrialRow failed = runner.run(mnist, plain_context(), sink).row;
  EXPECT_EQ(status_of(failed), "failed");
  EXPECT_THAT(message_of(failed), HasSubstr("mnist not found"));
  EXPECT_THAT(message_of(failed), HasSubstr(empty.path().string()));
  EXPECT_THAT(message_of(failed), Not(HasSubstr("\n")));
  EXPECT_EQ(failed.samples, 0U);
  EXPECT_EQ(failed.pid, -1) << "no process was started";
  EXPECT_EQ(cause_of(failed), "");
  EXPECT_TRUE(sink.sample_rows.empty());
  EXPECT_EQ(runner.dataset_opens(), 0U);

  const TrialRow next = runner.run(synthetic_trial(), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
  EXPECT_EQ(runner.dataset_opens(), 1U);
}

TEST_F(TrainingRunnerTest, MalformedDatasetFilesFailTheTrialNamingTheFile) {
  const TempDir dir;
  for (const char* name :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    dir.write(std::string("mnist/") + name, "not an IDX file");
  TrainingRunnerOptions settings = options();
  settings.data_dirs = {dir.path()};
  TrainingRunner runner(settings);
  RecordingSink sink;
  TrialSpec mnist = synthetic_trial();
  mnist.dataset.kind = DatasetKind::mnist;
  const TrialRow row = runner.run(mnist, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("-idx"));
  EXPECT_THAT(message_of(row), Not(HasSubstr("\n")));
}

TEST_F(TrainingRunnerTest, HugeLearningRateDiverges) {
  TrainingRunner runner(options());
  RecordingSink sink;
  TrialSpec trial = synthetic_trial({32}, 2, 16);
  trial.learning_rate = 1e30;
  trial.id = trial_id(trial);
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "diverged");
  EXPECT_THAT(message_of(row), HasSubstr("the training loss became"));
  EXPECT_EQ(cause_of(row), "exited");
  EXPECT_EQ(row.epochs_done, 0);
  EXPECT_GT(row.rss_peak, 0) << "measured all the same";
}

// Two hidden layers of a million units: the parameters alone would take
// 4 TB, one allocation that cannot succeed (nothing is touched first), so
// the test never eats the machine's memory.
TEST_F(TrainingRunnerTest, AllocationFailureFailsTheTrialWithAnOutOfMemoryMessage) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialSpec impossible = synthetic_trial({kMaxLayerWidth, kMaxLayerWidth}, 1, 8);
  const TrialRow row = runner.run(impossible, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("out of memory (std::bad_alloc) while training (predicted "));
  EXPECT_GT(row.predicted_bytes, static_cast<std::int64_t>(kTiB));
  EXPECT_LT(row.rss_footprint, static_cast<std::int64_t>(1024 * kMiB)) << "nothing large was touched";

  const TrialRow next = runner.run(synthetic_trial(), plain_context(), sink).row;
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
}

TEST_F(TrainingRunnerTest, KeepsTheSharedDatasetWhileTrialsUseTheSameSpec) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialSpec a = synthetic_trial({32});
  const TrialSpec b = synthetic_trial({48});
  const TrialSpec other = synthetic_trial({32}, 2, 32, small_data(2));

  ASSERT_EQ(status_of(runner.run(a, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_opens(), 1U);
  EXPECT_EQ(runner.dataset_decodes(), 1U);
  EXPECT_GT(runner.last_timings().dataset_seconds, 0.0);
  ASSERT_EQ(status_of(runner.run(b, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_opens(), 1U) << "same spec: kept";
  EXPECT_EQ(runner.last_timings().dataset_seconds, 0.0);
  ASSERT_EQ(status_of(runner.run(other, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_opens(), 2U);
  ASSERT_EQ(status_of(runner.run(a, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_opens(), 3U) << "only the last dataset is kept";
}

TEST_F(TrainingRunnerTest, LimitsTheExamplesOfEachSplit) {
  TrainingRunnerOptions settings = options();
  settings.max_train_examples = 100;
  settings.max_test_examples = 50;
  TrainingRunner runner(settings);
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({32}, 1, 32);
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  // The prediction is for the batches the trainer really prepares.
  EXPECT_EQ(row.predicted_bytes, static_cast<std::int64_t>(estimate_trial(trial, {100, 50}).total()));
  EXPECT_NE(row.predicted_bytes, static_cast<std::int64_t>(estimate_trial(trial, {1000, 200}).total()));
  // The row records the estimate's parts (schema 10): each as the estimate has it, the resident dataset of the
  // examples held, and no part the estimate lacks; and the model's weights and biases, 784-32-10.
  const MemoryEstimate estimate = estimate_trial(trial, {100, 50});
  std::int64_t buffers = 0;
  for (const EstimatePart& part : estimate.parts) {
    EXPECT_EQ(row.estimate_parts[*estimate_part_slot(part.name)], static_cast<std::int64_t>(part.bytes)) << part.name;
    buffers += static_cast<std::int64_t>(part.bytes);
  }
  EXPECT_EQ(row.estimate_parts[*estimate_part_slot(estimate_part::kResidentDataset)], (100 + 50) * (784 * 4 + 4));
  EXPECT_EQ(row.estimate_parts[*estimate_part_slot(estimate_part::kRuleParameters)], -1);
  EXPECT_EQ(buffers, row.predicted_bytes) << "no trial process cost in these options: the buffers are the prediction";
  EXPECT_EQ(row.parameters, 784 * 32 + 32 + 32 * 10 + 10);
  // 50 test examples: the accuracy is a multiple of 1/50.
  EXPECT_NEAR(row.test_accuracy * 50.0, std::round(row.test_accuracy * 50.0), 1e-9);
}

TEST_F(TrainingRunnerTest, CountsTheTrialProcessInTheFilesColumnOrder) {
  TrainingRunnerOptions settings = options();
  // The second column as rank 0 found it served: by the kernel's generic event.
  settings.counter_columns = {{"PAPI_NOT_AN_EVENT"}, {"perf::PAGE-FAULTS", CounterSourceChoice::kernel}};
  TrainingRunner runner(settings);
  ASSERT_EQ(runner.counter_events().size(), 2U);
  EXPECT_FALSE(runner.counter_events()[0].available);
  // A software event: every Linux with perf_event_open has it, VMs included.
  ASSERT_TRUE(runner.counter_events()[1].available)
      << "perf::PAGE-FAULTS is not available here: " << runner.counter_events()[1].detail;
  EXPECT_EQ(runner.counter_events()[1].source, EventSource::kernel);
  RecordingSink sink;
  // Large enough that its weights fault in thousands of pages while it trains.
  const TrialRow row = runner.run(synthetic_trial({1024, 1024}, 1), plain_context(), sink).row;
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  ASSERT_FALSE(sink.sample_rows.empty());
  for (const SampleRow& sample : sink.sample_rows) {
    EXPECT_EQ(sample.counters[0], -1) << "an event this rank could not open";
    EXPECT_GE(sample.counters[1], 0);
  }
  // 2 x 1024 x 1024 floats of weights, as many of gradients: thousands of
  // pages faulted in by the trial process, none of them the rank's.
  EXPECT_GT(sink.sample_rows.back().counters[1], 2000) << "the trial process's page faults are counted";
  EXPECT_GE(sink.sample_rows.back().counters[1], sink.sample_rows.front().counters[1]) << "counts since the start";
}

class ThrowingSink : public TrialSink {
 public:
  void samples(std::span<const SampleRow>) override { throw std::runtime_error("the sink is broken"); }
  void epoch(const EpochRow&) override { throw std::runtime_error("the sink is broken"); }
};

// A sink's failure is not the trial's: it leaves run(), the trial's process
// is ended with it, and the runner is fine for the next trial.
TEST_F(TrainingRunnerTest, AFailingSinkThrowsAndTheRunnerRecovers) {
  TrainingRunner runner(options());
  ThrowingSink broken;
  EXPECT_THROW(runner.run(synthetic_trial({32}, 3), plain_context(), broken), std::runtime_error);
  EXPECT_THAT(child_processes(), ::testing::IsEmpty()) << "the trial's process ended with the error";
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({48});
  const TrialRow row = runner.run(trial, plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  ASSERT_FALSE(sink.sample_rows.empty());
  for (const SampleRow& sample : sink.sample_rows) EXPECT_EQ(get_fixed(sample.trial_id), trial.id);
  EXPECT_LT(sink.sample_rows.front().t, 0.1) << "the series starts with this trial";
}

TEST_F(TrainingRunnerTest, AMissingTrialExecutableFailsTheTrialNamingIt) {
  TrainingRunnerOptions settings = options();
  settings.trial_executable = "/nonexistent/memsweep";
  TrainingRunner runner(settings);
  RecordingSink sink;
  const TrialRow row = runner.run(synthetic_trial(), plain_context(), sink).row;
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("exec"));
  EXPECT_THAT(message_of(row), HasSubstr("/nonexistent/memsweep"));
  EXPECT_THAT(message_of(row), HasSubstr("No such file or directory"));
}

TEST(TrainingRunner, RejectsABadSamplerInterval) {
  TrainingRunnerOptions options;
  options.sampler_interval = std::chrono::milliseconds(0);
  EXPECT_THROW(TrainingRunner{options}, std::invalid_argument);
}

// The point of a process per trial: a trial's footprint does not depend on
// what ran before it. The same small trial first, after a trial of several
// hundred MiB, and after ten others, gives the same peak - baseline within
// 2 % or 1 MiB, whichever is larger: far below the large trial's hundreds of
// MiB that a shared process would carry over, and above the trial's own
// noise (under CI's sequence of tests, 6.7-7.4 MB for the same 7 MB trial).
TEST_F(TrainingRunnerTest, AFootprintDoesNotDependOnTheTrialsBefore) {
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialSpec probe = synthetic_trial({128, 64}, 1);
  const auto footprint = [&] {
    const TrialRow row = runner.run(probe, plain_context(), sink).row;
    EXPECT_EQ(status_of(row), "ok") << message_of(row);
    return row.rss_footprint;
  };
  const std::int64_t first = footprint();
  ASSERT_EQ(status_of(runner.run(synthetic_trial({4096, 4096}, 1, 256), plain_context(), sink)), "ok");
  const std::int64_t after_big = footprint();
  for (int i = 0; i < 10; ++i)
    ASSERT_EQ(status_of(runner.run(synthetic_trial({16 + 8 * i}, 1, 8 + 8 * i), plain_context(), sink)), "ok");
  const std::int64_t after_small = footprint();
  const auto tolerance = [](std::int64_t a) { return std::max<std::int64_t>(a / 50, 1024 * 1024); };
  std::printf("footprint first %lld, after a large trial %lld, after ten small ones %lld bytes\n",
              static_cast<long long>(first), static_cast<long long>(after_big), static_cast<long long>(after_small));
  EXPECT_NEAR(static_cast<double>(after_big), static_cast<double>(first), static_cast<double>(tolerance(first)));
  EXPECT_NEAR(static_cast<double>(after_small), static_cast<double>(first), static_cast<double>(tolerance(first)));
}

// The runner's own cost per trial around the training, and the process's
// start (spawn to ready, the dataset already shared): printed for
// docs/runner.md and bounded loosely (a shared 2-core machine).
TEST_F(TrainingRunnerTest, PerTrialOverheadIsSmall) {
  constexpr int kTrials = 9;
  TrainingRunner runner(options());
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({32}, 1);
  ASSERT_EQ(status_of(runner.run(trial, plain_context(), sink)), "ok");  // shares the dataset
  std::vector<double> start;
  std::vector<double> setup;
  std::vector<double> teardown;
  for (int i = 0; i < kTrials; ++i) {
    ASSERT_EQ(status_of(runner.run(trial, plain_context(), sink)), "ok");
    start.push_back(runner.last_timings().start_seconds);
    setup.push_back(runner.last_timings().setup_seconds);
    teardown.push_back(runner.last_timings().teardown_seconds);
  }
  std::sort(start.begin(), start.end());
  std::sort(setup.begin(), setup.end());
  std::sort(teardown.begin(), teardown.end());
  std::printf(
      "runner overhead per trial over %d trials: process start median %.2f ms (max %.2f), setup median %.2f ms "
      "(max %.2f), teardown median %.2f ms (max %.2f); training %.1f ms\n",
      kTrials, start[kTrials / 2] * 1e3, start.back() * 1e3, setup[kTrials / 2] * 1e3, setup.back() * 1e3,
      teardown[kTrials / 2] * 1e3, teardown.back() * 1e3, runner.last_timings().training_seconds * 1e3);
  EXPECT_LT(start[kTrials / 2], 0.2);
  EXPECT_LT(setup[kTrials / 2], 0.3);
  EXPECT_LT(teardown[kTrials / 2], 0.2);
}

}  // namespace
}  // namespace memsweep::testing
