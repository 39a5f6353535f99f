// The scheduler over real MPI, with the scripted runner: run by ctest under
// mpirun with 1, 2 and 4 ranks. Every test is collective: every rank calls
// run_sweep in the same order; only rank 0 sees the rows, so most checks
// are rank 0's. No ASSERT before a collective call: a rank that returned
// early would leave the others waiting.

#include "memsweep/error.hpp"
#include "memsweep/mpi_communicator.hpp"
#include "memsweep/results.hpp"
#include "memsweep/stop_signals.hpp"
#include "memsweep/sweep.hpp"
#include "support/time_scale.hpp"
#include "sweep/search_support.hpp"
#include "sweep/sweep_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Sets a flag after a delay, from a thread of its own (like a signal would).
class Timer {
 public:
  Timer(milliseconds delay, std::function<void()> action)
      : thread_([delay, action = std::move(action)] {
          std::this_thread::sleep_for(delay);
          action();
        }) {}
  ~Timer() { thread_.join(); }

 private:
  std::thread thread_;
};

class SweepOverMpi : public ::testing::Test {
 protected:
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  int workers() const { return std::max(size() - 1, 1); }
  bool is_rank_zero() const { return rank() == 0; }
  // The ranks that train.
  bool trains(int r) const { return size() == 1 || r != 0; }

  SweepResult run(const SweepTrials& trials, const PendingTrials& pending, FakeRunner& runner, MemorySink& sink,
                  const SweepOptions& options) {
    return run_sweep(*comm_, trials, pending, &runner, is_rank_zero() ? &sink : nullptr, options);
  }

  std::unique_ptr<Communicator> comm_ = make_mpi_communicator(MPI_COMM_WORLD);
};

TEST_F(SweepOverMpi, EveryPendingTrialGetsExactlyOneRow) {
  const std::vector<TrialSpec> trials = make_trials(12);
  std::vector<PendingTrial> pending;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    if (i == 5 || i == 7) continue;  // already done: must not run
    pending.push_back({.index = i, .attempt = static_cast<std::int32_t>(i % 2 == 0 ? 1 : 0)});
  }
  FakeRunner runner(Script{.duration = milliseconds(15), .sample_every = milliseconds(5)});
  MemorySink sink;
  SweepOptions options;
  options.run = 3;
  const SweepResult result = run(trials, pending, runner, sink, options);

  // Collective: how many trials each rank's runner ran.
  const std::vector<std::string> counts = comm_->all_gather(std::to_string(runner.contexts().size()));
  std::size_t total = 0;
  for (int r = 0; r < size(); ++r) {
    const std::size_t count = std::stoul(counts[static_cast<std::size_t>(r)]);
    total += count;
    if (!trains(r)) {
      EXPECT_EQ(count, 0U) << "rank 0 trains only when it is alone";
    }
  }
  EXPECT_EQ(total, pending.size());
  for (const TrialContext& context : runner.contexts()) {
    EXPECT_EQ(context.rank, rank());
    EXPECT_EQ(context.run, 3);
    EXPECT_EQ(context.host, comm_->host_name());
  }
  if (!is_rank_zero()) return;

  std::multiset<std::pair<std::string, std::int32_t>> expected, got;
  for (const PendingTrial& job : pending) expected.insert({trials[job.index].id, job.attempt});
  for (const TrialRow& row : sink.trials) {
    got.insert({get_fixed(row.trial_id), row.attempt});
    EXPECT_EQ(status_of(row), "ok");
    EXPECT_EQ(row.run, 3);
    EXPECT_TRUE(trains(row.rank)) << "row from rank " << row.rank;
    EXPECT_EQ(get_fixed(row.host), comm_->host_name());
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(sink.epochs.size(), pending.size());
  EXPECT_EQ(result.finished, pending.size());
  EXPECT_EQ(result.by_status.at("ok"), pending.size());
  EXPECT_EQ(result.not_started, 0U);
  EXPECT_FALSE(result.stopped);
}

TEST_F(SweepOverMpi, NothingPendingEndsAtOnce) {
  const std::vector<TrialSpec> trials = make_trials(3);
  FakeRunner runner;
  MemorySink sink;
  const auto start = Clock::now();
  const SweepResult result = run(trials, std::vector<PendingTrial>{}, runner, sink, {});
  EXPECT_LT(seconds_since(start), scaled_seconds(1.0));
  EXPECT_EQ(result.finished, 0U);
  EXPECT_TRUE(runner.contexts().empty());
  EXPECT_TRUE(sink.trials.empty());
}

