#include "sweep/search_support.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

namespace memsweep::testing {

std::int64_t Curve::peak(const TrialSpec& trial) const {
  const std::int64_t peak = base + per_example * trial.batch_size;
  return full_costs_more && trial.search && trial.search->full ? peak + peak / 10 : peak;
}

TrialRecord CurveRunner::run(const TrialSpec& trial, const TrialContext& context, TrialSink&) {
  TrialRecord record{trial_row_for(trial, context.attempt), {}};
  TrialRow& row = record.row;
  row.rank = context.rank;
  row.run = context.run;
  set_fixed(row.isolation, "proc");
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  row.start_time = now();
  const auto end = std::chrono::steady_clock::now() + duration_;
  while (std::chrono::steady_clock::now() < end) {
    if (context.stop != nullptr && context.stop->load()) {
      set_fixed(row.status, status_name(TrialStatus::interrupted));
      return record;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const std::int64_t peak = curve_.peak(trial);
  const bool over = trial.mem_budget_bytes && peak > static_cast<std::int64_t>(*trial.mem_budget_bytes);
  row.rss_peak = over ? static_cast<std::int64_t>(*trial.mem_budget_bytes) : peak;
  set_fixed(row.status, status_name(over ? TrialStatus::over_budget : TrialStatus::ok));
  row.wall_seconds = std::chrono::duration<double>(duration_).count();
  row.end_time = now();
  std::lock_guard lock(mutex_);
  ran_.push_back(trial.id);
  return record;
}

std::vector<std::string> CurveRunner::ran() const {
  std::lock_guard lock(mutex_);
  return ran_;
}

SweepSpec search_sweep(std::string_view search, std::string_view grid) {
  return parse_sweep(
      fmt::format("[defaults]\ndataset = \"synthetic\"\nepochs = 2\n[grid]\n{}\n[search]\n{}\n", grid, search),
      "search.toml");
}

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

void expect_found_answers(const std::vector<SearchRow>& searches, const std::vector<TrialRow>& trials,
                          const std::vector<std::string>& ran, const SweepSpec& sweep, const Curve& curve) {
  const SearchSpec& search = *sweep.search;
  ASSERT_EQ(searches.size(), sweep.trials.size() * search.limits.size());
  std::set<std::int32_t> seen;
  for (const SearchRow& row : searches) {
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
    const bool verified = std::any_of(trials.begin(), trials.end(), [&](const TrialRow& trial) {
      return trial.search == row.search && trial.axis_value == row.fits && trial.full_run == 1 &&
             get_fixed(trial.status) == "ok" && trial.rss_peak <= limit;
    });
    EXPECT_TRUE(verified) << "search " << row.search << ": " << row.fits << " never trained in full";
    // The smallest value seen not to fit was a trial that did not fit.
    const bool refused = std::any_of(trials.begin(), trials.end(), [&](const TrialRow& trial) {
      return trial.search == row.search && trial.axis_value == row.does_not_fit &&
             get_fixed(trial.status) == "over_budget";
    });
    EXPECT_TRUE(refused) << "search " << row.search << ": " << row.does_not_fit << " was never seen not to fit";
  }
  // No trial ran twice.
  std::set<std::string> ids(ran.begin(), ran.end());
  EXPECT_EQ(ids.size(), ran.size());
}

}  // namespace memsweep::testing
