// SweepFollower reads a results file that a real store writes in another
// process (SWMR, as rank 0 writes it) and says what runs, what is done and
// what is left; writer_is_live() tells a live writer from a finished one.

#include "common/duration_text.hpp"
#include "memsweep/config.hpp"
#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"
#include "watch/follower.hpp"
#include "watch/render.hpp"
#include "watch/watch_fixtures.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

namespace memsweep::watch {
namespace {

using memsweep::testing::ChildProcess;

using memsweep::testing::follow_header;

std::vector<TrialSpec> sweep_trials() { return memsweep::testing::follow_sweep_trials(); }

// `count` samples of one attempt on `rank`: 10 ms apart, epochs of 50
// samples from epoch 0 (setup), RSS rising 4 KiB a sample from `first_rss`.
std::vector<SampleRow> samples_of(const std::string& id, std::int32_t attempt, std::int32_t rank, std::size_t count,
                                  std::int64_t first_rss, std::int64_t sys_total) {
  std::vector<SampleRow> rows = memsweep::testing::example_samples(id, attempt, count, first_rss);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].rank = rank;
    rows[i].epoch = static_cast<std::int32_t>(i / 50);
    rows[i].sys_total = sys_total;
    rows[i].sys_available = sys_total / 4;
  }
  return rows;
}

TrialRow row_of(const TrialSpec& trial, std::int32_t attempt, std::string_view status, double wall_seconds) {
  TrialRow row = trial_row_for(trial, attempt);
  row.run = 0;
  row.rank = 1;
  set_fixed(row.status, status);
  row.wall_seconds = wall_seconds;
  return row;
}

// Sample rows reach the file a whole chunk at a time, or once they have
// waited a second (docs/results-file.md, Storage): wait, then flush them.
void make_visible(ResultStore& store) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  store.append_samples({});
  store.flush();
}

std::int64_t max_rss(const std::vector<SampleRow>& rows) {
  std::int64_t peak = -1;
  for (const SampleRow& row : rows) peak = std::max(peak, row.rss);
  return peak;
}

