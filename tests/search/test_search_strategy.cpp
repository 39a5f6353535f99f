// The search's pure part: what a trial row says about its value
// (probe_outcome) and, on synthetic peak curves, where the search goes
// (next_probes): a small driver trains each probe on the curve.

#include "memsweep/search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using Value = std::int64_t;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kLimit = 400.0 * kMiB;
constexpr int kLoopBound = 200;

// ---- probe_outcome --------------------------------------------------------

struct OutcomeCase {
  std::string_view name;
  std::string_view status;
  std::string_view end_cause;
  std::int64_t rss_peak;
  std::int64_t limit;
  int oom_killed;
  int reported_oom;
  ProbeOutcome outcome;
};

class ProbeOutcomeRows : public ::testing::TestWithParam<OutcomeCase> {};

TEST_P(ProbeOutcomeRows, JudgesTheRowAgainstItsLimit) {
  const OutcomeCase& c = GetParam();
  TrialRow row;
  set_fixed(row.status, c.status);
  set_fixed(row.end_cause, c.end_cause);
  row.rss_peak = c.rss_peak;
  row.search_limit = c.limit;
  row.oom_killed = c.oom_killed;
  row.reported_oom = c.reported_oom;
  EXPECT_EQ(probe_outcome(row), GetParam().outcome);
}

INSTANTIATE_TEST_SUITE_P(
    ProbeOutcome, ProbeOutcomeRows,
    ::testing::Values(OutcomeCase{"ok_within", "ok", "exited", 100, 100, 0, 0, ProbeOutcome::fits},
                      OutcomeCase{"ok_past_limit", "ok", "exited", 101, 100, 0, 0, ProbeOutcome::does_not_fit},
                      OutcomeCase{"ok_peak_unknown", "ok", "exited", -1, 100, 0, 0, ProbeOutcome::fits},
                      OutcomeCase{"ok_no_limit", "ok", "exited", 500, -1, 0, 0, ProbeOutcome::fits},
                      OutcomeCase{"ok_reported_oom", "ok", "exited", 10, 100, 0, 1, ProbeOutcome::does_not_fit},
                      OutcomeCase{"over_budget", "over_budget", "budget", 200, 100, 0, 0, ProbeOutcome::does_not_fit},
                      OutcomeCase{"failed_reported_oom", "failed", "exited", 10, 100, 0, 1, ProbeOutcome::does_not_fit},
                      OutcomeCase{"failed_oom_killed", "failed", "signal", 90, 100, 1, 0, ProbeOutcome::does_not_fit},
                      OutcomeCase{"failed_end_cause_oom", "failed", "oom", 90, 100, 0, 0, ProbeOutcome::does_not_fit},
                      OutcomeCase{"killed_oom", "killed", "oom", 90, 100, 0, 0, ProbeOutcome::does_not_fit},
                      OutcomeCase{"killed_rank_lost", "killed", "rank_lost", 90, 100, 0, 0, ProbeOutcome::retry},
                      OutcomeCase{"killed_stopped", "killed", "stopped", 90, 100, 0, 0, ProbeOutcome::retry},
                      OutcomeCase{"interrupted", "interrupted", "signal", 90, 100, 0, 0, ProbeOutcome::retry},
                      OutcomeCase{"interrupted_reported_oom", "interrupted", "", 90, 100, 0, 1, ProbeOutcome::retry},
                      OutcomeCase{"failed_crash", "failed", "crash", 90, 100, 0, 0, ProbeOutcome::failed},
                      OutcomeCase{"diverged", "diverged", "exited", 90, 100, 0, 0, ProbeOutcome::failed},
                      OutcomeCase{"timeout", "timeout", "timeout", 90, 100, 0, 0, ProbeOutcome::failed},
                      OutcomeCase{"timeout_oom_killed", "timeout", "timeout", 90, 100, 1, 0, ProbeOutcome::failed},
                      OutcomeCase{"unreadable", "bogus", "exited", 90, 100, 0, 0, ProbeOutcome::failed}),
    [](const auto& row) { return std::string(row.param.name); });

