// Searches scheduled by rank 0 (src/search/board.cpp): real sweep files with
// [search], the scheduler over threads as ranks, and a runner whose trials
// use memory along a known line, so that each search's true answer is known.

#include "sweep/search_support.hpp"
#include "sweep/sweep_support.hpp"
#include "sweep/thread_communicator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

namespace memsweep::testing {
namespace {

struct SearchRun {
  std::vector<SearchRow> searches;
  std::vector<TrialRow> trials;
  std::vector<std::string> ran;
};

// The sweep on `ranks` ranks (1: alone), rank 0 starting from `history`.
SearchRun run_search(const SweepSpec& sweep, int ranks, const Curve& curve, const SearchHistory* history = nullptr,
                     std::chrono::milliseconds duration = std::chrono::milliseconds(5)) {
  MemorySink sink;
  CurveRunner runner(curve, duration);
  SweepOptions options;
  options.search = &*sweep.search;
  if (ranks == 1) {
    options.search_history = history;
    const auto comm = make_serial_communicator();
    run_sweep(*comm, sweep.trials, {}, &runner, &sink, options);
  } else {
    ThreadGroup group(ranks);
    const auto errors = group.run_on_every_rank([&](Communicator& comm) {
      SweepOptions own = options;
      if (comm.rank() == 0) own.search_history = history;
      run_sweep(comm, sweep.trials, {}, comm.rank() == 0 ? nullptr : &runner, comm.rank() == 0 ? &sink : nullptr, own);
    });
    for (const auto& error : errors) EXPECT_EQ(message_of(error), "");
  }
  return {sink.searches, sink.trials, runner.ran()};
}

TEST(SearchSweep, EachConfigurationAndLimitFindsTheLargestBatchThatFitsAloneAndOnWorkers) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = [\"100MiB\", \"300MiB\"]\nresolution = 0.02");
  const Curve curve;
  for (const int ranks : {1, 2, 3, 5}) {
    SCOPED_TRACE(ranks);
    const SearchRun run = run_search(sweep, ranks, curve);
    expect_found_answers(run.searches, run.trials, run.ran, sweep, curve);
    // Probes train probe_epochs (1), verifications the configuration's 2.
    for (const TrialRow& trial : run.trials) EXPECT_EQ(trial.epochs, trial.full_run == 1 ? 2 : 1);
  }
}

TEST(SearchSweep, OneSearchOnFourWorkersProbesSeveralPointsOfItsBracketAtOnce) {
  const SweepSpec sweep = search_sweep(
      "axis = \"batch_size\"\nrange = [8, 65536]\nlimit = \"300MiB\"\nstrategy = "
      "\"bisect\"\nresolution = 0.01\nmax_trials = 40",
      "learning_rate = [0.01]");
  const Curve curve;
  const SearchRun alone = run_search(sweep, 1, curve);
  const SearchRun four = run_search(sweep, 5, curve, nullptr, std::chrono::milliseconds(40));
  expect_found_answers(alone.searches, alone.trials, alone.ran, sweep, curve);
  expect_found_answers(four.searches, four.trials, four.ran, sweep, curve);
  // With four workers, probes of the one search overlap in time: the
  // bracket is split among them (the trials' start order and their count
  // say so: more trials than alone, in fewer rounds).
  std::set<int> ranks;
  for (const TrialRow& trial : four.trials) ranks.insert(trial.rank);
  EXPECT_GE(ranks.size(), 3U) << "one search kept " << ranks.size() << " of 4 workers busy";
  // Both within the resolution of the truth (expect_found_answers); the
  // points probed differ, so the answers may differ within it too.
  EXPECT_NEAR(static_cast<double>(four.searches.front().fits), static_cast<double>(alone.searches.front().fits),
              sweep.search->resolution * static_cast<double>(alone.searches.front().fits) + 1.0);
}

TEST(SearchSweep, AResumeReplaysTheFilesProbesRunsNoneTwiceAndEndsWithTheSameAnswers) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = [\"100MiB\", \"300MiB\"]\nresolution = 0.02");
  const Curve curve;
  const SearchRun whole = run_search(sweep, 1, curve);
  for (const std::size_t kept : {std::size_t{1}, whole.trials.size() / 2, whole.trials.size() - 1}) {
    SCOPED_TRACE(kept);
    const std::vector<TrialRow> before(whole.trials.begin(), whole.trials.begin() + static_cast<std::ptrdiff_t>(kept));
    std::vector<SearchRow> ended;  // the searches whose rows were written before the "kill"
    for (const SearchRow& row : whole.searches) {
      const bool all_before = std::none_of(whole.trials.begin() + static_cast<std::ptrdiff_t>(kept), whole.trials.end(),
                                           [&](const TrialRow& trial) { return trial.search == row.search; });
      if (all_before) ended.push_back(row);
    }
    const SearchHistory history = search_history(before, {}, ended);
    const SearchRun resumed = run_search(sweep, 1, curve, &history);
    for (const TrialRow& row : before)
      EXPECT_EQ(std::count(resumed.ran.begin(), resumed.ran.end(), get_fixed(row.trial_id)), 0)
          << get_fixed(row.trial_id) << " ran again";
    EXPECT_EQ(resumed.ran.size() + before.size(), whole.ran.size());
    EXPECT_EQ(resumed.searches.size() + ended.size(), whole.searches.size());
    for (const SearchRow& row : resumed.searches) {
      const auto same = std::find_if(whole.searches.begin(), whole.searches.end(),
                                     [&](const SearchRow& other) { return other.search == row.search; });
      ASSERT_NE(same, whole.searches.end());
      EXPECT_EQ(row.fits, same->fits);
      EXPECT_EQ(row.does_not_fit, same->does_not_fit);
      EXPECT_EQ(row.trials, same->trials);
    }
  }
}

TEST(SearchSweep, AVerificationThatDoesNotFitLowersTheBoundAndTheAnswerIsOneThatTrainedInFull) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = \"300MiB\"\nresolution = 0.02\nmax_trials = 20",
                   "learning_rate = [0.01]");
  Curve curve;
  curve.full_costs_more = true;  // a full run needs 10 % more than its probe
  const SearchRun run = run_search(sweep, 1, curve);
  expect_found_answers(run.searches, run.trials, run.ran, sweep, curve);
}

}  // namespace
}  // namespace memsweep::testing