// One long trial and many short ones: the worker that draws the long one
// runs fewer, and the sweep ends near the optimum; a static round-robin
// over the same trials (same run) does not.
TEST_F(SweepOverMpi, DynamicDispatchBalancesUnevenTrials) {
  const milliseconds kShort = scaled(milliseconds(60));
  constexpr int kShortsPerWorker = 6;
  const int shorts = kShortsPerWorker * std::max(workers() - 1, 1);
  const milliseconds long_trial = kShort * kShortsPerWorker;
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(1 + shorts));
  const std::vector<PendingTrial> pending = all_pending(trials.size());
  FakeRunner runner(Script{.duration = kShort});
  runner.script(trials[0].id, Script{.duration = long_trial});
  const double optimum = std::max(std::chrono::duration<double>(long_trial).count(),
                                  std::chrono::duration<double>(long_trial + kShort * shorts).count() / workers());

  MemorySink dynamic_sink;
  auto start = Clock::now();
  run(trials, pending, runner, dynamic_sink, {});
  const double dynamic_makespan = seconds_since(start);

  MemorySink static_sink;
  SweepOptions round_robin;
  round_robin.dispatch = Dispatch::static_round_robin;
  start = Clock::now();
  run(trials, pending, runner, static_sink, round_robin);
  const double static_makespan = seconds_since(start);
  if (!is_rank_zero()) return;

  std::cout << "makespan with " << workers() << " workers: dynamic " << dynamic_makespan << " s, static "
            << static_makespan << " s, optimum " << optimum << " s\n";
  ASSERT_EQ(dynamic_sink.trials.size(), trials.size());
  ASSERT_EQ(static_sink.trials.size(), trials.size());
  EXPECT_LT(dynamic_makespan, optimum * 1.2 + scaled_seconds(0.1));
  EXPECT_GE(dynamic_makespan, optimum * 0.95);

  // Static: trial k on worker 1 + k mod workers (rank 0 when alone).
  for (const TrialRow& row : static_sink.trials) {
    const auto k = static_cast<int>(std::find_if(trials.begin(), trials.end(),
                                                 [&](const TrialSpec& t) { return t.id == get_fixed(row.trial_id); }) -
                                    trials.begin());
    EXPECT_EQ(row.rank, size() == 1 ? 0 : 1 + k % workers()) << "trial " << k;
  }
  if (workers() < 2) return;

  std::map<int, int> trials_by_rank;
  int long_rank = -1;
  for (const TrialRow& row : dynamic_sink.trials) {
    ++trials_by_rank[row.rank];
    if (get_fixed(row.trial_id) == trials[0].id) long_rank = row.rank;
  }
  for (const auto& [worker, count] : trials_by_rank) {
    if (worker != long_rank) {
      EXPECT_LT(trials_by_rank[long_rank], count) << "rank " << worker;
    }
  }
  EXPECT_GT(static_makespan, dynamic_makespan * 1.3);
}

TEST_F(SweepOverMpi, FailuresAreRowsAndTheSweepGoesOn) {
  const std::vector<TrialSpec> trials = make_trials(10);
  FakeRunner runner;
  runner.script(trials[1].id, Script{.status = TrialStatus::failed, .message = "scripted failure"});
  runner.script(trials[2].id, Script{.throws = Throws::runtime_error});
  runner.script(trials[3].id, Script{.throws = Throws::bad_alloc});
  runner.script(trials[4].id, Script{.status = TrialStatus::diverged, .message = "loss is nan"});
  MemorySink sink;
  const SweepResult result = run(trials, all_pending(trials.size()), runner, sink, {});
  if (!is_rank_zero()) return;

  ASSERT_EQ(sink.trials.size(), trials.size());
  std::map<std::string, TrialRow> by_id;
  for (const TrialRow& row : sink.trials) by_id[get_fixed(row.trial_id)] = row;
  EXPECT_EQ(status_of(by_id[trials[1].id]), "failed");
  EXPECT_EQ(get_fixed(by_id[trials[1].id].message), "scripted failure");
  EXPECT_EQ(status_of(by_id[trials[2].id]), "failed");
  EXPECT_EQ(get_fixed(by_id[trials[2].id].message), "scripted throw");
  EXPECT_EQ(status_of(by_id[trials[3].id]), "failed");
  EXPECT_THAT(get_fixed(by_id[trials[3].id].message), HasSubstr("out of memory"));
  EXPECT_TRUE(trains(by_id[trials[3].id].rank)) << "a thrown trial's row still says where it ran";
  EXPECT_EQ(status_of(by_id[trials[4].id]), "diverged");
  EXPECT_EQ(result.by_status.at("ok"), 6U);
  EXPECT_EQ(result.by_status.at("failed"), 3U);
  EXPECT_EQ(result.by_status.at("diverged"), 1U);
  EXPECT_EQ(result.finished, trials.size());
}