TEST(SweepFollower, CountsRunningDoneAndLeftWhileTheWriterLivesThenSaysFinished) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  ASSERT_EQ(trials.size(), 4u);
  const std::vector<SampleRow> running_a = samples_of(trials[0].id, 0, 1, 120, 50'000'000, 16'000'000'000);
  const std::vector<SampleRow> running_b = samples_of(trials[1].id, 0, 2, 80, 70'000'000, 32'000'000'000);

  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{true});
    store.append_trial(row_of(trials[2], 0, "ok", 12.0));          // done
    store.append_trial(row_of(trials[3], 0, "interrupted", 3.0));  // to run again: left
    store.append_samples(running_a);
    store.append_samples(running_b);
    make_visible(store);
    parent.send('1');
    parent.receive();
    store.append_trial(row_of(trials[0], 0, "ok", 1.2));
    store.append_trial(row_of(trials[1], 0, "diverged", 0.8));
    store.append_trial(row_of(trials[3], 1, "ok", 2.0));
    store.close();
    parent.send('2');
  });
  ASSERT_EQ(writer.receive(), '1');
  EXPECT_EQ(writer_is_live(path), true);

  SweepFollower follower(path);
  const auto now = std::chrono::system_clock::now();
  const SweepSnapshot live = follower.update(writer_is_live(path), now);
  EXPECT_EQ(live.state, SweepState::running);
  EXPECT_EQ(live.sweep_name, "follow-test");
  EXPECT_EQ(live.planned, 4);
  EXPECT_EQ(live.running, 2);
  EXPECT_EQ(live.done, 1);
  EXPECT_EQ(live.failed, 0);
  EXPECT_EQ(live.left, 1);
  EXPECT_EQ(live.ranks, 3);
  EXPECT_EQ(live.workers, 2);

  ASSERT_EQ(live.running_trials.size(), 2u);
  const TrialView& a = live.running_trials[0];
  EXPECT_EQ(a.trial_id, trials[0].id);
  EXPECT_EQ(a.rank, 1);
  EXPECT_EQ(a.host, "node-1");
  EXPECT_EQ(a.status, "running");
  EXPECT_EQ(a.hyperparameters, trials[0].summary_text());
  EXPECT_EQ(a.epochs, 3);
  EXPECT_EQ(a.epoch, running_a.back().epoch);
  EXPECT_DOUBLE_EQ(a.elapsed_s, running_a.back().t);
  EXPECT_EQ(a.rss_now, running_a.back().rss);
  EXPECT_EQ(a.rss_peak, max_rss(running_a));
  EXPECT_EQ(a.series.size(), running_a.size());
  // Epochs 1 and 2 begin at samples 50 and 100.
  EXPECT_THAT(a.epoch_starts, ::testing::ElementsAre(running_a[50].t, running_a[100].t));
  ASSERT_EQ(a.counter_names.size(), memsweep::testing::kCounterColumns.size());
  EXPECT_EQ(a.counters[0], running_a.back().counters[0]);
  EXPECT_DOUBLE_EQ(a.counter_rates[0], static_cast<double>(running_a.back().counters[0]) / running_a.back().t);
  EXPECT_EQ(live.running_trials[1].rank, 2);
  EXPECT_EQ(live.running_trials[1].host, "node-2");

  // One finished trial of this run (12 s); the four have the same model, so
  // the same work: the running two have 12 s less what they did left, the
  // interrupted one runs next on the first worker free: 12 - t_a + 12.
  ASSERT_TRUE(live.eta_s.has_value());
  EXPECT_NEAR(*live.eta_s, 24.0 - running_a.back().t, 1e-6);
  // The same as the shared function's for that state, as the progress lines see it.
  EtaInputs inputs;
  inputs.workers = 2;
  inputs.finished.push_back(finished_trial(trial_cost(trials[2], {}), row_of(trials[2], 0, "ok", 12.0)));
  inputs.running.push_back({trial_cost(trials[0], {}), running_a.back().t});
  inputs.running.push_back({trial_cost(trials[1], {}), running_b.back().t});
  inputs.waiting.push_back(trial_cost(trials[3], {}));
  EXPECT_DOUBLE_EQ(*live.eta_s, *remaining_seconds(inputs));

  ASSERT_EQ(live.nodes.size(), 2u);
  EXPECT_EQ(live.nodes[0].host, "node-1");
  EXPECT_EQ(live.nodes[0].total, 16'000'000'000);
  EXPECT_NEAR(*live.nodes[0].used_percent(), 75.0, 1e-9);
  EXPECT_EQ(live.nodes[1].host, "node-2");
  EXPECT_EQ(live.nodes[1].total, 32'000'000'000);
  EXPECT_GE(live.file_age_s, 0.0);

  writer.send('n');
  ASSERT_EQ(writer.receive(), '2');
  ASSERT_EQ(writer.wait(), 0);
  EXPECT_EQ(writer_is_live(path), false);
  const SweepSnapshot ended = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  EXPECT_EQ(ended.state, SweepState::finished);
  EXPECT_EQ(ended.running, 0);
  EXPECT_EQ(ended.done, 3);
  EXPECT_EQ(ended.failed, 1);
  EXPECT_EQ(ended.left, 0);
  EXPECT_TRUE(ended.running_trials.empty());
  EXPECT_EQ(follower.trial_rows().size(), 5u);
}

// A user's program that writes no events lines: every sample of epoch 0,
// phase unknown; its file sets no epochs.
constexpr char kProgramSweepText[] = R"([sweep]
name = "follow-program"
[[trial]]
program = ["sh", "-c", "sleep 60", "sh", "{batch_size}"]
trainer = "sleeper"
dataset = "mnist"
batch_size = 16
)";

TEST(SweepFollower, AProgramWithoutEventsIsRunningWithItsElapsedTimeAndNoEpoch) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = parse_sweep(kProgramSweepText, "follow-program.toml").trials.list();
  ASSERT_EQ(trials.size(), 1u);
  std::vector<SampleRow> samples = samples_of(trials[0].id, 0, 1, 120, 5'000'000, 16'000'000'000);
  for (SampleRow& row : samples) {
    row.epoch = 0;
    row.phase = sample_phase::kUnknown;
  }
  FileHeader header = follow_header();
  header.sweep_name = "follow-program";
  header.sweep_text = kProgramSweepText;
  header.planned_trials = 1;
  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, header, false, StoreOptions{true});
    store.append_samples(samples);
    make_visible(store);
    parent.send('1');
    parent.receive();
    store.close();
  });
  ASSERT_EQ(writer.receive(), '1');
  SweepFollower follower(path);
  const SweepSnapshot live = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  ASSERT_EQ(live.running_trials.size(), 1u);
  const TrialView& trial = live.running_trials[0];
  EXPECT_TRUE(trial.program);
  EXPECT_EQ(trial.epoch, 0);
  EXPECT_EQ(trial.epochs, 0) << "its file sets none: not the built-in default of 1";
  EXPECT_TRUE(trial.epoch_starts.empty());
  EXPECT_EQ(trial.hyperparameters, "sleeper mnist batch=16");
  EXPECT_DOUBLE_EQ(trial.elapsed_s, samples.back().t);

  const std::vector<std::string> lines = render_trial(live, trial, {100, 0, Glyphs::unicode()});
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  EXPECT_THAT(text, ::testing::HasSubstr("running  elapsed " + format_duration(samples.back().t)));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("epoch")));
  EXPECT_THAT(text, ::testing::HasSubstr("RSS of the program's process tree"));
  writer.send('n');
  ASSERT_EQ(writer.wait(), 0);
}

