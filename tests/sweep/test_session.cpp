// The session (session.hpp) on ranks as threads, with scripted steps: a
// step's failure on any rank ends every rank with the same status, rank 0
// prints one message, and rank 0's results failing during the sweep (the
// disk full) ends every rank with its status rather than aborting the job.

#include "memsweep/error.hpp"
#include "memsweep/session.hpp"
#include "sweep/sweep_support.hpp"
#include "sweep/thread_communicator.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

// Rank 0's sink: every row kept, and from its `fail_from`th trial row on the
// store's error for a full disk (an InputError, exit status 2).
class FillingSink final : public ResultSink {
 public:
  explicit FillingSink(std::optional<std::size_t> fail_from) : fail_from_(fail_from) {}
  void samples(std::span<const SampleRow>) override {}
  void epoch(const EpochRow&) override {}
  void trial(const TrialRow& row, const std::string&) override {
    if (fail_from_ && trials.size() + 1 >= *fail_from_)
      throw InputError("results.h5: No space left on device; make room, then --resume");
    trials.push_back(row);
  }
  std::vector<TrialRow> trials;

 private:
  std::optional<std::size_t> fail_from_;
};

// What each step does on this rank.
struct StepScript {
  std::string load_error{};  // InputError from load()
  bool decide_fails = false;
  bool open_fails = false;
  std::optional<std::size_t> sink_fails_from{};
};

class ScriptedSteps final : public SessionSteps {
 public:
  ScriptedSteps(const std::vector<TrialSpec>& trials, StepScript script) : script_(std::move(script)) {
    sweep_.name = "scripted";
    sweep_.trials = trials;
  }

  std::string load() override {
    if (!script_.load_error.empty()) throw InputError(script_.load_error);
    return "hash";
  }
  const SweepSpec& sweep() const override { return sweep_; }
  Verbosity verbosity() const override { return Verbosity::quiet; }
  std::vector<std::string> notes() const override { return {}; }
  std::string results_path() const override { return "results.h5"; }
  RunRow decide_run_row(int ranks, const std::vector<std::string>&, ProgressReporter&) override {
    if (script_.decide_fails) throw std::runtime_error("results.h5: cannot read /runs");
    RunRow run;
    run.ranks = ranks;
    run.flush_interval = 0.05;
    return run;
  }
  void check_datasets(const RunRow&) override {}
  OpenedResults open_results(const RunRow&, const Communicator&, const std::vector<std::string>&,
                             ProgressReporter&) override {
    if (script_.open_fails) throw InputError("results.h5 already exists: pass --resume or --force");
    sink_.emplace(script_.sink_fails_from);
    return {.sink = &*sink_,
            .pending = all_pending(sweep_.trials.size()),
            .counter_columns = {{"page-faults", CounterSourceChoice::kernel}},
            .run_index = 3,
            .search_history = {}};
  }
  std::unique_ptr<TrialRunner> make_runner(const RunRow&, const RunnerSetup& setup) override {
    runner_setup = setup;
    return std::make_unique<FakeRunner>(Script{.duration = milliseconds(5)});
  }
  void close_results(bool complete) override { closed_complete = complete; }

  std::optional<RunnerSetup> runner_setup;
  std::optional<bool> closed_complete;
  const FillingSink& sink() const { return *sink_; }

 private:
  StepScript script_;
  SweepSpec sweep_;
  std::optional<FillingSink> sink_;
};

struct SessionRun {
  std::vector<int> statuses;
  std::vector<std::string> errors;  // each rank's exception's message, "" for none
  std::string err;                  // the process's stderr
  // By rank: the bytes on stderr when that rank returned. Under mpirun a
  // rank that returns non-zero ends the job, so rank 0's line must be out
  // by then.
  std::vector<long> err_bytes_at_return;
};

SessionRun run_session_on(std::vector<ScriptedSteps>& steps) {
  ThreadGroup group(static_cast<int>(steps.size()));
  SessionRun run;
  run.statuses.assign(steps.size(), -1);
  run.err_bytes_at_return.assign(steps.size(), -1);
  ::testing::internal::CaptureStderr();
  const auto errors = group.run_on_every_rank([&](Communicator& comm) {
    const auto rank = static_cast<std::size_t>(comm.rank());
    run.statuses[rank] = run_session(comm, steps[rank]);
    std::fflush(stderr);
    struct stat captured {};  // stderr is gtest's capture file
    if (::fstat(STDERR_FILENO, &captured) == 0) run.err_bytes_at_return[rank] = static_cast<long>(captured.st_size);
  });
  run.err = ::testing::internal::GetCapturedStderr();
  for (const auto& error : errors) run.errors.push_back(message_of(error));
  return run;
}

std::vector<ScriptedSteps> steps_for(const std::vector<TrialSpec>& trials, int ranks,
                                     const std::vector<std::pair<int, StepScript>>& scripts = {}) {
  std::vector<ScriptedSteps> steps;
  for (int rank = 0; rank < ranks; ++rank) {
    StepScript script;
    for (const auto& [which, given] : scripts)
      if (which == rank) script = given;
    steps.emplace_back(trials, script);
  }
  return steps;
}

