// The scheduler's ranks as threads (thread_communicator.hpp): a whole sweep
// in one process, and the coordinator's and the worker's answers to a peer
// that breaks the protocol, played by hand on the other side.

#include "support/time_scale.hpp"
#include "sweep/protocol.hpp"
#include "sweep/sweep_support.hpp"
#include "sweep/thread_communicator.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace memsweep::testing {
namespace {

using sweep::detail::Assignment;
using sweep::detail::payload_of;
using sweep::detail::record_payload;
using sweep::detail::send_empty;
namespace tag = sweep::detail::tag;

constexpr std::chrono::milliseconds kLongWait{5000};

// Rank 0's side of a sweep over `trials`, every trial pending.
std::function<void(Communicator&)> coordinator(const std::vector<TrialSpec>& trials, MemorySink& sink) {
  return
      [&trials, &sink](Communicator& comm) { run_sweep(comm, trials, all_pending(trials.size()), nullptr, &sink, {}); };
}

// A worker's side of a sweep over `trials`.
std::function<void(Communicator&)> worker(const std::vector<TrialSpec>& trials, FakeRunner& runner) {
  return [&trials, &runner](Communicator& comm) { run_sweep(comm, trials, {}, &runner, nullptr, {}); };
}

Message expect_message(Communicator& comm, int tag) {
  std::optional<Message> message = comm.receive(0, kLongWait);
  if (!message) throw std::runtime_error("no message from rank 0");
  if (message->tag != tag) throw std::runtime_error("rank 0 sent " + sweep::detail::tag_name(message->tag));
  return std::move(*message);
}

// A worker's first steps by hand: REQUEST, and rank 0's ASSIGN.
void take_a_trial(Communicator& comm) {
  send_empty(comm, 0, tag::kRequest);
  expect_message(comm, tag::kAssign);
}

// throw_bad_payload's message.
std::string bad_payload(const std::string& what, int from, std::size_t bytes, std::size_t item_size) {
  return "sweep protocol: " + what + " from rank " + std::to_string(from) + " holds " + std::to_string(bytes) +
         " bytes, which does not fit " + std::to_string(item_size) +
         "-byte items (are all ranks running the same memsweep build?)";
}

TrialRecord record_for(const std::string& trial_id) {
  TrialRecord record;
  set_fixed(record.row.trial_id, trial_id);
  set_fixed(record.row.status, "ok");
  record.message = "done";
  return record;
}

TEST(ThreadCommunicator, DeliversInOrderAndGathersInRankOrder) {
  ThreadGroup group(3);
  std::vector<std::string> gathered(3);
  std::vector<std::string> broadcast(3);
  std::vector<std::vector<int>> tags_seen(3);
  const auto errors = group.run_on_every_rank([&](Communicator& comm) {
    const auto r = static_cast<std::size_t>(comm.rank());
    if (comm.rank() != 0)
      for (const int message_tag : {7, 8}) comm.send(0, message_tag, {});
    else
      for (int k = 0; k < 4; ++k) tags_seen[r].push_back(comm.receive(kAnySource, kLongWait)->tag);
    // Nothing more, checked while every rank is still in the group (after
    // the broadcast a rank that has returned makes the receive throw).
    if (comm.rank() == 0) {
      EXPECT_FALSE(comm.receive(kAnySource, std::chrono::milliseconds(1)).has_value());
    }
    const std::vector<std::string> all = comm.all_gather("r" + std::to_string(comm.rank()));
    gathered[r] = all[0] + all[1] + all[2];
    std::string value = comm.rank() == 0 ? "from zero" : "ignored";
    comm.broadcast(value);
    broadcast[r] = value;
  });
  for (const auto& error : errors) EXPECT_EQ(message_of(error), "");
  EXPECT_EQ(std::multiset<int>(tags_seen[0].begin(), tags_seen[0].end()), (std::multiset<int>{7, 7, 8, 8}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(gathered[static_cast<std::size_t>(r)], "r0r1r2");
    EXPECT_EQ(broadcast[static_cast<std::size_t>(r)], "from zero");
  }
}

TEST(SweepOverThreads, EveryTrialRunsOnceOnTheWorkersAndRankZeroWritesIt) {
  const std::vector<TrialSpec> trials = make_trials(6);
  FakeRunner runner(Script{.duration = milliseconds(5), .sample_every = milliseconds(1)});
  MemorySink sink;
  ThreadGroup group(3);
  const auto errors = group.run({coordinator(trials, sink), worker(trials, runner), worker(trials, runner)});
  for (const auto& error : errors) EXPECT_EQ(message_of(error), "");
  ASSERT_EQ(sink.trials.size(), 6U);
  std::set<std::string> ids;
  for (const TrialRow& row : sink.trials) {
    ids.insert(get_fixed(row.trial_id));
    EXPECT_NE(row.rank, 0) << "rank 0 never trains when there are workers";
  }
  EXPECT_EQ(ids.size(), 6U);
  EXPECT_EQ(sink.sample_rows.size(), runner.samples_sent());
}

TEST(CoordinatorProtocol, AMessageOnlyRankZeroSendsIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  MemorySink sink;
  ThreadGroup group(2);
  const auto errors =
      group.run({coordinator(trials, sink), [](Communicator& comm) { send_empty(comm, 0, tag::kAssign); }});
  EXPECT_EQ(message_of(errors[0]), "sweep protocol: rank 0 got ASSIGN from rank 1");
  EXPECT_EQ(message_of(errors[1]), "");
}

TEST(CoordinatorProtocol, AnUnknownTagIsNamedByItsNumber) {
  const std::vector<TrialSpec> trials = make_trials(1);
  MemorySink sink;
  ThreadGroup group(2);
  const auto errors = group.run({coordinator(trials, sink), [](Communicator& comm) { send_empty(comm, 0, 99); }});
  EXPECT_EQ(message_of(errors[0]), "sweep protocol: rank 0 got an unknown message (tag 99) from rank 1");
}

TEST(CoordinatorProtocol, ARowForAnotherTrialThanTheOneAssignedIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  MemorySink sink;
  ThreadGroup group(2);
  const auto errors = group.run({coordinator(trials, sink), [](Communicator& comm) {
                                   take_a_trial(comm);
                                   comm.send(0, tag::kRecord, record_payload(record_for("not-a-trial")));
                                 }});
  EXPECT_EQ(message_of(errors[0]),
            "sweep protocol: rank 1 sent a row for trial not-a-trial, but it was running trial " + trials[0].id);
  EXPECT_EQ(message_of(errors[1]), "");
  EXPECT_TRUE(sink.trials.empty()) << "nothing written for the stray row";
}

TEST(CoordinatorProtocol, ARowFromAWorkerWithoutATrialIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  MemorySink sink;
  ThreadGroup group(2);
  const auto errors = group.run({coordinator(trials, sink), [&](Communicator& comm) {
                                   comm.send(0, tag::kRecord, record_payload(record_for(trials[0].id)));
                                 }});
  EXPECT_EQ(message_of(errors[0]),
            "sweep protocol: rank 1 sent a row for trial " + trials[0].id + ", but it was running none");
}

TEST(CoordinatorProtocol, AMalformedPayloadIsAProtocolErrorNamingItsSize) {
  const std::vector<TrialSpec> trials = make_trials(1);
  MemorySink sink;
  ThreadGroup group(2);
  const std::vector<std::byte> three_bytes(3);
  const auto errors =
      group.run({coordinator(trials, sink), [&](Communicator& comm) { comm.send(0, tag::kSamples, three_bytes); }});
  EXPECT_EQ(message_of(errors[0]), bad_payload("SAMPLES", 1, 3, sizeof(SampleRow)));
}

TEST(CoordinatorProtocol, ARecordShorterThanARowIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(1);
  MemorySink sink;
  ThreadGroup group(2);
  const std::vector<std::byte> short_record(sizeof(TrialRow) - 1);
  const auto errors = group.run({coordinator(trials, sink), [&](Communicator& comm) {
                                   take_a_trial(comm);
                                   comm.send(0, tag::kRecord, short_record);
                                 }});
  EXPECT_EQ(message_of(errors[0]), bad_payload("RECORD", 1, sizeof(TrialRow) - 1, sizeof(TrialRow)));
}

// A worker that leaves mid-trial (its process ended): rank 0 does not wait
// for its row for ever; the communicator's error ends rank 0's sweep, and
// nothing is written for the lost trial.
TEST(CoordinatorProtocol, AWorkerThatLeavesMidTrialEndsRankZerosSweepWithTheCommunicatorsError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  MemorySink sink;
  ThreadGroup group(2);
  const auto errors = group.run({coordinator(trials, sink), [](Communicator& comm) { take_a_trial(comm); }});
  EXPECT_EQ(message_of(errors[0]), "thread communicator: rank 0 waits for rank 1, which has left");
  EXPECT_TRUE(sink.trials.empty());
}

// One of two workers leaves: rank 0 ends with the error naming it, and
// what it wrote came from the worker that stayed, every row whole.
TEST(CoordinatorProtocol, AWorkerThatLeavesEarlyIsNamedAndTheOtherWorkersRowsStand) {
  const std::vector<TrialSpec> trials = make_trials(4);
  FakeRunner runner(Script{.duration = milliseconds(5)});
  MemorySink sink;
  ThreadGroup group(3);
  const auto errors =
      group.run({coordinator(trials, sink), worker(trials, runner), [](Communicator& comm) { take_a_trial(comm); }});
  EXPECT_EQ(message_of(errors[0]), "thread communicator: rank 0 waits for rank 2, which has left");
  for (const TrialRow& row : sink.trials) EXPECT_EQ(row.rank, 1);
  EXPECT_EQ(message_of(errors[1]), "thread communicator: rank 1 waits for rank 0, which has left")
      << "the remaining worker does not wait for ever either";
}

// A worker that falls silent mid-trial (as one stopped with SIGSTOP): rank
// 0 gives it up once its silence and the trial's time pass the grace,
// records its attempt `interrupted` from the samples it had sent, runs the
// trial again on the other worker, ignores what the silent one sends late,
// and finishes the sweep naming the silent rank.
TEST(SilentWorker, IsGivenUpItsTrialRecordedInterruptedAndRunAgainElsewhere) {
  const std::vector<TrialSpec> trials = make_trials(3);
  // The live worker streams samples every 20 ms: far more often than the
  // grace, which is shorter than ALIVE's second here.
  FakeRunner runner(Script{.duration = scaled(milliseconds(300)), .sample_every = milliseconds(5)});
  MemorySink sink;
  SweepOptions options;
  options.worker_silence = scaled(milliseconds(150));
  options.flush_interval = milliseconds(20);
  SweepResult result;
  std::string silent_trial;
  ThreadGroup group(3);
  const auto errors = group.run({
      [&](Communicator& comm) {
        result = run_sweep(comm, trials, all_pending(trials.size()), nullptr, &sink, options);
      },
      [&](Communicator& comm) { run_sweep(comm, trials, {}, &runner, nullptr, options); },
      [&](Communicator& comm) {
        // Takes a trial, sends three of its samples, then nothing for twice
        // the grace; then its late row, which must change nothing.
        send_empty(comm, 0, tag::kRequest);
        const Message assigned = expect_message(comm, tag::kAssign);
        const Assignment job = sweep::detail::decode_assignment(
            std::string_view(reinterpret_cast<const char*>(assigned.bytes.data()), assigned.bytes.size()));
        silent_trial = trials[job.index].id;
        std::vector<SampleRow> samples(3);
        for (std::size_t i = 0; i < samples.size(); ++i) {
          set_fixed(samples[i].trial_id, silent_trial);
          samples[i].attempt = job.attempt;
          samples[i].rank = 2;
          samples[i].t = 0.1 * static_cast<double>(i + 1);
          samples[i].rss = static_cast<std::int64_t>(i + 1) << 20;
        }
        comm.send(0, tag::kSamples, payload_of(std::span<const SampleRow>(samples)));
        std::this_thread::sleep_for(scaled(milliseconds(450)));
        comm.send(0, tag::kRecord, record_payload(record_for(silent_trial)));
        for (;;) comm.receive(0, kLongWait);  // until rank 0 has left
      },
  });
  EXPECT_EQ(errors[0], nullptr) << message_of(errors[0]);
  EXPECT_EQ(errors[1], nullptr) << message_of(errors[1]);
  EXPECT_EQ(result.silent_ranks, std::vector<int>{2});
  EXPECT_EQ(result.silent_attempts, 1U);

  std::size_t interrupted = 0;
  std::set<std::string> ok;
  for (std::size_t i = 0; i < sink.trials.size(); ++i) {
    const TrialRow& row = sink.trials[i];
    if (status_of(row) == "ok") {
      EXPECT_EQ(row.rank, 1) << "no row of the silent rank's is written after it was given up";
      ok.insert(get_fixed(row.trial_id));
      if (get_fixed(row.trial_id) == silent_trial) {
        EXPECT_EQ(row.attempt, 1) << "run again as the next attempt";
      }
      continue;
    }
    ++interrupted;
    EXPECT_EQ(status_of(row), "interrupted");
    EXPECT_EQ(get_fixed(row.trial_id), silent_trial);
    EXPECT_EQ(row.rank, 2);
    EXPECT_EQ(row.attempt, 0);
    EXPECT_EQ(row.samples, 3U) << "the samples it sent, which the file holds";
    EXPECT_EQ(row.rss_peak, 3 << 20);
    EXPECT_EQ(get_fixed(row.end_cause), end_cause::kSilent);
    EXPECT_NE(sink.messages[i].find("rank 2 went silent"), std::string::npos) << sink.messages[i];
  }
  EXPECT_EQ(interrupted, 1U);
  EXPECT_EQ(ok.size(), trials.size()) << "every trial, the silent rank's included, ends ok";
}

// A worker that never asks for a trial (stopped before its first REQUEST)
// is given up with nothing to record; the other worker runs every trial.
TEST(SilentWorker, BetweenTrialsIsGivenUpWithNothingToRecord) {
  const std::vector<TrialSpec> trials = make_trials(3);
  FakeRunner runner(Script{.duration = scaled(milliseconds(200)), .sample_every = milliseconds(5)});
  MemorySink sink;
  SweepOptions options;
  options.worker_silence = scaled(milliseconds(150));
  options.flush_interval = milliseconds(20);
  SweepResult result;
  ThreadGroup group(3);
  const auto errors = group.run({
      [&](Communicator& comm) {
        result = run_sweep(comm, trials, all_pending(trials.size()), nullptr, &sink, options);
      },
      [&](Communicator& comm) { run_sweep(comm, trials, {}, &runner, nullptr, options); },
      [](Communicator& comm) {
        for (;;) comm.receive(0, kLongWait);  // silent until rank 0 has left
      },
  });
  EXPECT_EQ(errors[0], nullptr) << message_of(errors[0]);
  EXPECT_EQ(result.silent_ranks, std::vector<int>{2});
  EXPECT_EQ(result.silent_attempts, 0U);
  ASSERT_EQ(sink.trials.size(), trials.size());
  for (const TrialRow& row : sink.trials) {
    EXPECT_EQ(status_of(row), "ok");
    EXPECT_EQ(row.rank, 1);
  }
}

// A worker whose trial is quiet but whose rank lives (its ALIVE messages) is
// never given up, however short the grace.
TEST(SilentWorker, AQuietTrialOnALiveRankIsNotGivenUp) {
  const std::vector<TrialSpec> trials = make_trials(1);
  FakeRunner runner(Script{.duration = scaled(milliseconds(2500))});  // no samples: only ALIVE, every second
  MemorySink sink;
  SweepOptions options;
  options.worker_silence = scaled(milliseconds(2000));
  SweepResult result;
  ThreadGroup group(2);
  const auto errors = group.run({
      [&](Communicator& comm) {
        result = run_sweep(comm, trials, all_pending(trials.size()), nullptr, &sink, options);
      },
      worker(trials, runner),
  });
  EXPECT_EQ(errors[0], nullptr) << message_of(errors[0]);
  EXPECT_TRUE(result.silent_ranks.empty());
  ASSERT_EQ(sink.trials.size(), trials.size());
  for (const TrialRow& row : sink.trials) EXPECT_EQ(status_of(row), "ok");
}

// The trial's time limit comes first: a silent worker whose trial may still
// run within its limit is waited for.
TEST(SilentWorker, IsWaitedForUntilItsTrialsTimeLimitAndTheGraceHavePassed) {
  std::vector<TrialSpec> trials = make_trials(1);
  trials[0].timeout_seconds = scaled_seconds(0.6);
  MemorySink sink;
  SweepOptions options;
  options.worker_silence = scaled(milliseconds(100));
  const auto start = std::chrono::steady_clock::now();
  std::chrono::steady_clock::duration given_up_after{};
  ThreadGroup group(2);
  const auto errors = group.run({
      [&](Communicator& comm) {
        run_sweep(comm, trials, all_pending(trials.size()), nullptr, &sink, options);
        given_up_after = std::chrono::steady_clock::now() - start;
      },
      [&](Communicator& comm) {
        take_a_trial(comm);
        for (;;) comm.receive(0, kLongWait);  // silent until rank 0 has left
      },
  });
  EXPECT_EQ(errors[0], nullptr) << message_of(errors[0]);
  EXPECT_GE(given_up_after, scaled(milliseconds(700))) << "time limit 0.6 s + grace 0.1 s";
  ASSERT_EQ(sink.trials.size(), 1U);
  EXPECT_EQ(status_of(sink.trials[0]), "interrupted");
  EXPECT_EQ(sink.trials[0].samples, 0U);
}

TEST(WorkerProtocol, AMessageOnlyWorkersSendIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(1);
  FakeRunner runner;
  ThreadGroup group(2);
  const auto errors = group.run({[](Communicator& comm) {
                                   comm.receive(1, kLongWait);  // the worker's REQUEST
                                   send_empty(comm, 1, tag::kSamples);
                                 },
                                 worker(trials, runner)});
  EXPECT_EQ(message_of(errors[1]), "sweep protocol: worker got SAMPLES from rank 0 while waiting for a trial");
}

TEST(WorkerProtocol, AnAssignmentPastTheTrialsIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  FakeRunner runner;
  ThreadGroup group(2);
  const auto errors = group.run({[](Communicator& comm) {
                                   comm.receive(1, kLongWait);
                                   const std::string past = sweep::detail::encode(Assignment{.index = 9, .attempt = 0});
                                   comm.send(1, tag::kAssign, std::as_bytes(std::span(past.data(), past.size())));
                                 },
                                 worker(trials, runner)});
  EXPECT_EQ(message_of(errors[1]), "sweep protocol: rank 0 assigned trial 9 of 2");
  EXPECT_TRUE(runner.contexts().empty());
}

TEST(WorkerProtocol, ATruncatedAssignmentIsAProtocolError) {
  const std::vector<TrialSpec> trials = make_trials(2);
  FakeRunner runner;
  ThreadGroup group(2);
  const std::vector<std::byte> eight_bytes(8);
  const auto errors = group.run({[&](Communicator& comm) {
                                   comm.receive(1, kLongWait);
                                   comm.send(1, tag::kAssign, eight_bytes);
                                 },
                                 worker(trials, runner)});
  EXPECT_EQ(message_of(errors[1]),
            "sweep protocol: the assignment (8 bytes): ends inside its field attempt (are all ranks running the same "
            "memsweep build?)");
}

}  // namespace
}  // namespace memsweep::testing