// A GPU search's probe: judged by the tree's GPU peak against its GPU
// limit (the device's size for "device"), whatever its host memory.
TEST(ProbeOutcome, AGpuProbeFitsWhenItsGpuPeakIsWithinItsGpuLimit) {
  TrialRow row;
  set_fixed(row.status, "ok");
  set_fixed(row.search_device, "gpu");
  row.search_limit = 0;  // "device"
  row.gpu_limit = 80LL << 30;
  row.rss_peak = 100LL << 30;  // the host's: not this search's limit
  row.gpu_peak = 80LL << 30;
  EXPECT_EQ(probe_outcome(row), ProbeOutcome::fits);
  row.gpu_peak = (80LL << 30) + 1;
  EXPECT_EQ(probe_outcome(row), ProbeOutcome::does_not_fit);
  row.gpu_peak = -1;
  EXPECT_EQ(probe_outcome(row), ProbeOutcome::failed) << "not measured: nothing says it fits";
  set_fixed(row.status, "over_budget");
  set_fixed(row.end_cause, "gpu");
  EXPECT_EQ(probe_outcome(row), ProbeOutcome::does_not_fit) << "the rank's stop at the GPU limit";
  set_fixed(row.status, "failed");
  set_fixed(row.end_cause, "exited");
  row.reported_oom = 1;
  EXPECT_EQ(probe_outcome(row), ProbeOutcome::does_not_fit) << "the program's CUDA out-of-memory";
}

// ---- names and settings ---------------------------------------------------

TEST(SearchStrategyNames, StrategyNamesParseBack) {
  for (SearchStrategy s : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling})
    EXPECT_EQ(parse_strategy(strategy_name(s)), s);
  EXPECT_EQ(strategy_name(SearchStrategy::doubling), "double");
  EXPECT_EQ(parse_strategy("doubling"), std::nullopt);
  EXPECT_EQ(parse_strategy(""), std::nullopt);
}

TEST(SearchStrategyNames, StatesAreSearchStatusNames) {
  EXPECT_EQ(search_state_name(SearchState::running), "running");
  EXPECT_EQ(search_state_name(SearchState::found), search_status::kFound);
  EXPECT_EQ(search_state_name(SearchState::below_range), search_status::kBelowRange);
  EXPECT_EQ(search_state_name(SearchState::above_range), search_status::kAboveRange);
  EXPECT_EQ(search_state_name(SearchState::stopped), search_status::kStopped);
  EXPECT_EQ(search_state_name(SearchState::failed), search_status::kFailed);
}

TEST(SearchStrategySettings, CopiesTheSpecAtOneLimit) {
  SearchSpec spec;
  spec.low = 4;
  spec.high = 512;
  spec.limits = {100, 200};
  spec.resolution = 0.05;
  spec.max_trials = 7;
  spec.verify = false;
  spec.strategy = SearchStrategy::bisect;
  const SearchSettings s = search_settings(spec, 1, true);
  EXPECT_EQ(s.low, 4);
  EXPECT_EQ(s.high, 512);
  EXPECT_EQ(s.limit_bytes, 200.0);
  EXPECT_EQ(s.resolution, 0.05);
  EXPECT_EQ(s.max_trials, 7);
  EXPECT_FALSE(s.verify);
  EXPECT_TRUE(s.probes_are_full);
  EXPECT_EQ(s.strategy, SearchStrategy::bisect);
  EXPECT_FALSE(s.estimated_slope.has_value());
}

// ---- the driver -----------------------------------------------------------

using PeakCurve = std::function<double(Value)>;

struct Curves {
  PeakCurve probe;
  PeakCurve full;  // the verification's: the same curve, or a larger one
};

Curves same(PeakCurve curve) { return {curve, curve}; }

PeakCurve linear(double base_mib, double mib_per_unit) {
  return [=](Value x) { return (base_mib + mib_per_unit * static_cast<double>(x)) * kMiB; };
}

// Deterministic pseudo-noise in [-1, 1] per value.
double noise(Value x) {
  std::uint64_t h = static_cast<std::uint64_t>(x) * 0x9E3779B97F4A7C15ULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return static_cast<double>(h % 20001) / 10000.0 - 1.0;
}

SearchSettings settings_for(SearchStrategy strategy, double resolution = 0.02) {
  SearchSettings s;
  s.low = 8;
  s.high = 65536;
  s.limit_bytes = kLimit;
  s.resolution = resolution;
  s.max_trials = 40;
  s.verify = true;
  s.strategy = strategy;
  return s;
}

// The largest value in range whose run on `curve` fits; nullopt: none.
std::optional<Value> truth(const SearchSettings& s, const PeakCurve& curve) {
  std::optional<Value> best;
  for (Value x = s.low; x <= s.high; ++x)
    if (curve(x) <= s.limit_bytes) best = x;
  return best;
}