TEST(SweepFollower, AWriterGoneWithTrialsLeftIsStoppedAndItsOrphanSamplesDoNotRun) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{true});
    store.append_trial(row_of(trials[0], 0, "ok", 1.0));
    store.append_samples(samples_of(trials[1].id, 0, 1, 30, 1'000'000, 8'000'000'000));
    make_visible(store);
    parent.send('1');
    parent.receive();  // killed here, as rank 0 could be
  });
  ASSERT_EQ(writer.receive(), '1');
  SweepFollower follower(path);
  EXPECT_EQ(follower.update(writer_is_live(path), std::chrono::system_clock::now()).running, 1);
  writer.kill_hard();
  EXPECT_EQ(writer_is_live(path), false) << "the kernel drops a killed writer's lock";
  const SweepSnapshot stopped = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  EXPECT_EQ(stopped.state, SweepState::stopped);
  EXPECT_EQ(stopped.running, 0);
  EXPECT_EQ(stopped.done, 1);
  EXPECT_EQ(stopped.left, 3);
  EXPECT_EQ(stopped.done + stopped.failed + stopped.running + stopped.left, stopped.planned);
}

TEST(SweepFollower, KeepsTheFollowedTrialAfterItEndedThinnedWithItsPeak) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  std::vector<SampleRow> long_series = samples_of(trials[2].id, 0, 2, 3 * kMaxSeriesPoints + 7, 10'000'000, 1 << 30);
  long_series[1234].rss = 900'000'000;  // a spike between ordinary samples
  {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{true});
    store.append_samples(long_series);
    store.append_trial(row_of(trials[2], 0, "over_budget", 5.0));
    // Late rows of an attempt whose row is in: it does not run again.
    store.append_samples(samples_of(trials[3].id, 0, 1, 50, 1'000'000, 1 << 30));
    store.append_trial(row_of(trials[3], 0, "ok", 0.5));
    store.append_samples(samples_of(trials[3].id, 0, 1, 5, 2'000'000, 1 << 30));
    store.close();
  }
  SweepFollower follower(path, trials[2].id);
  const SweepSnapshot snapshot = follower.update(true, std::chrono::system_clock::now());
  EXPECT_TRUE(snapshot.running_trials.empty());
  EXPECT_EQ(snapshot.running, 0);
  EXPECT_EQ(snapshot.done, 1);
  EXPECT_EQ(snapshot.failed, 1);
  const std::optional<TrialView> view = follower.followed_trial();
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->status, "over_budget");
  EXPECT_LE(view->series.size(), kMaxSeriesPoints);
  EXPECT_GE(view->series.size(), kMaxSeriesPoints / 2);
  const auto peak = std::max_element(view->series.begin(), view->series.end(),
                                     [](const Point& a, const Point& b) { return a.rss < b.rss; });
  EXPECT_EQ(peak->rss, 900'000'000) << "thinning must keep the spike";
  EXPECT_EQ(view->rss_peak, 900'000'000);
  EXPECT_FALSE(SweepFollower(path, "000000000000").followed_trial().has_value());
}

