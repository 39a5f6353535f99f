// Searches scheduled by rank 0 (search_board): real sweep files with
// [search], the scheduler over threads as ranks, and a runner whose trials
// use memory along a known line, so that each search's true answer is known.

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

constexpr std::int64_t kMiB = 1 << 20;

// Peak = base + per_example × batch (+ 10 % for a full run, when `full_costs_more`).
struct Curve {
  std::int64_t base = 40 * kMiB;
  std::int64_t per_example = 64 * 1024;
  bool full_costs_more = false;
  std::int64_t peak(const TrialSpec& trial) const {
    const std::int64_t peak = base + per_example * trial.batch_size;
    return full_costs_more && trial.search && trial.search->full ? peak + peak / 10 : peak;
  }
};

// Trains nothing: each trial's row says what the curve says it would use,
// `over_budget` past its memory budget (the search's limit).
class CurveRunner final : public TrialRunner {
 public:
  explicit CurveRunner(Curve curve, std::chrono::milliseconds duration = std::chrono::milliseconds(5))
      : curve_(curve), duration_(duration) {}
  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink&) override {
    std::this_thread::sleep_for(duration_);
    TrialRecord record{trial_row_for(trial, context.attempt), {}};
    TrialRow& row = record.row;
    row.rank = context.rank;
    row.run = context.run;
    const std::int64_t peak = curve_.peak(trial);
    const bool over = trial.mem_budget_bytes && peak > static_cast<std::int64_t>(*trial.mem_budget_bytes);
    row.rss_peak = over ? static_cast<std::int64_t>(*trial.mem_budget_bytes) : peak;
    set_fixed(row.status, status_name(over ? TrialStatus::over_budget : TrialStatus::ok));
    set_fixed(row.isolation, "proc");
    row.wall_seconds = 0.005;
    std::lock_guard lock(mutex_);
    ran_.push_back(trial.id);
    return record;
  }
  std::vector<std::string> ran() const {
    std::lock_guard lock(mutex_);
    return ran_;
  }

 private:
  Curve curve_;
  std::chrono::milliseconds duration_;
  mutable std::mutex mutex_;
  std::vector<std::string> ran_;
};

SweepSpec search_sweep(std::string_view search, std::string_view grid = "learning_rate = [0.01, 0.02, 0.05]") {
  return parse_sweep(
      fmt::format("[defaults]\ndataset = \"synthetic\"\nepochs = 2\n[grid]\n{}\n[search]\n{}\n", grid, search),
      "search.toml");
}

// The largest batch whose (full-run) peak is within `limit`.
std::int64_t true_answer(const Curve& curve, std::int64_t limit, std::int64_t low, std::int64_t high) {
  std::int64_t best = low - 1;
  TrialSpec trial;
  trial.search = SearchPoint{.full = true};
  for (std::int64_t batch = low; batch <= high; ++batch) {
    trial.batch_size = static_cast<int>(batch);
    if (curve.peak(trial) <= limit) best = batch;
  }
  return best;
}

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

void expect_found_answers(const SearchRun& run, const SweepSpec& sweep, const Curve& curve) {
  const SearchSpec& search = *sweep.search;
  ASSERT_EQ(run.searches.size(), sweep.trials.size() * search.limits.size());
  std::set<std::int32_t> seen;
  for (const SearchRow& row : run.searches) {
    EXPECT_TRUE(seen.insert(row.search).second) << "search " << row.search << " has two rows";
    const auto limit = static_cast<std::int64_t>(search.limits.at(static_cast<std::size_t>(row.limit_index)));
    EXPECT_EQ(row.limit, limit);
    const std::int64_t truth = true_answer(curve, limit, search.low, search.high);
    EXPECT_EQ(get_fixed(row.status), "found") << get_fixed(row.message);
    EXPECT_EQ(row.fits_verified, 1);
    // Within the resolution below the truth, never above it.
    EXPECT_LE(row.fits, truth);
    EXPECT_GE(static_cast<double>(row.fits), static_cast<double>(truth) * (1.0 - search.resolution) - 1.0);
    EXPECT_GT(row.does_not_fit, row.fits);
    EXPECT_LE(row.does_not_fit - row.fits,
              std::max<std::int64_t>(1, static_cast<std::int64_t>(search.resolution * static_cast<double>(row.fits))));
    // The answer trained in full within the limit: a row says so.
    const bool verified = std::any_of(run.trials.begin(), run.trials.end(), [&](const TrialRow& trial) {
      return trial.search == row.search && trial.axis_value == row.fits && trial.full_run == 1 &&
             get_fixed(trial.status) == "ok" && trial.rss_peak <= limit;
    });
    EXPECT_TRUE(verified) << "search " << row.search << ": " << row.fits << " never trained in full";
    // The smallest value seen not to fit was a trial that did not fit.
    const bool refused = std::any_of(run.trials.begin(), run.trials.end(), [&](const TrialRow& trial) {
      return trial.search == row.search && trial.axis_value == row.does_not_fit &&
             get_fixed(trial.status) == "over_budget";
    });
    EXPECT_TRUE(refused) << "search " << row.search << ": " << row.does_not_fit << " was never seen not to fit";
  }
  // No trial ran twice.
  std::set<std::string> ids(run.ran.begin(), run.ran.end());
  EXPECT_EQ(ids.size(), run.ran.size());
}

TEST(SearchSweep, EachConfigurationAndLimitFindsTheLargestBatchThatFitsAloneAndOnWorkers) {
  const SweepSpec sweep =
      search_sweep("axis = \"batch_size\"\nrange = [8, 65536]\nlimit = [\"100MiB\", \"300MiB\"]\nresolution = 0.02");
  const Curve curve;
  for (const int ranks : {1, 2, 3, 5}) {
    SCOPED_TRACE(ranks);
    const SearchRun run = run_search(sweep, ranks, curve);
    expect_found_answers(run, sweep, curve);
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
  expect_found_answers(alone, sweep, curve);
  expect_found_answers(four, sweep, curve);
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
  expect_found_answers(run, sweep, curve);
}

}  // namespace
}  // namespace memsweep::testing