struct Simulation {
  SearchStep last;
  std::vector<ProbeResult> finished;
  int rounds = 0;  // time, each trial taking one unit on one of the workers
};

// Runs the search to its end: `workers` trials at a time, each asked for
// as workers free up. `failing` fails with a non-memory error.
Simulation simulate(const SearchSettings& s, const Curves& curves, int workers = 1,
                    std::optional<Value> failing = std::nullopt) {
  Simulation sim;
  std::vector<std::pair<NextProbe, int>> running;  // with the round it started
  for (int loop = 0; loop < kLoopBound; ++loop) {
    std::vector<NextProbe> now;
    for (const auto& [probe, started] : running) now.push_back(probe);
    const int wanted = workers - static_cast<int>(now.size());
    if (wanted > 0) {
      sim.last = next_probes(s, sim.finished, now, wanted);
      if (!now.empty()) {
        EXPECT_EQ(sim.last.standing.state, SearchState::running) << "done while trials run";
      }
      if (now.empty() && sim.last.standing.state != SearchState::running) return sim;
      EXPECT_LE(static_cast<int>(sim.last.next.size()), wanted);
      EXPECT_TRUE(std::is_sorted(sim.last.next.begin(), sim.last.next.end()));
      for (const NextProbe& probe : sim.last.next) {
        EXPECT_GE(probe.value, s.low);
        EXPECT_LE(probe.value, s.high);
        EXPECT_EQ(std::count(now.begin(), now.end(), probe), 0) << probe.value << " runs already";
        for (const ProbeResult& done : sim.finished)
          EXPECT_FALSE(done.value == probe.value && done.full == probe.full) << probe.value << " done already";
        running.emplace_back(probe, sim.rounds);
      }
      EXPECT_LE(static_cast<int>(sim.finished.size() + running.size()), s.max_trials);
    }
    if (running.empty()) {
      ADD_FAILURE() << "nothing runs and the search is not done";
      return sim;
    }
    // The trials that started first end now.
    const int round = running.front().second;
    ++sim.rounds;
    while (!running.empty() && running.front().second == round) {
      const NextProbe probe = running.front().first;
      running.erase(running.begin());
      ProbeResult result;
      result.value = probe.value;
      result.full = probe.full || s.probes_are_full;
      const double peak = (result.full ? curves.full : curves.probe)(probe.value);
      if (failing && probe.value == *failing) {
        result.outcome = ProbeOutcome::failed;
        result.status = TrialStatus::failed;
        result.message = "exit code 3";
      } else if (peak <= s.limit_bytes) {
        result.outcome = ProbeOutcome::fits;
        result.peak_bytes = peak;
      } else {
        result.outcome = ProbeOutcome::does_not_fit;
      }
      sim.finished.push_back(result);
    }
  }
  ADD_FAILURE() << "the search did not end in " << kLoopBound << " steps";
  return sim;
}

// The probes in the order they ended: "8 31 3000 3060- 3000F" (F: a full
// run, -: did not fit).
std::string trace(const Simulation& sim) {
  std::string text;
  for (const ProbeResult& r : sim.finished)
    text += " " + std::to_string(r.value) + (r.full ? "F" : "") + (r.outcome == ProbeOutcome::fits ? "" : "-");
  return text;
}

// The answer has a full run that fit.
bool verified_fit(const Simulation& sim, Value value) {
  return std::any_of(sim.finished.begin(), sim.finished.end(), [&](const ProbeResult& r) {
    return r.value == value && r.full && r.outcome == ProbeOutcome::fits;
  });
}

void expect_order_independent(const SearchSettings& s, const Simulation& sim) {
  std::vector<ProbeResult> shuffled = sim.finished;
  std::mt19937 random(7);
  for (int i = 0; i < 3; ++i) {
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    const SearchStep again = next_probes(s, shuffled, {}, 1);
    EXPECT_EQ(again.standing.state, sim.last.standing.state);
    EXPECT_EQ(again.standing.fits, sim.last.standing.fits);
    EXPECT_EQ(again.standing.does_not_fit, sim.last.standing.does_not_fit);
    EXPECT_EQ(again.standing.trials, sim.last.standing.trials);
    EXPECT_EQ(again.standing.message, sim.last.standing.message);
    ASSERT_EQ(again.standing.fitted.has_value(), sim.last.standing.fitted.has_value());
    if (again.standing.fitted) {
      EXPECT_NEAR(again.standing.fitted->b, sim.last.standing.fitted->b, 1e-6);
    }
  }
}