TEST_F(SweepOverMpi, AMessageLongerThanTheRowsColumnReachesRankZeroWhole) {
  const std::vector<TrialSpec> trials = make_trials(3);
  // Multi-byte characters across bytes 256 and 512, and a few kilobytes.
  const std::string whole = std::string(255, 'a') + "é" + std::string(254, 'b') + "😀" + std::string(3000, 'c');
  FakeRunner runner;
  runner.script(trials[1].id, Script{.status = TrialStatus::failed, .message = whole});
  MemorySink sink;
  run(trials, all_pending(trials.size()), runner, sink, {});
  if (!is_rank_zero()) return;

  ASSERT_EQ(sink.trials.size(), trials.size());
  ASSERT_EQ(sink.messages.size(), trials.size());
  for (std::size_t i = 0; i < sink.trials.size(); ++i) {
    const bool long_one = get_fixed(sink.trials[i].trial_id) == trials[1].id;
    EXPECT_EQ(sink.messages[i], long_one ? whole : "") << get_fixed(sink.trials[i].trial_id);
    if (long_one) {
      EXPECT_EQ(get_fixed(sink.trials[i].message), std::string(255, 'a'));
    }
  }
}

// A trial longer than the flush interval: rank 0 sees its samples while it
// runs, all of them, in order, and before its row. The burst at the start
// is more than one message holds.
TEST_F(SweepOverMpi, SamplesStreamWhileTheTrialRuns) {
  const milliseconds kTrial = scaled(milliseconds(900));
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(workers()));
  FakeRunner runner(Script{.duration = kTrial, .sample_every = milliseconds(5), .burst = 5000});
  MemorySink sink;
  SweepOptions options;
  options.flush_interval = milliseconds(100);
  run(trials, all_pending(trials.size()), runner, sink, options);
  if (!is_rank_zero()) return;

  ASSERT_EQ(sink.trials.size(), trials.size());
  for (const TrialRow& row : sink.trials) {
    const std::string id = get_fixed(row.trial_id);
    std::optional<Clock::time_point> first_sample, record;
    std::size_t samples = 0;
    bool epoch_before_record = false;
    for (const MemorySink::Arrival& arrival : sink.arrivals) {
      if (arrival.trial_id != id) continue;
      if (arrival.kind == MemorySink::Arrival::Kind::samples) {
        EXPECT_FALSE(record) << "a sample of " << id << " arrived after its row";
        if (!first_sample) first_sample = arrival.when;
        ++samples;
      } else if (arrival.kind == MemorySink::Arrival::Kind::epoch) {
        epoch_before_record = !record;
      } else {
        record = arrival.when;
      }
    }
    EXPECT_EQ(samples, row.samples) << "every sample streamed reaches rank 0";
    EXPECT_GT(row.samples, 5000U + 100U);
    EXPECT_TRUE(epoch_before_record);
    ASSERT_TRUE(first_sample && record);
    EXPECT_GT(std::chrono::duration<double>(*record - *first_sample).count(), scaled_seconds(0.5))
        << "samples arrived only at the end of the trial";
    double last_t = -1.0;
    for (const SampleRow& sample : sink.sample_rows) {
      if (get_fixed(sample.trial_id) != id) continue;
      EXPECT_GE(sample.t, last_t);
      last_t = sample.t;
    }
  }
}