int count_of(const std::string& text, const std::string& part) {
  int count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

TEST(Session, EveryRankExitsZeroWhenEveryTrialRan) {
  const std::vector<TrialSpec> trials = make_trials(4);
  std::vector<ScriptedSteps> steps = steps_for(trials, 3);
  const SessionRun run = run_session_on(steps);
  EXPECT_EQ(run.statuses, (std::vector<int>{0, 0, 0})) << run.err;
  EXPECT_EQ(steps[0].sink().trials.size(), 4U);
  for (const TrialRow& row : steps[0].sink().trials) EXPECT_EQ(row.run, 3) << "the run index rank 0 sent";
  EXPECT_EQ(steps[0].closed_complete, true);
  EXPECT_FALSE(steps[0].runner_setup.has_value()) << "rank 0 of several does not train";
  for (int rank : {1, 2}) {
    const auto& setup = steps[static_cast<std::size_t>(rank)].runner_setup;
    ASSERT_TRUE(setup.has_value());
    ASSERT_EQ(setup->counter_columns.size(), 1U);
    EXPECT_EQ(setup->counter_columns[0].name, "page-faults") << "rank 0's columns reached rank " << rank;
    EXPECT_EQ(setup->flush_interval, milliseconds(50)) << "the agreed run row's flush interval";
  }
  EXPECT_EQ(count_of(run.err, "memsweep: sweep \"scripted\": 4 trials run in"), 1) << run.err;
}

TEST(Session, OneRanksInputErrorEndsEveryRankWithStatusTwoAndOneMessage) {
  const std::vector<TrialSpec> trials = make_trials(2);
  std::vector<ScriptedSteps> steps = steps_for(trials, 3, {{2, StepScript{.load_error = "sweep.toml: not readable"}}});
  const SessionRun run = run_session_on(steps);
  EXPECT_EQ(run.statuses, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(run.err, "memsweep: error: rank 2: sweep.toml: not readable\n");
  for (std::size_t rank = 1; rank < 3; ++rank)
    EXPECT_EQ(run.err_bytes_at_return[rank], static_cast<long>(run.err.size()))
        << "rank " << rank << " returned before rank 0's line was out";
  EXPECT_FALSE(steps[1].runner_setup.has_value()) << "nothing ran after the failed step";
}

TEST(Session, RankZerosFailureToOpenTheFileReachesEveryRank) {
  const std::vector<TrialSpec> trials = make_trials(2);
  std::vector<ScriptedSteps> steps = steps_for(trials, 3, {{0, StepScript{.open_fails = true}}});
  const SessionRun run = run_session_on(steps);
  EXPECT_EQ(run.statuses, (std::vector<int>{2, 2, 2}));
  EXPECT_EQ(run.err, "memsweep: error: results.h5 already exists: pass --resume or --force\n");
}

TEST(Session, AnInternalErrorOfRankZerosDecisionIsStatusOneOnEveryRank) {
  const std::vector<TrialSpec> trials = make_trials(2);
  std::vector<ScriptedSteps> steps = steps_for(trials, 2, {{0, StepScript{.decide_fails = true}}});
  const SessionRun run = run_session_on(steps);
  EXPECT_EQ(run.statuses, (std::vector<int>{1, 1}));
  EXPECT_EQ(run.err, "memsweep: error: results.h5: cannot read /runs\n");
}

// The disk fills during the sweep: every rank gets the status (2) and
// returns, none before rank 0's one line is out (a CI run of the full-disk
// test under mpirun lost it: a worker's exit ended rank 0 first).
TEST(Session, AFullDiskEndsEveryRankWithStatusTwoWithoutAborting) {
  const std::vector<TrialSpec> trials = make_trials(6);
  std::vector<ScriptedSteps> steps = steps_for(trials, 3, {{0, StepScript{.sink_fails_from = 3}}});
  const SessionRun run = run_session_on(steps);
  const std::string line = "memsweep: error: results.h5: No space left on device; make room, then --resume\n";
  EXPECT_EQ(run.err, line);
  EXPECT_EQ(run.errors, (std::vector<std::string>{"", "", ""})) << "no abort, nothing left for main to print";
  EXPECT_EQ(run.statuses, (std::vector<int>{2, 2, 2}));
  for (std::size_t rank = 1; rank < 3; ++rank)
    EXPECT_EQ(run.err_bytes_at_return[rank], static_cast<long>(line.size()))
        << "rank " << rank << " returned before rank 0's line was out";
  EXPECT_EQ(steps[0].sink().trials.size(), 2U) << "the rows before the disk filled";
  EXPECT_FALSE(steps[0].closed_complete.has_value()) << "the run is not marked ended";
}

TEST(Session, AloneASinkFailureIsRethrownAsItWas) {
  const std::vector<TrialSpec> trials = make_trials(3);
  std::vector<ScriptedSteps> steps = steps_for(trials, 1, {{0, StepScript{.sink_fails_from = 2}}});
  const SessionRun run = run_session_on(steps);
  EXPECT_EQ(run.errors[0], "results.h5: No space left on device; make room, then --resume");
  EXPECT_TRUE(steps[0].runner_setup.has_value()) << "alone, rank 0 trains";
}

}  // namespace
}  // namespace memsweep::testing