TEST(SweepFollower, ATimeoutCountsWithTheFailures) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{true});
    store.append_trial(row_of(trials[0], 0, "timeout", 60.0));
    store.append_trial(row_of(trials[1], 0, "ok", 1.0));
    store.append_trial(row_of(trials[2], 0, "failed", 1.0));
    store.close();
  }
  SweepFollower follower(path, trials[0].id);
  const SweepSnapshot snapshot = follower.update(false, std::chrono::system_clock::now());
  EXPECT_EQ(snapshot.done, 1);
  EXPECT_EQ(snapshot.failed, 2) << "timeout is final and not ok";
  EXPECT_EQ(snapshot.left, 1);
  EXPECT_EQ(snapshot.state, SweepState::stopped);
  ASSERT_TRUE(follower.followed_trial().has_value());
  EXPECT_EQ(follower.followed_trial()->status, "timeout");
}

// Files of older schema versions are followed too: version 1 has no
// sys_total in its samples, so the nodes' total memory is unknown.
class OlderFile : public ::testing::TestWithParam<int> {};

TEST_P(OlderFile, IsFollowedWithWhatItRecorded) {
  const int version = GetParam();
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  const std::vector<SampleRow> series = samples_of(trials[0].id, 0, 1, 120, 50'000'000, 16'000'000'000);
  {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{true});
    store.append_samples(series);
    store.append_trial(row_of(trials[0], 0, "ok", 1.2));
    store.append_trial(row_of(trials[1], 0, "diverged", 0.8));
    store.close();
  }
  memsweep::testing::rewrite_as_schema_version(path, version);
  SweepFollower follower(path, trials[0].id);
  EXPECT_EQ(follower.header().schema_version, version);
  const SweepSnapshot snapshot = follower.update(false, std::chrono::system_clock::now());
  EXPECT_EQ(snapshot.done, 1);
  EXPECT_EQ(snapshot.failed, 1);
  EXPECT_EQ(snapshot.left, 2);
  ASSERT_EQ(snapshot.nodes.size(), 1u);
  EXPECT_EQ(snapshot.nodes[0].host, "node-1");
  EXPECT_EQ(snapshot.nodes[0].used, series.back().sys_used);
  if (version >= 2) {
    EXPECT_EQ(snapshot.nodes[0].total, 16'000'000'000);
    EXPECT_TRUE(snapshot.nodes[0].used_percent().has_value());
  } else {
    EXPECT_EQ(snapshot.nodes[0].total, -1);
    EXPECT_FALSE(snapshot.nodes[0].used_percent().has_value());
  }
  const std::optional<TrialView> view = follower.followed_trial();
  ASSERT_TRUE(view.has_value());
  EXPECT_EQ(view->status, "ok");
  EXPECT_EQ(view->rss_peak, max_rss(series));
  EXPECT_EQ(follower.trial_rows().at(1).pid, -1) << "not measured in a file before version 3";
  EXPECT_EQ(memsweep::get_fixed(follower.trial_rows().at(1).end_cause), "");
}

INSTANTIATE_TEST_SUITE_P(Versions1And2, OlderFile, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& case_info) {
                           return "Version" + std::to_string(case_info.param);
                         });

TEST(WriterIsLive, CannotTellForAMissingFile) {
  const memsweep::testing::TempDir dir;
  EXPECT_EQ(writer_is_live(dir.path() / "nothing.h5"), std::nullopt);
}

// A probe of search `search` at `value`, limit 1 GiB.
TrialRow probe_of(const TrialSpec& trial, std::int32_t search, std::int32_t probe, std::int64_t value,
                  std::string_view status, std::int64_t peak) {
  TrialRow row = row_of(trial, 0, status, 1.0);
  set_fixed(row.trial_id, fmt::format("{}{:02}", trial.id.substr(0, kTrialIdChars - 2), probe));
  row.search = search;
  row.probe = probe;
  row.axis_value = value;
  row.search_limit = 1 << 30;
  row.full_run = 0;
  row.rss_peak = peak;
  return row;
}

