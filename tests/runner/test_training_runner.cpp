// The real trial runner: a trial trains with the oneDNN trainer while the
// sampler records the process, and every way a trial can end becomes its
// row's status. Small synthetic trials, one OpenMP thread.

#include "memsweep/byte_size.hpp"
#include "memsweep/estimate.hpp"
#include "runner/runner_support.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Clock = std::chrono::steady_clock;

// A trial that trains for well over a second on one thread.
TrialSpec long_trial(int epochs) { return synthetic_trial({256, 256}, epochs, 16, small_data(1, 3000, 200)); }

std::string status_of(const TrialRow& row) { return get_fixed(row.status); }
std::string message_of(const TrialRow& row) { return get_fixed(row.message); }

TEST(TrainingRunner, OkTrialRecordsSamplesEpochsAndItsFigures) {
  TrainingRunner runner({});
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({64}, 3);
  TrialContext context = plain_context();
  context.attempt = 1;
  context.run = 2;
  context.rank = 3;
  const TrialRow row = runner.run(trial, context, sink);

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

  ASSERT_FALSE(sink.sample_rows.empty());
  EXPECT_EQ(row.samples, sink.sample_rows.size() + row.dropped_samples);
  double previous_t = -1.0;
  int previous_epoch = 0;
  for (const SampleRow& sample : sink.sample_rows) {
    EXPECT_EQ(get_fixed(sample.trial_id), trial.id);
    EXPECT_EQ(sample.attempt, 1);
    EXPECT_EQ(sample.rank, 3);
    EXPECT_GT(sample.rss, 0);
    EXPECT_GT(sample.sys_used, 0);
    EXPECT_GE(sample.t, previous_t);
    EXPECT_GE(sample.epoch, previous_epoch);
    EXPECT_LE(sample.epoch, 3);
    previous_t = sample.t;
    previous_epoch = sample.epoch;
  }
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

TEST(TrainingRunner, StreamsSamplesWhileTheTrialRuns) {
  TrainingRunnerOptions options;
  options.max_chunk_age = std::chrono::milliseconds(200);
  TrainingRunner runner(options);
  RecordingSink sink;
  const Clock::time_point start = Clock::now();
  const TrialRow row = runner.run(long_trial(20), plain_context(), sink);
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
  TrainingRunner runner({});
  RecordingSink sink;
  TrialSpec trial = synthetic_trial();
  trial.mem_budget_bytes = param.trial_budget;
  TrialContext context = plain_context();
  context.mem_budget_bytes = param.rank_budget;
  const TrialRow row = runner.run(trial, context, sink);
  EXPECT_EQ(status_of(row), param.status) << message_of(row);
  EXPECT_GT(row.predicted_bytes, 0);
  if (std::string(param.status) == "ok") return;
  EXPECT_THAT(message_of(row), HasSubstr("not run: predicted "));
  EXPECT_THAT(message_of(row), HasSubstr("exceeds the budget 1.00 MiB"));
  EXPECT_EQ(row.epochs_done, 0);
  EXPECT_EQ(row.samples, 0U);
  EXPECT_GT(row.rss_baseline, 0);
  EXPECT_TRUE(sink.sample_rows.empty());
  EXPECT_TRUE(sink.epoch_rows.empty()) << "not trained";
}

// The estimate cannot foresee memory the process takes for other reasons:
// here the sink holds on to 256 MiB after the first epoch, which the
// watcher sees and stops the trial for.
TEST(TrainingRunner, StopsATrialWhoseRssPassesTheBudgetWhileRunning) {
  constexpr std::size_t kExtraBytes = 256 * kMiB;
  TrainingRunner runner({});
  const TrialSpec trial = synthetic_trial({64}, 4);
  RecordingSink warm_up;
  const TrialRow first = runner.run(trial, plain_context(), warm_up);
  ASSERT_EQ(status_of(first), "ok") << message_of(first);

  // Room for the trial as it ran, not for the sink's extra memory.
  const std::uint64_t budget = static_cast<std::uint64_t>(first.rss_peak) + kExtraBytes / 2;
  RecordingSink sink;
  std::unique_ptr<char[]> extra;
  sink.on_epoch = [&](const EpochRow&) {
    if (extra) return;
    extra = std::make_unique<char[]>(kExtraBytes);
    std::fill_n(extra.get(), kExtraBytes, 'x');                   // resident, not just reserved
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // ten watcher checks
  };
  TrialContext context = plain_context();
  context.mem_budget_bytes = budget;
  const TrialRow row = runner.run(trial, context, sink);
  extra.reset();

  EXPECT_EQ(status_of(row), "over_budget") << message_of(row);
  EXPECT_THAT(message_of(row), HasSubstr("passed the budget " + format_byte_size(budget)));
  EXPECT_THAT(message_of(row), HasSubstr("epoch 1"));
  EXPECT_EQ(row.epochs_done, 1) << "stopped at the next step after the first epoch";
  EXPECT_GT(row.rss_peak, static_cast<std::int64_t>(budget));
  EXPECT_FALSE(sink.sample_rows.empty());
}

TEST(TrainingRunner, StopRequestFromAnotherThreadInterruptsTheTrial) {
  TrainingRunner runner({});
  RecordingSink sink;
  std::atomic<bool> stop{false};
  TrialContext context = plain_context();
  context.stop = &stop;
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  const TrialSpec trial = long_trial(60);
  const TrialRow row = runner.run(trial, context, sink);
  signaller.join();
  EXPECT_EQ(status_of(row), "interrupted") << message_of(row);
  EXPECT_THAT(message_of(row), HasSubstr("interrupted: stopped at epoch"));
  EXPECT_LT(row.epochs_done, trial.epochs);
  EXPECT_LT(row.wall_seconds, 3.0) << "it stops at the next step, not at the end";
  EXPECT_FALSE(sink.sample_rows.empty()) << "what was measured is kept";
  EXPECT_GT(row.rss_peak, 0);
}

TEST(TrainingRunner, MissingDatasetFailsTheTrialAndTheNextOneRuns) {
  const TempDir empty;
  TrainingRunnerOptions options;
  options.data_dirs = {empty.path()};
  TrainingRunner runner(options);
  RecordingSink sink;
  TrialSpec mnist = synthetic_trial();
  mnist.dataset.kind = DatasetKind::mnist;
  const TrialRow failed = runner.run(mnist, plain_context(), sink);
  EXPECT_EQ(status_of(failed), "failed");
  EXPECT_THAT(message_of(failed), HasSubstr("mnist not found"));
  EXPECT_THAT(message_of(failed), HasSubstr(empty.path().string()));
  EXPECT_THAT(message_of(failed), Not(HasSubstr("\n")));
  EXPECT_EQ(failed.samples, 0U);
  EXPECT_TRUE(sink.sample_rows.empty());
  EXPECT_EQ(runner.dataset_loads(), 0U);

  const TrialRow next = runner.run(synthetic_trial(), plain_context(), sink);
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
  EXPECT_EQ(runner.dataset_loads(), 1U);
}

TEST(TrainingRunner, MalformedDatasetFilesFailTheTrialNamingTheFile) {
  const TempDir dir;
  for (const char* name :
       {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
    dir.write(std::string("mnist/") + name, "not an IDX file");
  TrainingRunnerOptions options;
  options.data_dirs = {dir.path()};
  TrainingRunner runner(options);
  RecordingSink sink;
  TrialSpec mnist = synthetic_trial();
  mnist.dataset.kind = DatasetKind::mnist;
  const TrialRow row = runner.run(mnist, plain_context(), sink);
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("-idx"));
  EXPECT_THAT(message_of(row), Not(HasSubstr("\n")));
}

TEST(TrainingRunner, HugeLearningRateDiverges) {
  TrainingRunner runner({});
  RecordingSink sink;
  TrialSpec trial = synthetic_trial({32}, 2, 16);
  trial.learning_rate = 1e30;
  const TrialRow row = runner.run(trial, plain_context(), sink);
  EXPECT_EQ(status_of(row), "diverged");
  EXPECT_THAT(message_of(row), HasSubstr("the training loss became"));
  EXPECT_EQ(row.epochs_done, 0);
  EXPECT_GT(row.rss_peak, 0) << "measured all the same";
}

// Two hidden layers of a million units: the parameters alone would take
// 4 TB, one allocation that cannot succeed (nothing is touched first), so
// the test never eats the machine's memory.
TEST(TrainingRunner, AllocationFailureFailsTheTrialWithAnOutOfMemoryMessage) {
  TrainingRunner runner({});
  RecordingSink sink;
  const TrialSpec impossible = synthetic_trial({kMaxLayerWidth, kMaxLayerWidth}, 1, 8);
  const TrialRow row = runner.run(impossible, plain_context(), sink);
  EXPECT_EQ(status_of(row), "failed");
  EXPECT_THAT(message_of(row), HasSubstr("out of memory (std::bad_alloc) while training (predicted "));
  EXPECT_GT(row.predicted_bytes, static_cast<std::int64_t>(kTiB));
  EXPECT_LT(row.rss_footprint, static_cast<std::int64_t>(1024 * kMiB)) << "nothing large was touched";

  const TrialRow next = runner.run(synthetic_trial(), plain_context(), sink);
  EXPECT_EQ(status_of(next), "ok") << message_of(next);
}

TEST(TrainingRunner, KeepsTheDatasetWhileTrialsUseTheSameSpec) {
  TrainingRunner runner({});
  RecordingSink sink;
  const TrialSpec a = synthetic_trial({32});
  const TrialSpec b = synthetic_trial({48});
  const TrialSpec other = synthetic_trial({32}, 2, 32, small_data(2));

  ASSERT_EQ(status_of(runner.run(a, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_loads(), 1U);
  EXPECT_GT(runner.last_timings().dataset_seconds, 0.0);
  ASSERT_EQ(status_of(runner.run(b, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_loads(), 1U) << "same spec: kept";
  EXPECT_EQ(runner.last_timings().dataset_seconds, 0.0);
  ASSERT_EQ(status_of(runner.run(other, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_loads(), 2U);
  ASSERT_EQ(status_of(runner.run(a, plain_context(), sink)), "ok");
  EXPECT_EQ(runner.dataset_loads(), 3U) << "only the last dataset is kept";
}

TEST(TrainingRunner, LimitsTheExamplesOfEachSplit) {
  TrainingRunnerOptions options;
  options.max_train_examples = 100;
  options.max_test_examples = 50;
  TrainingRunner runner(options);
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({32}, 1, 32);
  const TrialRow row = runner.run(trial, plain_context(), sink);
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  // The prediction is for the batches the trainer really prepares.
  EXPECT_EQ(row.predicted_bytes, static_cast<std::int64_t>(estimate_trial(trial, {100, 50}).total()));
  EXPECT_NE(row.predicted_bytes, static_cast<std::int64_t>(estimate_trial(trial, {1000, 200}).total()));
  // 50 test examples: the accuracy is a multiple of 1/50.
  EXPECT_NEAR(row.test_accuracy * 50.0, std::round(row.test_accuracy * 50.0), 1e-9);
}

TEST(TrainingRunner, FillsCounterColumnsInTheFilesOrder) {
  TrainingRunnerOptions options;
  options.counter_columns = {"PAPI_NOT_AN_EVENT", "perf::PAGE-FAULTS"};
  TrainingRunner runner(options);
  ASSERT_EQ(runner.counter_events().size(), 2U);
  EXPECT_FALSE(runner.counter_events()[0].available);
  // A software event: every Linux with perf_event_open has it, VMs included.
  ASSERT_TRUE(runner.counter_events()[1].available)
      << "perf::PAGE-FAULTS is not available here: " << runner.counter_events()[1].detail;
  RecordingSink sink;
  const TrialRow row = runner.run(synthetic_trial({256}), plain_context(), sink);
  ASSERT_EQ(status_of(row), "ok") << message_of(row);
  ASSERT_FALSE(sink.sample_rows.empty());
  for (const SampleRow& sample : sink.sample_rows) {
    EXPECT_EQ(sample.counters[0], -1) << "an event this rank could not open";
    EXPECT_GE(sample.counters[1], 0);
  }
  EXPECT_GT(sink.sample_rows.back().counters[1], 0) << "training faults pages in";
  EXPECT_GE(sink.sample_rows.back().counters[1], sink.sample_rows.front().counters[1]) << "counts since the start";
}

class ThrowingSink : public TrialSink {
 public:
  void samples(std::span<const SampleRow>) override { throw std::runtime_error("the sink is broken"); }
  void epoch(const EpochRow&) override { throw std::runtime_error("the sink is broken"); }
};

// A sink's failure is not the trial's: it leaves run(), and the runner is
// fine for the next trial (sampler stopped, nothing left over).
TEST(TrainingRunner, AFailingSinkThrowsAndTheRunnerRecovers) {
  TrainingRunner runner({});
  ThrowingSink broken;
  EXPECT_THROW(runner.run(synthetic_trial({32}, 3), plain_context(), broken), std::runtime_error);
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({48});
  const TrialRow row = runner.run(trial, plain_context(), sink);
  EXPECT_EQ(status_of(row), "ok") << message_of(row);
  ASSERT_FALSE(sink.sample_rows.empty());
  for (const SampleRow& sample : sink.sample_rows) EXPECT_EQ(get_fixed(sample.trial_id), trial.id);
  EXPECT_LT(sink.sample_rows.front().t, 0.1) << "the series starts with this trial";
}

TEST(TrainingRunner, RejectsABadSamplerInterval) {
  TrainingRunnerOptions options;
  options.sampler_interval = std::chrono::milliseconds(0);
  EXPECT_THROW(TrainingRunner{options}, std::invalid_argument);
}

// The runner's own cost per trial, around the training: printed for
// docs/runner.md and bounded loosely (a shared 2-core machine).
TEST(TrainingRunner, PerTrialOverheadIsSmall) {
  constexpr int kTrials = 7;
  TrainingRunner runner({});
  RecordingSink sink;
  const TrialSpec trial = synthetic_trial({32}, 1);
  ASSERT_EQ(status_of(runner.run(trial, plain_context(), sink)), "ok");  // loads the dataset, warms oneDNN up
  std::vector<double> setup;
  std::vector<double> teardown;
  for (int i = 0; i < kTrials; ++i) {
    ASSERT_EQ(status_of(runner.run(trial, plain_context(), sink)), "ok");
    setup.push_back(runner.last_timings().setup_seconds);
    teardown.push_back(runner.last_timings().teardown_seconds);
  }
  std::sort(setup.begin(), setup.end());
  std::sort(teardown.begin(), teardown.end());
  std::printf(
      "runner overhead per trial over %d trials: setup median %.2f ms (max %.2f), teardown median %.2f ms "
      "(max %.2f); training %.1f ms\n",
      kTrials, setup[kTrials / 2] * 1e3, setup.back() * 1e3, teardown[kTrials / 2] * 1e3, teardown.back() * 1e3,
      runner.last_timings().training_seconds * 1e3);
  EXPECT_LT(setup[kTrials / 2], 0.1);
  EXPECT_LT(teardown[kTrials / 2], 0.1);
}

}  // namespace
}  // namespace memsweep::testing
