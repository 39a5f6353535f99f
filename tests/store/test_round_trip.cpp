// What goes into the results file comes back out: every root attribute and
// every table, across close and reopen, in SWMR and no-SWMR mode; and
// resume's bookkeeping from a real file.

#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

namespace memsweep {
namespace {

using testing::example_epoch;
using testing::example_header;
using testing::example_run;
using testing::example_samples;
using testing::example_trial;
using testing::expect_same;
using testing::kCounterColumns;

class RoundTrip : public ::testing::TestWithParam<bool> {
 protected:
  StoreOptions options() const { return StoreOptions{GetParam()}; }
  testing::TempDir dir_;
};

TEST_P(RoundTrip, EveryTableAndRootAttribute) {
  const auto path = dir_.path() / "results.h5";
  const FileHeader header = example_header();
  const std::vector<SampleRow> samples = example_samples(testing::example_id(0), 0, 1000);
  {
    ResultStore store = ResultStore::create(path, header, false, options());
    EXPECT_EQ(store.run_index(), 0);
    store.append_samples(samples);
    for (int i = 0; i < 5; ++i) store.append_epoch(example_epoch(i));
    for (int i = 0; i < 3; ++i) store.append_trial(example_trial(i));
    store.close();
  }
  const ResultReader reader(path);
  FileHeader expected = header;
  expected.swmr = GetParam();  // the mode the file was written in
  expect_same(expected, reader.header());

  const std::vector<RunRow> runs = reader.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run, 0);
  EXPECT_EQ(runs[0].ranks, 3);
  EXPECT_EQ(get_fixed(runs[0].hosts), "node-a,node-b,node-b");
  EXPECT_EQ(get_fixed(runs[0].command_line), header.command_line);
  EXPECT_EQ(get_fixed(runs[0].memsweep_version), "0.1.0");
  EXPECT_DOUBLE_EQ(runs[0].start_time, 1714566896.0);  // 2024-05-01T12:34:56Z

  const std::vector<TrialRow> trials = reader.trials();
  ASSERT_EQ(trials.size(), 3u);
  for (int i = 0; i < 3; ++i) expect_same(example_trial(i), trials[static_cast<std::size_t>(i)]);

  const std::vector<EpochRow> epochs = reader.epochs();
  ASSERT_EQ(epochs.size(), 5u);
  for (int i = 0; i < 5; ++i) expect_same(example_epoch(i), epochs[static_cast<std::size_t>(i)]);

  ASSERT_EQ(reader.sample_count(), samples.size());
  const std::vector<SampleRow> back = reader.samples(0, samples.size());
  ASSERT_EQ(back.size(), samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) expect_same(samples[i], back[i], kCounterColumns.size());
  // Clamped at the end.
  EXPECT_EQ(reader.samples(990, 100).size(), 10u);
  EXPECT_TRUE(reader.samples(5000, 10).empty());
}

TEST_P(RoundTrip, AppendsContinueAcrossCloseAndResume) {
  const auto path = dir_.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, options());
    store.append_samples(example_samples(testing::example_id(0), 0, 300));
    store.append_trial(example_trial(0));
    store.append_epoch(example_epoch(0));
  }  // closed by the destructor
  {
    ResultStore store = ResultStore::open_for_resume(path, example_run("memsweep run --resume"), options());
    EXPECT_EQ(store.run_index(), 1);
    FileHeader expected = example_header();
    expected.swmr = GetParam();
    expect_same(expected, store.header());
    ASSERT_EQ(store.read_trials().size(), 1u);
    store.append_samples(example_samples(testing::example_id(1), 0, 200, 5'000'000));
    store.append_trial(example_trial(1));
    store.append_epoch(example_epoch(1));
  }
  {
    ResultStore store = ResultStore::open_for_resume(path, example_run("memsweep run --resume again"), options());
    EXPECT_EQ(store.run_index(), 2);
    store.append_trial(example_trial(2));
  }
  const ResultReader reader(path);
  const std::vector<TrialRow> trials = reader.trials();
  ASSERT_EQ(trials.size(), 3u);
  for (int i = 0; i < 3; ++i) expect_same(example_trial(i), trials[static_cast<std::size_t>(i)]);
  ASSERT_EQ(reader.epochs().size(), 2u);
  expect_same(example_epoch(1), reader.epochs()[1]);
  EXPECT_EQ(reader.sample_count(), 500u);
  expect_same(example_samples(testing::example_id(1), 0, 200, 5'000'000)[199], reader.samples(499, 1).at(0),
              kCounterColumns.size());

  const std::vector<RunRow> runs = reader.runs();
  ASSERT_EQ(runs.size(), 3u);
  RunRow expected = example_run("memsweep run --resume");
  expected.run = 1;
  expect_same(expected, runs[1]);
  EXPECT_EQ(runs[2].run, 2);
  EXPECT_EQ(get_fixed(runs[2].command_line), "memsweep run --resume again");
}