TEST(SweepFollower, ShowsEachSearchsBracketAsItsProbesEnd) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const std::vector<TrialSpec> trials = sweep_trials();
  // Expected by probe_outcome's rule: ok within the limit fits;
  // over_budget, or a program's own out-of-memory, does not; an interrupted
  // probe is no result and runs again.
  {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{false});
    store.append_trial(probe_of(trials[0], 0, 0, 64, "ok", 500'000'000));
    store.append_trial(probe_of(trials[0], 0, 1, 256, "over_budget", 1'100'000'000));
    TrialRow own_oom = probe_of(trials[0], 0, 2, 128, "failed", 900'000'000);
    own_oom.reported_oom = 1;
    store.append_trial(own_oom);
    store.append_trial(probe_of(trials[0], 0, 3, 96, "interrupted", 700'000'000));
    store.append_trial(probe_of(trials[1], 1, 0, 32, "ok", 300'000'000));
    SearchRow ended = memsweep::testing::example_search(0, "above_range");
    ended.search = 1;
    ended.limit = 1 << 30;
    store.append_search(ended);
    store.append_trial(row_of(trials[2], 0, "ok", 2.0));  // not a probe
    store.close();
  }
  SweepFollower follower(path);
  const SweepSnapshot snapshot = follower.update(false, std::chrono::system_clock::now());
  ASSERT_EQ(snapshot.searches.size(), 2u);
  const SearchView& narrowing = snapshot.searches[0];
  EXPECT_EQ(narrowing.search, 0);
  EXPECT_EQ(narrowing.limit, 1 << 30);
  EXPECT_EQ(narrowing.fits, 64);
  EXPECT_EQ(narrowing.does_not_fit, 128);
  EXPECT_EQ(narrowing.trials, 3);
  EXPECT_EQ(narrowing.status, "running");
  EXPECT_EQ(narrowing.axis, "");
  const SearchView& ended = snapshot.searches[1];
  EXPECT_EQ(ended.search, 1);
  EXPECT_EQ(ended.fits, 32);
  EXPECT_EQ(ended.does_not_fit, std::nullopt);
  EXPECT_EQ(ended.trials, 1);
  EXPECT_EQ(ended.status, "above_range");
  EXPECT_EQ(ended.axis, "batch_size");
  ASSERT_EQ(follower.search_rows().size(), 1u);
}

// Two configurations searched at one limit: two searches along batch_size.
constexpr char kSearchSweepText[] = R"([sweep]
name = "follow-search"
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 8, 8], classes = 4, train_size = 64, test_size = 16 }
epochs = 2
[grid]
hidden = [[16], [32]]
[search]
axis = "batch_size"
range = [8, 512]
limit = ["1GiB"]
max_trials = 10
)";

// Configuration `configuration`'s probe number `probe` at `value`, as the
// board makes it (its own id, in no plan), and its row.
TrialSpec probe_trial(const SweepSpec& sweep, std::size_t configuration, std::int32_t probe, std::int64_t value) {
  const SearchPoint point{.search = static_cast<std::int32_t>(configuration),
                          .probe = probe,
                          .value = value,
                          .limit_bytes = sweep.search->limits[0],
                          .full = false};
  return search_trial(sweep.trials[configuration], *sweep.search, point);
}

TrialRow probe_row(const TrialSpec& probe, std::string_view status, double wall_seconds) {
  TrialRow row = row_of(probe, 0, status, wall_seconds);
  row.rss_peak = status == "ok" ? 100'000'000 : 1'200'000'000;
  return row;
}