// ---- curves: found, verified, within the resolution ----------------------

struct CurveCase {
  std::string_view name;
  Curves curves;
  bool monotone = true;
};

std::vector<CurveCase> curve_cases() {
  const PeakCurve convex = [](Value x) {
    const auto d = static_cast<double>(x);
    return (80.0 + 0.02 * d + 0.00004 * d * d) * kMiB;
  };
  const PeakCurve step = [](Value x) {
    return (x >= 1500 ? 250.0 : 100.0) * kMiB + 0.1 * kMiB * static_cast<double>(x);
  };
  const PeakCurve noisy = [](Value x) { return linear(100.0, 0.1)(x) * (1.0 + 0.03 * noise(x)); };
  const PeakCurve probe = linear(100.0, 0.1);
  const PeakCurve bigger = [](Value x) { return linear(100.0, 0.1)(x) * 1.04; };
  return {
      {"linear", same(linear(100.0, 0.1))},
      {"linear_steep", same(linear(20.0, 0.3))},
      {"convex", same(convex)},
      {"step", same(step)},
      {"noisy", same(noisy), false},
      {"verification_fails", {probe, bigger}},
  };
}

class SearchStrategyCurves
    : public ::testing::TestWithParam<std::tuple<SearchStrategy, std::size_t /* curve_cases() index */>> {};

TEST_P(SearchStrategyCurves, FindsAVerifiedAnswerWithinTheResolution) {
  const auto [strategy, index] = GetParam();
  const CurveCase c = curve_cases()[index];
  const SearchSettings s = settings_for(strategy);
  const Simulation sim = simulate(s, c.curves);
  const SearchStanding& standing = sim.last.standing;
  ASSERT_EQ(standing.state, SearchState::found) << standing.message;
  ASSERT_TRUE(standing.fits && standing.does_not_fit);
  EXPECT_TRUE(standing.fits_verified);
  EXPECT_TRUE(verified_fit(sim, *standing.fits)) << *standing.fits;
  EXPECT_LE(static_cast<double>(*standing.does_not_fit - *standing.fits),
            std::max(1.0, s.resolution * static_cast<double>(*standing.fits)));
  EXPECT_EQ(standing.trials, static_cast<int>(sim.finished.size()));
  EXPECT_NE(standing.message.find(std::to_string(*standing.fits) + " (verified)"), std::string::npos);
  const std::optional<Value> best = truth(s, c.curves.full);
  ASSERT_TRUE(best);
  if (c.monotone) {
    EXPECT_LE(*standing.fits, *best);
    EXPECT_GE(static_cast<double>(*standing.fits), static_cast<double>(*best) * (1.0 - s.resolution) - 1.0);
  } else {
    EXPECT_LE(c.curves.full(*standing.fits), s.limit_bytes);
    EXPECT_NEAR(static_cast<double>(*standing.fits), 3000.0, 3000.0 * 0.08);
  }
  expect_order_independent(s, sim);
  std::cout << "[ trials   ] " << strategy_name(strategy) << " " << c.name << ": " << standing.trials << trace(sim)
            << "\n";
}

INSTANTIATE_TEST_SUITE_P(SearchStrategy, SearchStrategyCurves,
                         ::testing::Combine(::testing::Values(SearchStrategy::model, SearchStrategy::bisect,
                                                              SearchStrategy::doubling),
                                            ::testing::Range<std::size_t>(0, 6)),
                         [](const auto& curve) {
                           return std::string(strategy_name(std::get<0>(curve.param))) + "_" +
                                  std::string(curve_cases()[std::get<1>(curve.param)].name);
                         });

// ---- how many trials ------------------------------------------------------

int trials_to_find(SearchStrategy strategy, const PeakCurve& curve) {
  const Simulation sim = simulate(settings_for(strategy), same(curve));
  EXPECT_EQ(sim.last.standing.state, SearchState::found) << sim.last.standing.message;
  if (strategy == SearchStrategy::model && sim.last.standing.trials > 5) {
    ADD_FAILURE() << trace(sim);
  }
  return sim.last.standing.trials;
}

TEST(SearchStrategyTrials, ModelFindsALinearCurveInFiveTrials) {
  for (double slope : {0.1, 0.13, 0.3, 0.08})
    for (double base : {20.0, 100.0, 250.0}) {
      EXPECT_LE(trials_to_find(SearchStrategy::model, linear(base, slope)), 5) << base << " MiB + " << slope;
    }
}