TEST_P(RoundTrip, SeriesSummariesPerAttempt) {
  const auto path = dir_.path() / "results.h5";
  ResultStore store = ResultStore::create(path, example_header(), false, options());
  std::vector<SampleRow> a0 = example_samples(testing::example_id(0), 0, 300, 1'000'000);
  a0[10].rss = -1;       // a failed read: left out of peak and mean
  a0[20].sys_used = -1;  // likewise for the system's mean
  const std::vector<SampleRow> b0 = example_samples(testing::example_id(1), 0, 50, 9'000'000);
  const std::vector<SampleRow> a1 = example_samples(testing::example_id(0), 1, 20, 2'000'000);
  // Interleaved chunks, as from several ranks.
  store.append_samples(std::span(a0).first(100));
  store.append_samples(b0);
  store.append_samples(std::span(a0).subspan(100));
  store.append_samples(a1);
  store.flush();

  const std::vector<SeriesSummary> series = store.scan_series();
  ASSERT_EQ(series.size(), 3u);
  EXPECT_EQ(series[0].trial_id, testing::example_id(0));
  EXPECT_EQ(series[0].attempt, 0);
  EXPECT_EQ(series[1].trial_id, testing::example_id(1));
  EXPECT_EQ(series[2].attempt, 1);

  const SeriesSummary& s = series[0];
  EXPECT_EQ(s.samples, 300u);
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.first_rss, 1'000'000);
  EXPECT_EQ(s.peak_rss, 1'000'000 + 4096 * 299);
  double rss_sum = 0;
  double sys_sum = 0;
  for (const SampleRow& row : a0) {
    if (row.rss >= 0) rss_sum += static_cast<double>(row.rss);
    if (row.sys_used >= 0) sys_sum += static_cast<double>(row.sys_used);
  }
  EXPECT_DOUBLE_EQ(s.mean_rss, rss_sum / 299);
  EXPECT_DOUBLE_EQ(s.sys_used_mean, sys_sum / 299);
  EXPECT_DOUBLE_EQ(s.last_t, 2.99);
  EXPECT_EQ(s.last_epoch, 2);
  EXPECT_EQ(series[1].samples, 50u);
  EXPECT_EQ(series[1].peak_rss, 9'000'000 + 4096 * 49);

  store.close();
  const std::vector<SeriesSummary> read_back = ResultReader(path).scan_series();
  ASSERT_EQ(read_back.size(), 3u);
  EXPECT_EQ(read_back[0].peak_rss, s.peak_rss);
  EXPECT_EQ(read_back[2].samples, 20u);
}

TEST_P(RoundTrip, ScanCoversMoreRowsThanOneReadBlock) {
  const auto path = dir_.path() / "results.h5";
  ResultStore store = ResultStore::create(path, example_header(), false, options());
  constexpr std::size_t kRows = 150'000;  // more than two 64 Ki-row blocks
  const std::vector<SampleRow> rows = example_samples(testing::example_id(0), 0, kRows, 0);
  for (std::size_t first = 0; first < kRows; first += 256)
    store.append_samples(std::span(rows).subspan(first, std::min<std::size_t>(256, kRows - first)));
  const std::vector<SeriesSummary> series = store.scan_series();
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].samples, kRows);
  EXPECT_EQ(series[0].peak_rss, 4096 * static_cast<std::int64_t>(kRows - 1));
}