TEST_F(SweepOverMpi, StopOnRankZeroInterruptsTheRunningTrials) {
  // The stop lands inside the first round of trials, with time to spare
  // for rank 0's stop check (every 100 ms) on a loaded machine: a stop
  // between two rounds would find no trial running.
  const milliseconds kTrial = scaled(milliseconds(600));
  const milliseconds kStopAt = scaled(milliseconds(200));
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(6 * workers()));
  FakeRunner runner(Script{.duration = kTrial});
  MemorySink sink;
  std::atomic<bool> stop{false};
  SweepOptions options;
  if (is_rank_zero()) options.stop = &stop;
  const auto start = Clock::now();
  SweepResult result;
  {
    const Timer timer(kStopAt, [&] { stop = true; });
    result = run(trials, all_pending(trials.size()), runner, sink, options);
  }
  const double elapsed = seconds_since(start);
  if (!is_rank_zero()) return;

  EXPECT_TRUE(result.stopped);
  EXPECT_LT(elapsed, scaled_seconds(0.2 + 0.5)) << "the sweep took long to stop";
  EXPECT_EQ(result.finished, sink.trials.size());
  EXPECT_EQ(result.finished + result.not_started, trials.size());
  EXPECT_GT(result.not_started, 0U);
  std::size_t interrupted = 0;
  for (const TrialRow& row : sink.trials) {
    const std::string status = status_of(row);
    EXPECT_TRUE(status == "ok" || status == "interrupted") << status;
    if (status == "interrupted") {
      ++interrupted;
      EXPECT_LT(row.wall_seconds, scaled_seconds(0.6)) << "an interrupted trial ran to its end";
    }
  }
  EXPECT_GE(interrupted, 1U);
  EXPECT_EQ(result.by_status["interrupted"], interrupted);
}

TEST_F(SweepOverMpi, StopBeforeTheStartRunsNothing) {
  const std::vector<TrialSpec> trials = make_trials(5);
  FakeRunner runner;
  MemorySink sink;
  std::atomic<bool> stop{true};
  SweepOptions options;
  options.stop = &stop;
  const SweepResult result = run(trials, all_pending(trials.size()), runner, sink, options);
  EXPECT_TRUE(runner.contexts().empty());
  EXPECT_TRUE(result.stopped);
  if (!is_rank_zero()) return;
  EXPECT_TRUE(sink.trials.empty());
  EXPECT_EQ(result.not_started, trials.size());
}

// Stopped, then resumed over what plan_resume says is left: every trial
// ends with exactly one final row, the interrupted ones as attempt 1.
TEST_F(SweepOverMpi, ResumeCompletesAStoppedSweep) {
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(5 * workers()));
  FakeRunner runner(Script{.duration = scaled(milliseconds(130))});
  MemorySink sink;
  std::atomic<bool> stop{false};
  SweepOptions first;
  if (is_rank_zero()) first.stop = &stop;
  {
    const Timer timer(scaled(milliseconds(200)), [&] { stop = true; });
    run(trials, all_pending(trials.size()), runner, sink, first);
  }

  std::vector<PendingTrial> left;
  std::size_t stopped_rows = 0;
  if (is_rank_zero()) {
    const ResumePlan plan = plan_resume(trials, sink.trials, {}, 0, 1, LostAttempts::rank_died);
    left = plan.pending.expand(trials);
    stopped_rows = sink.trials.size();
    EXPECT_EQ(plan.already_final + left.size(), trials.size());
    EXPECT_GT(left.size(), 0U);
  }
  SweepOptions second;
  second.run = 1;
  const SweepResult result = run(trials, left, runner, sink, second);
  if (!is_rank_zero()) return;

  EXPECT_FALSE(result.stopped);
  EXPECT_EQ(result.finished, left.size());
  std::map<std::string, int> final_rows;
  for (const TrialRow& row : sink.trials) {
    const std::string status = status_of(row);
    if (status == "ok") ++final_rows[get_fixed(row.trial_id)];
    if (status == "interrupted") {
      EXPECT_EQ(row.attempt, 0);
      EXPECT_EQ(row.run, 0);
    }
  }
  for (std::size_t i = stopped_rows; i < sink.trials.size(); ++i) {
    EXPECT_EQ(sink.trials[i].run, 1);
    const bool was_interrupted =
        std::any_of(sink.trials.begin(), sink.trials.begin() + static_cast<std::ptrdiff_t>(stopped_rows),
                    [&](const TrialRow& row) { return row.trial_id == sink.trials[i].trial_id; });
    EXPECT_EQ(sink.trials[i].attempt, was_interrupted ? 1 : 0);
  }
  EXPECT_EQ(final_rows.size(), trials.size());
  for (const auto& [id, count] : final_rows) EXPECT_EQ(count, 1) << id;
}

// ---- searches ([search]) --------------------------------------------------