TEST(SearchStrategyTrials, ModelTakesAtMostHalfOfBisect) {
  int model_total = 0;
  int bisect_total = 0;
  int doubling_total = 0;
  for (double slope : {0.1, 0.13, 0.3, 0.08})
    for (double base : {20.0, 100.0, 250.0}) {
      const int model = trials_to_find(SearchStrategy::model, linear(base, slope));
      const int bisect = trials_to_find(SearchStrategy::bisect, linear(base, slope));
      EXPECT_LE(2 * model, bisect) << base << " MiB + " << slope;
      model_total += model;
      bisect_total += bisect;
      doubling_total += trials_to_find(SearchStrategy::doubling, linear(base, slope));
    }
  std::cout << "[ trials   ] on 12 linear curves: model " << model_total << ", bisect " << bisect_total << ", double "
            << doubling_total << "\n";
}

TEST(SearchStrategyTrials, ModelUsesTheEstimatedSlope) {
  SearchSettings s = settings_for(SearchStrategy::model);
  s.estimated_slope = 0.1 * kMiB;
  const Simulation sim = simulate(s, same(linear(100.0, 0.1)));
  EXPECT_EQ(sim.last.standing.state, SearchState::found);
  EXPECT_LE(sim.last.standing.trials, 4);
}

// ---- the range's ends, failures, the trial budget ------------------------

// Nothing fits: below_range at the low end; everything fits: above_range
// with the high end's full run.
TEST(SearchStrategyRange, TheEndsOfTheRange) {
  struct EndCase {
    PeakCurve curve;
    SearchState state;
    bool at_high;
  };
  const std::vector<EndCase> cases{{linear(500.0, 0.1), SearchState::below_range, false},
                                   {linear(10.0, 0.001), SearchState::above_range, true}};
  for (const EndCase& c : cases)
    for (SearchStrategy strategy : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling}) {
      const SearchSettings s = settings_for(strategy);
      const Simulation sim = simulate(s, same(c.curve));
      const SearchStanding& standing = sim.last.standing;
      EXPECT_EQ(standing.state, c.state) << strategy_name(strategy) << trace(sim);
      EXPECT_LE(standing.trials, 20) << strategy_name(strategy);
      if (c.at_high) {
        EXPECT_EQ(standing.fits, s.high);
        EXPECT_TRUE(verified_fit(sim, s.high));
      } else {
        EXPECT_EQ(standing.does_not_fit, s.low);
        EXPECT_FALSE(standing.fits);
      }
    }
}

TEST(SearchStrategyRange, AOneValueRangeIsTriedOnce) {
  SearchSettings s = settings_for(SearchStrategy::bisect);
  s.low = s.high = 100;
  EXPECT_EQ(simulate(s, same(linear(100.0, 0.1))).last.standing.state, SearchState::above_range);
  EXPECT_EQ(simulate(s, same(linear(500.0, 0.1))).last.standing.state, SearchState::below_range);
}

TEST(SearchStrategyFailure, ANonMemoryFailureEndsTheSearch) {
  for (SearchStrategy strategy : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling}) {
    const SearchSettings s = settings_for(strategy);
    // Fail whatever the search probes second.
    const Simulation first = simulate(s, same(linear(100.0, 0.1)));
    ASSERT_GE(first.finished.size(), 2U);
    const Value failing = first.finished[1].value;
    const Simulation sim = simulate(s, same(linear(100.0, 0.1)), 1, failing);
    EXPECT_EQ(sim.last.standing.state, SearchState::failed) << strategy_name(strategy);
    EXPECT_EQ(sim.last.standing.message, "failed: exit code 3");
    EXPECT_EQ(sim.finished.back().value, failing);
  }
}

TEST(SearchStrategyFailure, AFailureWaitsForTheRunningProbes) {
  const SearchSettings s = settings_for(SearchStrategy::bisect);
  ProbeResult failed;
  failed.value = 100;
  failed.outcome = ProbeOutcome::failed;
  failed.status = TrialStatus::diverged;
  failed.message = "loss is nan";
  const std::vector<ProbeResult> finished{failed};
  const std::vector<NextProbe> running{{400, false}};
  const SearchStep waiting = next_probes(s, finished, running, 3);
  EXPECT_EQ(waiting.standing.state, SearchState::running);
  EXPECT_TRUE(waiting.next.empty());
  const SearchStep done = next_probes(s, finished, {}, 3);
  EXPECT_EQ(done.standing.state, SearchState::failed);
  EXPECT_EQ(done.standing.message, "diverged: loss is nan");
}

