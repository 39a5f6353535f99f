// The one-rank sweep without MPI (the serial communicator): what `memsweep
// run` does when started without mpirun.

#include "memsweep/sweep.hpp"
#include "sweep/sweep_support.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace memsweep::testing {
namespace {

TEST(SerialCommunicator, IsOneRankWithNobodyToTalkTo) {
  const auto comm = make_serial_communicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->all_gather("x"), std::vector<std::string>{"x"});
  std::string value = "kept";
  comm->broadcast(value);
  EXPECT_EQ(value, "kept");
  EXPECT_FALSE(comm->host_name().empty());
  EXPECT_EQ(comm->library_version(), "none (serial)");
  EXPECT_THROW(comm->send(0, 1, {}), std::logic_error);
  EXPECT_THROW(comm->receive(kAnySource, milliseconds(0)), std::logic_error);
}

TEST(SerialSweep, RunsEveryPendingTrialInTurnAndWritesItsRows) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(4);
  FakeRunner runner(Script{.duration = milliseconds(10), .sample_every = milliseconds(2)});
  MemorySink sink;
  const std::vector<PendingTrial> pending{{.index = 3, .attempt = 2}, {.index = 1, .attempt = 0}};
  const SweepResult result = run_sweep(*comm, trials, pending, &runner, &sink, {});
  ASSERT_EQ(sink.trials.size(), 2U);
  EXPECT_EQ(get_fixed(sink.trials[0].trial_id), trials[3].id);
  EXPECT_EQ(sink.trials[0].attempt, 2);
  EXPECT_EQ(get_fixed(sink.trials[1].trial_id), trials[1].id);
  EXPECT_EQ(sink.trials[0].rank, 0);
  EXPECT_EQ(get_fixed(sink.trials[0].host), comm->host_name());
  EXPECT_EQ(sink.sample_rows.size(), runner.samples_sent());
  EXPECT_EQ(sink.epochs.size(), 2U);
  EXPECT_EQ(result.finished, 2U);
  EXPECT_EQ(result.by_status.at("ok"), 2U);
}

TEST(SerialSweep, SamplesAreWrittenDuringTheTrial) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(1);
  FakeRunner runner(Script{.duration = milliseconds(500), .sample_every = milliseconds(5)});
  MemorySink sink;
  SweepOptions options;
  options.flush_interval = milliseconds(50);
  run_sweep(*comm, trials, all_pending(1), &runner, &sink, options);
  ASSERT_FALSE(sink.arrivals.empty());
  ASSERT_EQ(sink.arrivals.back().kind, MemorySink::Arrival::Kind::trial);
  EXPECT_EQ(sink.arrivals.front().kind, MemorySink::Arrival::Kind::samples);
  EXPECT_GT(std::chrono::duration<double>(sink.arrivals.back().when - sink.arrivals.front().when).count(), 0.3);
}

TEST(SerialSweep, ASinkFailureStopsTheTrialAndIsRethrown) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(2);
  FakeRunner runner(Script{.duration = milliseconds(5000), .sample_every = milliseconds(5)});
  struct FailingSink final : ResultSink {
    void samples(std::span<const SampleRow>) override { throw std::runtime_error("disk full"); }
    void epoch(const EpochRow&) override {}
    void trial(const TrialRow&, const std::string&) override { ADD_FAILURE() << "no row after the sink failed"; }
  } sink;
  SweepOptions options;
  options.flush_interval = milliseconds(50);
  const auto start = Clock::now();
  EXPECT_THROW(run_sweep(*comm, trials, all_pending(2), &runner, &sink, options), std::runtime_error);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 1.0) << "the trial was not stopped";
  EXPECT_EQ(runner.contexts().size(), 1U);
}

TEST(SerialSweep, StopEndsTheRunningTrialAndCountsTheRest) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(5);
  FakeRunner runner(Script{.duration = milliseconds(100)});
  MemorySink sink;
  std::atomic<bool> stop{false};
  SweepOptions options;
  options.stop = &stop;
  std::thread timer([&] {
    std::this_thread::sleep_for(milliseconds(150));
    stop = true;
  });
  const SweepResult result = run_sweep(*comm, trials, all_pending(5), &runner, &sink, options);
  timer.join();
  EXPECT_TRUE(result.stopped);
  ASSERT_EQ(sink.trials.size(), 2U);
  EXPECT_EQ(status_of(sink.trials[0]), "ok");
  EXPECT_EQ(status_of(sink.trials[1]), "interrupted");
  EXPECT_EQ(result.not_started, 3U);
}

TEST(SerialSweep, ARunnerReturningAnotherTrialsRowIsThatTrialsFailure) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(2);
  struct WrongRunner final : TrialRunner {
    std::vector<TrialSpec> all;
    TrialRecord run(const TrialSpec&, const TrialContext& context, TrialSink&) override {
      return TrialRecord{trial_row_for(all[0], context.attempt), {}};
    }
  } runner;
  runner.all = trials;
  MemorySink sink;
  run_sweep(*comm, trials, std::vector<PendingTrial>{{.index = 1}}, &runner, &sink, {});
  ASSERT_EQ(sink.trials.size(), 1U);
  EXPECT_EQ(get_fixed(sink.trials[0].trial_id), trials[1].id);
  EXPECT_EQ(status_of(sink.trials[0]), "failed");
  EXPECT_THAT(get_fixed(sink.trials[0].message), ::testing::HasSubstr(trials[0].id));
  EXPECT_THAT(sink.messages[0], ::testing::HasSubstr(trials[0].id));
}

TEST(SerialSweep, MissingRunnerOrSinkIsAProgrammingError) {
  const auto comm = make_serial_communicator();
  const std::vector<TrialSpec> trials = make_trials(1);
  FakeRunner runner;
  MemorySink sink;
  EXPECT_THROW(run_sweep(*comm, trials, all_pending(1), nullptr, &sink, {}), std::invalid_argument);
  EXPECT_THROW(run_sweep(*comm, trials, all_pending(1), &runner, nullptr, {}), std::invalid_argument);
}

}  // namespace
}  // namespace memsweep::testing