// The ids of the rows that are results (not interrupted): what ran to its end.
std::vector<std::string> finished_ids(const std::vector<TrialRow>& rows) {
  std::vector<std::string> ids;
  for (const TrialRow& row : rows)
    if (status_of(row) != "interrupted") ids.push_back(get_fixed(row.trial_id));
  return ids;
}

class SearchesOverMpi : public SweepOverMpi {
 protected:
  SweepResult run_search(const SweepSpec& sweep, CurveRunner& runner, MemorySink& sink, SweepOptions options) {
    options.search = &*sweep.search;
    if (!is_rank_zero()) options.search_history = nullptr;
    return run_sweep(*comm_, sweep.trials, {}, &runner, is_rank_zero() ? &sink : nullptr, options);
  }
};

TEST_F(SearchesOverMpi, EverySearchEndsWithAVerifiedAnswer) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = [\"100MiB\", \"300MiB\"]\nresolution = 0.02");
  const Curve curve;
  CurveRunner runner(curve);
  MemorySink sink;
  run_search(sweep, runner, sink, {});
  if (is_rank_zero()) expect_found_answers(sink.searches, sink.trials, finished_ids(sink.trials), sweep, curve);
}

// With fewer searches than workers, one search's probes run at once.
TEST_F(SearchesOverMpi, OneSearchKeepsSeveralWorkersBusy) {
  const SweepSpec sweep = search_sweep(
      "axis = \"batch_size\"\nrange = [8, 65536]\nlimit = \"300MiB\"\nstrategy = \"bisect\"\nresolution = "
      "0.01\nmax_trials = 40",
      "learning_rate = [0.01]");
  const Curve curve;
  CurveRunner runner(curve, scaled(milliseconds(60)));
  MemorySink sink;
  run_search(sweep, runner, sink, {});
  if (!is_rank_zero()) return;
  expect_found_answers(sink.searches, sink.trials, finished_ids(sink.trials), sweep, curve);
  // The most probes that ran at the same time.
  std::size_t most = 0;
  for (const TrialRow& row : sink.trials) {
    const double middle = (row.start_time + row.end_time) / 2;
    most = std::max<std::size_t>(most, static_cast<std::size_t>(std::count_if(
                                           sink.trials.begin(), sink.trials.end(), [&](const TrialRow& other) {
                                             return other.start_time <= middle && middle <= other.end_time;
                                           })));
  }
  if (workers() >= 3) {
    EXPECT_GE(most, 3U) << "one search on " << workers() << " workers";
  }
  if (size() == 1) {
    EXPECT_EQ(most, 1U);
  }
}

TEST_F(SearchesOverMpi, AStoppedSearchSweepResumesToTheSameAnswersRunningNoProbeTwice) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = [\"100MiB\", \"300MiB\"]\nresolution = 0.02");
  const Curve curve;
  CurveRunner runner(curve, scaled(milliseconds(30)));
  MemorySink whole;
  run_search(sweep, runner, whole, {});

  MemorySink sink;
  std::atomic<bool> stop{false};
  SweepOptions first;
  if (is_rank_zero()) first.stop = &stop;
  SweepResult stopped;
  {
    const Timer timer(scaled(milliseconds(150)), [&] { stop = true; });
    stopped = run_search(sweep, runner, sink, first);
  }
  SearchHistory history;
  std::size_t rows_before = 0;
  if (is_rank_zero()) {
    EXPECT_TRUE(stopped.stopped);
    history = search_history(sink.trials, {}, sink.searches);
    rows_before = sink.trials.size();
  }
  SweepOptions second;
  second.run = 1;
  second.search_history = &history;
  const SweepResult resumed = run_search(sweep, runner, sink, second);
  if (!is_rank_zero()) return;
  EXPECT_FALSE(resumed.stopped);
  EXPECT_LT(rows_before, sink.trials.size()) << "the stop left searches to finish";
  expect_found_answers(sink.searches, sink.trials, finished_ids(sink.trials), sweep, curve);
  for (const SearchRow& row : sink.searches) {
    const auto same = std::find_if(whole.searches.begin(), whole.searches.end(),
                                   [&](const SearchRow& other) { return other.search == row.search; });
    ASSERT_NE(same, whole.searches.end());
    EXPECT_NEAR(static_cast<double>(row.fits), static_cast<double>(same->fits),
                0.02 * static_cast<double>(same->fits) + 1)
        << "search " << row.search;
  }
}