std::string text_of(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Issue 43: a search sweep's trials are probes, in no plan. Watch said
// "trials 0/2: done 0, running 0" and "no trial running" while probes ran,
// an ETA of 18,252,178 hours (the probes' rate per unit taken as per FLOP
// of the configurations), and each search's axis as "-" until it ended.
TEST(SweepFollower, ASearchSweepCountsSearchesAndProbesAndShowsItsRunningProbes) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const SweepSpec sweep = parse_sweep(kSearchSweepText, "follow-search.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  FileHeader header = follow_header();
  header.sweep_name = "follow-search";
  header.sweep_text = kSearchSweepText;
  header.planned_trials = 20;
  // Search 0: three probes of 2 s; search 1: one of 1 s. Running: one probe of each.
  const std::vector<TrialRow> ended = {
      probe_row(probe_trial(sweep, 0, 0, 8), "ok", 2.0), probe_row(probe_trial(sweep, 0, 1, 512), "over_budget", 2.0),
      probe_row(probe_trial(sweep, 0, 2, 64), "ok", 2.0), probe_row(probe_trial(sweep, 1, 0, 8), "ok", 1.0)};
  const std::vector<SampleRow> running_a = samples_of(probe_trial(sweep, 0, 3, 200).id, 0, 1, 50, 50'000'000, 1 << 30);
  const std::vector<SampleRow> running_b = samples_of(probe_trial(sweep, 1, 1, 512).id, 0, 2, 50, 60'000'000, 1 << 30);

  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, header, false, StoreOptions{true});
    store.flush();
    parent.send('0');
    parent.receive();
    for (const TrialRow& row : ended) store.append_trial(row);
    store.append_samples(running_a);
    store.append_samples(running_b);
    make_visible(store);
    parent.send('1');
    parent.receive();
    for (std::int32_t search = 0; search < 2; ++search) {
      SearchRow row = memsweep::testing::example_search(search);
      row.search = search;
      row.configuration = search;
      row.limit = 1 << 30;
      store.append_search(row);
    }
    store.close();
    parent.send('2');
  });

  // Before any probe ended: every search, its axis and limit from the sweep file.
  ASSERT_EQ(writer.receive(), '0');
  SweepFollower follower(path);
  const SweepSnapshot start = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  ASSERT_EQ(start.searches.size(), 2u);
  for (const SearchView& search : start.searches) {
    EXPECT_EQ(search.axis, "batch_size");
    EXPECT_EQ(search.limit, 1 << 30);
    EXPECT_EQ(search.status, "waiting");
  }
  EXPECT_FALSE(start.eta_s) << "nothing ran: no ETA";
  EXPECT_EQ(start.state, SweepState::running);

  writer.send('n');
  ASSERT_EQ(writer.receive(), '1');
  const SweepSnapshot live = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  EXPECT_EQ(live.state, SweepState::running);
  ASSERT_TRUE(live.search_progress);
  const SearchProgress& progress = *live.search_progress;
  EXPECT_EQ(progress.searches, 2);
  EXPECT_EQ(progress.ended, 0);
  EXPECT_EQ(progress.probes_finished, 4);
  EXPECT_EQ(progress.probes_running, 2);
  EXPECT_EQ(progress.probes_at_most, (10 - 3) + (10 - 1) - 2);
  ASSERT_EQ(live.running_trials.size(), 2u);
  EXPECT_EQ(live.running_trials[0].trial_id, probe_trial(sweep, 0, 3, 200).id);
  EXPECT_EQ(live.running_trials[0].rank, 1);
  EXPECT_EQ(live.running_trials[1].rank, 2);
  EXPECT_THAT(live.running_trials[0].hyperparameters, ::testing::HasSubstr("probe"));
  for (const SearchView& search : live.searches) EXPECT_EQ(search.axis, "batch_size");
  EXPECT_EQ(live.searches[0].fits, 64);
  EXPECT_EQ(live.searches[0].does_not_fit, 512);
  EXPECT_EQ(live.searches[0].status, "running");

  // At most 14 more probes at 1 to 2 s each on 2 workers, with the two
  // running ones' rest: between 7 s and 16 s, and shown as an upper figure.
  ASSERT_TRUE(live.eta_s);
  EXPECT_TRUE(live.eta_is_bound);
  EXPECT_GE(*live.eta_s, 14 * 1.0 / 2);
  EXPECT_LE(*live.eta_s, 16 * 2.0 / 2);

  const std::string text = text_of(render_overview(live, {160, 0, Glyphs::ascii()}));
  EXPECT_THAT(text,
              ::testing::HasSubstr("searches 0/2 ended (0 failed); probes: finished 4, running 2, at most 14 more"));
  EXPECT_THAT(text, ::testing::Not(::testing::HasSubstr("no trial running")));
  EXPECT_THAT(text, ::testing::HasSubstr("ETA at most "));
  EXPECT_THAT(text, ::testing::HasSubstr(probe_trial(sweep, 1, 1, 512).id));

  writer.send('n');
  ASSERT_EQ(writer.receive(), '2');
  ASSERT_EQ(writer.wait(), 0);
  const SweepSnapshot done = follower.update(writer_is_live(path), std::chrono::system_clock::now());
  EXPECT_EQ(done.state, SweepState::finished) << "every search ended, nothing runs";
  EXPECT_EQ(done.search_progress->ended, 2);
  EXPECT_EQ(done.search_progress->probes_at_most, 0);
  EXPECT_FALSE(done.eta_s);
}

TEST(SweepFollower, ASweepWithoutSearchesShowsNone) {
  const memsweep::testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, follow_header(), false, StoreOptions{false});
    store.append_trial(row_of(sweep_trials()[0], 0, "ok", 1.0));
    store.close();
  }
  SweepFollower follower(path);
  EXPECT_TRUE(follower.update(false, std::chrono::system_clock::now()).searches.empty());
}

}  // namespace
}  // namespace memsweep::watch