TEST_P(RoundTrip, ResumePlanFromWhatTheFileHolds) {
  const SweepSpec sweep = parse_sweep("[sweep]\nname = \"r\"\n[grid]\nbatch_size = [8, 16, 32]\n", "r.toml");
  const auto path = dir_.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, options());
    // Trial 0 finished; trial 1 streamed samples and its rank died; trial 2
    // never started.
    TrialRow done = trial_row_for(sweep.trials[0], 0);
    set_fixed(done.status, "ok");
    store.append_samples(example_samples(sweep.trials[0].id, 0, 10));
    store.append_trial(done);
    std::vector<SampleRow> orphan = example_samples(sweep.trials[1].id, 0, 120, 7'000'000);
    for (SampleRow& row : orphan) row.rank = 2;
    store.append_samples(orphan);
  }
  ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), options());
  const ResumePlan plan = plan_resume(sweep.trials, store.read_trials(), store.scan_series(), 1, store.run_index(),
                                      LostAttempts::rank_died);
  EXPECT_EQ(plan.already_final, 1u);
  EXPECT_EQ(plan.pending.expand(sweep.trials), (std::vector<PendingTrial>{{1, 1}, {2, 0}}));
  ASSERT_EQ(plan.lost_rows.size(), 1u);
  const TrialRow& lost = plan.lost_rows[0].row;
  EXPECT_EQ(get_fixed(lost.status), "interrupted") << "a lost rank is no result of the trial's";
  EXPECT_EQ(lost.rank, 2);
  EXPECT_EQ(lost.run, 1);
  EXPECT_EQ(lost.rss_peak, 7'000'000 + 4096 * 119);
  EXPECT_EQ(lost.rss_baseline, 7'000'000);
  EXPECT_EQ(lost.samples, 120u);
  store.append_trial(lost, plan.lost_rows[0].message);
  store.close();

  // The next resume sees the lost attempt's row and does not add it again;
  // the trial still runs, as the next attempt.
  ResultStore again = ResultStore::open_for_resume(path, example_run("resume 2"), options());
  const ResumePlan next = plan_resume(sweep.trials, again.read_trials(), again.scan_series(), 0, again.run_index(),
                                      LostAttempts::rank_died);
  EXPECT_TRUE(next.lost_rows.empty());
  EXPECT_EQ(next.killed_not_retried, 0u);
  EXPECT_EQ(next.pending.expand(sweep.trials), (std::vector<PendingTrial>{{1, 1}, {2, 0}}));
}

TEST_P(RoundTrip, NoCountersAndNoEventLists) {
  const auto path = dir_.path() / "results.h5";
  FileHeader header = example_header();
  header.counter_columns.clear();
  header.counter_sources.clear();
  header.counter_encodings.clear();
  header.events_requested.clear();
  header.event_notes.clear();
  header.hosts.clear();
  {
    ResultStore store = ResultStore::create(path, header, false, options());
    store.append_samples(example_samples(testing::example_id(0), 0, 3));
  }
  const ResultReader reader(path);
  EXPECT_TRUE(reader.header().counter_columns.empty());
  EXPECT_TRUE(reader.header().hosts.empty());
  ASSERT_EQ(reader.sample_count(), 3u);
  EXPECT_EQ(reader.samples(2, 1).at(0).rss, 1'000'000 + 2 * 4096);
}

TEST_P(RoundTrip, ASourceListThatDoesNotMatchTheColumnsIsRefusedAndNoFileIsLeft) {
  const auto path = dir_.path() / "results.h5";
  FileHeader header = example_header();
  header.counter_sources.pop_back();
  try {
    ResultStore store = ResultStore::create(path, header, false, options());
    FAIL() << "a file with 2 sources for 3 counter columns was written";
  } catch (const StoreError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr("counter_sources lists 2 values for 3 counter columns"));
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_P(RoundTrip, AppendsAfterCloseFailWithTheFilesName) {
  const auto path = dir_.path() / "results.h5";
  ResultStore store = ResultStore::create(path, example_header(), false, options());
  store.close();
  store.close();  // twice is harmless
  try {
    store.append_trial(example_trial(0));
    FAIL() << "appended to a closed file";
  } catch (const StoreError& error) {
    EXPECT_THAT(error.what(), ::testing::HasSubstr(path.string()));
  }
}

INSTANTIATE_TEST_SUITE_P(SwmrAndNot, RoundTrip, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& case_info) {
  return case_info.param ? "Swmr" : "NoSwmr";
});

TEST(StoreCounters, TooManyOrRepeatedCounterColumnsAreRefused) {
  const testing::TempDir dir;
  FileHeader header = example_header();
  header.counter_columns = {"a", "rss"};  // clashes with a fixed column
  EXPECT_THROW(ResultStore::create(dir.path() / "a.h5", header, false, {}), StoreError);
  header.counter_columns.assign(kMaxCounters + 1, "x");
  EXPECT_THROW(ResultStore::create(dir.path() / "b.h5", header, false, {}), StoreError);
  // Nothing left behind, not even the temporary file.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(Hdf5Version, IsTheLinkedLibrarys) { EXPECT_EQ(hdf5_library_version(), H5_VERSION); }

}  // namespace
}  // namespace memsweep