// A real signal on every rank (as mpirun forwards SIGUSR1 from Slurm). The
// flag stays set for the rest of the process: no other test here uses it.
TEST_F(SweepOverMpi, SignalStopsEveryRank) {
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(3 * workers()));
  FakeRunner runner(Script{.duration = scaled(milliseconds(2000))});
  MemorySink sink;
  SweepOptions options;
  options.stop = &install_stop_signals();
  const auto start = Clock::now();
  SweepResult result;
  {
    const Timer timer(scaled(milliseconds(300)), [] { ::kill(::getpid(), SIGUSR1); });
    result = run(trials, all_pending(trials.size()), runner, sink, options);
  }
  const double elapsed = seconds_since(start);
  EXPECT_EQ(stop_signal_number(), SIGUSR1);
  EXPECT_TRUE(result.stopped);
  EXPECT_LT(elapsed, scaled_seconds(1.5));
  if (!is_rank_zero()) return;

  ASSERT_EQ(sink.trials.size(), static_cast<std::size_t>(workers())) << "each worker had one trial running";
  for (const TrialRow& row : sink.trials) EXPECT_EQ(status_of(row), "interrupted");
  EXPECT_EQ(result.not_started, trials.size() - sink.trials.size());
  EXPECT_EQ(result.by_status["interrupted"], sink.trials.size());
}

// Rank 0's sink fails (disk full): the workers are stopped and return, and
// rank 0 rethrows once they have.
TEST_F(SweepOverMpi, SinkFailureEndsEveryRankAndIsRethrownOnRankZero) {
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(4 * workers()));
  FakeRunner runner(Script{.duration = scaled(milliseconds(100))});
  MemorySink sink;
  sink.fail_from_trial(2);
  const auto start = Clock::now();
  if (is_rank_zero()) {
    try {
      run(trials, all_pending(trials.size()), runner, sink, {});
      ADD_FAILURE() << "the sink's failure did not reach rank 0";
    } catch (const std::runtime_error& error) {
      EXPECT_STREQ(error.what(), "disk full");
    }
    EXPECT_EQ(sink.trials.size(), 1U);
  } else {
    const SweepResult result = run(trials, all_pending(trials.size()), runner, sink, {});
    EXPECT_LE(result.finished, 2U);
  }
  EXPECT_LT(seconds_since(start), scaled_seconds(1.5));
}

// Rank 0 waits for workers in Communicator::receive, which sleeps: its CPU
// time over a sweep of sleeping trials is a small part of the wall time.
// The issue asks for under 2% (measured in docs/sweep.md); the bound here
// is loose because this VM is shared.
TEST_F(SweepOverMpi, RankZeroWaitsWithoutSpinning) {
  // With one rank there is no waiting coordinator; ctest runs this binary
  // with 2 and 4 ranks too, where this test runs.
  if (size() == 1) GTEST_SKIP() << "rank 0 trains when it is alone";
  const std::vector<TrialSpec> trials = make_trials(static_cast<std::size_t>(3 * workers()));
  FakeRunner runner(Script{.duration = scaled(milliseconds(400))});
  MemorySink sink;
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const auto start = Clock::now();
  run(trials, all_pending(trials.size()), runner, sink, {});
  const double wall = seconds_since(start);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  if (!is_rank_zero()) return;
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  const double cpu =
      seconds(after.ru_utime) - seconds(before.ru_utime) + seconds(after.ru_stime) - seconds(before.ru_stime);
  const double percent = 100.0 * cpu / wall;
  std::cout << "rank 0 CPU while waiting: " << percent << "% of a core (" << cpu << " s over " << wall << " s)\n";
  RecordProperty("rank0_cpu_percent", std::to_string(percent));
  EXPECT_LT(percent, 10.0);
}

TEST_F(SweepOverMpi, CheckSameSweepNamesTheRanksThatDiffer) {
  EXPECT_NO_THROW(check_same_sweep(*comm_, "0123456789abcdef"));
  if (size() == 1) return;
  const std::string hash = rank() == size() - 1 ? "fedcba9876543210" : "0123456789abcdef";
  try {
    check_same_sweep(*comm_, hash);
    ADD_FAILURE() << "no error on rank " << rank();
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(), HasSubstr("rank " + std::to_string(size() - 1) + " has fedcba9876543210"));
    EXPECT_THAT(error.what(), HasSubstr("rank 0 has sweep hash 0123456789abcdef"));
  }
}

}  // namespace
}  // namespace memsweep::testing