TEST(SearchStrategyFailure, RetriesAreNotResults) {
  const SearchSettings s = settings_for(SearchStrategy::bisect);
  ProbeResult retry;
  retry.value = 724;
  retry.outcome = ProbeOutcome::retry;
  const std::vector<ProbeResult> finished{retry};
  const SearchStep step = next_probes(s, finished, {}, 1);
  EXPECT_EQ(step.standing.trials, 0);
  EXPECT_EQ(step.standing.state, SearchState::running);
  ASSERT_EQ(step.next.size(), 1U);
}

TEST(SearchStrategyBudget, MaxTrialsStopsWithOnlyAVerifiedAnswer) {
  for (SearchStrategy strategy : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling})
    for (int max_trials : {1, 2, 3, 4, 6}) {
      SearchSettings s = settings_for(strategy);
      s.max_trials = max_trials;
      const Simulation sim = simulate(s, same(linear(100.0, 0.1)));
      const SearchStanding& standing = sim.last.standing;
      EXPECT_LE(standing.trials, max_trials);
      EXPECT_TRUE(standing.state == SearchState::stopped || standing.state == SearchState::found)
          << strategy_name(strategy) << " " << max_trials;
      if (standing.fits) {
        EXPECT_TRUE(verified_fit(sim, *standing.fits));
      }
      if (standing.state == SearchState::stopped) {
        EXPECT_NE(standing.message.find("max_trials"), std::string::npos);
      }
      // From 2 trials on, the last one went to verify a fit.
      if (max_trials >= 2) {
        EXPECT_TRUE(standing.fits) << strategy_name(strategy) << " " << max_trials;
      }
    }
}

TEST(SearchStrategyBudget, WithoutVerificationEveryFitIsTheAnswer) {
  SearchSettings s = settings_for(SearchStrategy::model);
  s.verify = false;
  const Simulation sim = simulate(s, same(linear(100.0, 0.1)));
  EXPECT_EQ(sim.last.standing.state, SearchState::found);
  EXPECT_TRUE(sim.last.standing.fits_verified);
  EXPECT_TRUE(std::none_of(sim.finished.begin(), sim.finished.end(), [](const ProbeResult& r) { return r.full; }));
  EXPECT_LE(sim.last.standing.trials, 4);
}

TEST(SearchStrategyBudget, ZeroResolutionNeedsNeighbours) {
  SearchSettings s = settings_for(SearchStrategy::model, 0.0);
  const Simulation sim = simulate(s, same(linear(100.0, 0.1)));
  ASSERT_EQ(sim.last.standing.state, SearchState::found);
  EXPECT_EQ(sim.last.standing.fits, truth(s, linear(100.0, 0.1)));
  EXPECT_EQ(*sim.last.standing.does_not_fit, *sim.last.standing.fits + 1);
}

// ---- parallel: the k-section ----------------------------------------------

TEST(SearchStrategyParallel, FourWorkersTakeFewerRounds) {
  for (SearchStrategy strategy : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling}) {
    const SearchSettings s = settings_for(strategy);
    const PeakCurve curve = linear(100.0, 0.1);
    const Simulation one = simulate(s, same(curve), 1);
    const Simulation four = simulate(s, same(curve), 4);
    ASSERT_EQ(four.last.standing.state, SearchState::found) << strategy_name(strategy);
    EXPECT_TRUE(verified_fit(four, *four.last.standing.fits));
    EXPECT_LE(four.rounds, one.rounds) << strategy_name(strategy);
    if (strategy != SearchStrategy::model) {
      EXPECT_LT(four.rounds, one.rounds) << strategy_name(strategy);
    }
    std::cout << "[ rounds   ] " << strategy_name(strategy) << ": 1 worker " << one.rounds << ", 4 workers "
              << four.rounds << " (" << four.last.standing.trials << " trials)\n";
  }
}

TEST(SearchStrategyParallel, TheFirstRoundIsASection) {
  const SearchSettings s = settings_for(SearchStrategy::bisect);
  const SearchStep step = next_probes(s, {}, {}, 3);
  ASSERT_EQ(step.next.size(), 3U);
  // 8 · 8192^(i/4): 64, 512, 4096.
  EXPECT_EQ(step.next[0].value, 76);
  EXPECT_EQ(step.next[1].value, 724);
  EXPECT_EQ(step.next[2].value, 6889);
}

}  // namespace
}  // namespace memsweep
