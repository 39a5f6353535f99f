// The screens of `memsweep watch` drawn from hand-built snapshots: what they
// must tell (counts, trials, state, summary, counters), and that they keep to
// the frame the terminal gives them.

#include "common/duration_text.hpp"
#include "watch/charts.hpp"
#include "watch/render.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::watch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kGiB = 1024 * kMiB;

TrialView running_trial(int rank) {
  TrialView trial;
  trial.trial_id = "trial" + std::to_string(1000000 + rank);  // 12 characters, as the real ids
  trial.attempt = 1;
  trial.rank = rank;
  trial.host = rank % 2 == 0 ? "node-a" : "node-b";
  trial.hyperparameters = "mnist mlp adam lr=0.001 batch=64 epochs=5 hidden=[128,64] rank" + std::to_string(rank);
  trial.status = "running";
  trial.epoch = 2;
  trial.epochs = 5;
  for (int i = 0; i < 400; ++i) {
    const int epoch = i / 100;
    trial.series.push_back({i * 0.1, (200 + rank * 10 + epoch * 30 + i % 7) * kMiB, 8 * kGiB + i * kMiB, epoch});
    if (i % 100 == 0 && epoch > 0) trial.epoch_starts.push_back(i * 0.1);
  }
  trial.elapsed_s = trial.series.back().t;
  trial.rss_now = trial.series.back().rss;
  trial.rss_peak = trial.rss_now + 6 * kMiB;
  return trial;
}

SweepSnapshot snapshot_with(int running) {
  SweepSnapshot s;
  s.path = "results/mnist.h5";
  s.sweep_name = "paper-mnist";
  s.part = "dataset=mnist";
  s.planned = 40;
  s.done = 10;
  s.failed = 2;
  s.running = running;
  s.left = s.planned - s.done - s.failed - running;
  s.elapsed_s = 200.0;
  s.eta_s = 550.0;
  s.ranks = running + 1;
  s.workers = running;
  s.file_age_s = 1.0;
  s.counter_names = {"PAPI_TOT_INS", "minor_faults"};
  s.nodes = {{"node-a", 256 * kGiB, 230 * kGiB, 20 * kGiB, 18 * kGiB}, {"node-b", 256 * kGiB, -1, -1, -1}};
  for (int rank = 1; rank <= running; ++rank) s.running_trials.push_back(running_trial(rank));
  return s;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// The line holding `text`; empty when none does.
std::string line_with(const std::vector<std::string>& lines, const std::string& text) {
  const auto it = std::find_if(lines.begin(), lines.end(),
                               [&](const std::string& line) { return line.find(text) != std::string::npos; });
  return it == lines.end() ? std::string() : *it;
}

std::size_t widest(const std::vector<std::string>& lines) {
  std::size_t width = 0;
  for (const std::string& line : lines) width = std::max(width, display_width(line));
  return width;
}

// ---- overview ----

TEST(Overview, ShowsTheCountsTimesAndWhatIsWatched) {
  const SweepSnapshot s = snapshot_with(3);
  const std::vector<std::string> lines = render_overview(s, {120, 0, Glyphs::unicode()});
  const std::string text = joined(lines);
  EXPECT_THAT(lines[0], HasSubstr("paper-mnist"));
  EXPECT_THAT(lines[0], HasSubstr("dataset=mnist"));
  EXPECT_THAT(lines[0], HasSubstr("results/mnist.h5"));
  EXPECT_THAT(text, HasSubstr("trials 15/40: done 10, running 3, failed 2, left 25"));
  EXPECT_THAT(text, HasSubstr("elapsed 3m20s"));
  EXPECT_THAT(text, HasSubstr("ETA 9m10s"));
  EXPECT_THAT(text, HasSubstr("updated 1s ago"));
  EXPECT_THAT(text, HasSubstr("running"));
}

TEST(Overview, WithoutAnEstimateTheEtaIsUnknownAndWithWorkLeftNeverZero) {
  SweepSnapshot s = snapshot_with(1);
  s.eta_s.reset();
  EXPECT_THAT(joined(render_overview(s, {100, 0, Glyphs::ascii()})), HasSubstr("ETA unknown"));
  s.eta_s = 0.2;  // a trial about to end
  EXPECT_THAT(joined(render_overview(s, {100, 0, Glyphs::ascii()})), HasSubstr("ETA 1s"));
}

TEST(Overview, NodesTableShowsUnknownsAsDashes) {
  const std::vector<std::string> lines = render_overview(snapshot_with(1), {100, 0, Glyphs::unicode()});
  std::istringstream known(line_with(lines, "node-a  "));
  std::vector<std::string> cells;
  for (std::string cell; known >> cell;) cells.push_back(cell);
  // host, then total, available, used %, used, active: sizes are two tokens each.
  ASSERT_EQ(cells.size(), 10u) << line_with(lines, "node-a  ");
  EXPECT_EQ(cells[5], fmt::format("{:.1f}%", 100.0 * 26.0 / 256.0));

  std::istringstream unknown(line_with(lines, "node-b  "));
  cells.clear();
  for (std::string cell; unknown >> cell;) cells.push_back(cell);
  EXPECT_EQ(std::count(cells.begin(), cells.end(), "-"), 4) << line_with(lines, "node-b  ");
}

TEST(Overview, ListsEveryRunningTrialWithItsRank) {
  const SweepSnapshot s = snapshot_with(5);
  for (const int width : {80, 200}) {
    const std::vector<std::string> lines = render_overview(s, {width, 0, Glyphs::unicode()});
    for (const TrialView& trial : s.running_trials) {
      const std::string line = line_with(lines, trial.trial_id);
      ASSERT_FALSE(line.empty()) << trial.trial_id << " at width " << width;
      std::istringstream cells(line);
      int rank = -1;
      cells >> rank;
      EXPECT_EQ(rank, trial.rank);
      EXPECT_THAT(joined(lines), HasSubstr(trial.hyperparameters));
    }
  }
}

TEST(Overview, SparklineAndHyperparametersFillAWideLine) {
  const SweepSnapshot s = snapshot_with(3);
  const int width = 200;
  const std::vector<std::string> lines = render_overview(s, {width, 0, Glyphs::unicode()});
  // All the trials' hyperparameters are equally long: each trial line ends them at the last column.
  for (const TrialView& trial : s.running_trials) {
    const std::string line = line_with(lines, trial.trial_id);
    EXPECT_EQ(display_width(line), static_cast<std::size_t>(width)) << line;
    EXPECT_THAT(line, HasSubstr(trial.hyperparameters));
    EXPECT_THAT(line, HasSubstr(std::string(Glyphs::unicode().levels[0])));
  }
}

TEST(Overview, CountsTheRunningTrialsThatDoNotFit) {
  const SweepSnapshot s = snapshot_with(20);
  for (const int height : {16, 20, 24}) {
    for (const int width : {80, 200}) {
      const std::vector<std::string> lines = render_overview(s, {width, height, Glyphs::unicode()});
      EXPECT_LE(lines.size(), static_cast<std::size_t>(height - 1));
      const auto shown = std::count_if(s.running_trials.begin(), s.running_trials.end(),
                                       [&](const TrialView& t) { return !line_with(lines, t.trial_id).empty(); });
      EXPECT_GT(shown, 0);
      EXPECT_LT(shown, 20);
      EXPECT_THAT(joined(lines), HasSubstr(fmt::format("… and {} more running trials", 20 - shown)))
          << "height " << height << " width " << width;
    }
  }
}

TEST(Overview, AllTrialsShownNeedNoCountOfTheRest) {
  const std::vector<std::string> lines = render_overview(snapshot_with(3), {100, 40, Glyphs::unicode()});
  EXPECT_THAT(joined(lines), ::testing::Not(HasSubstr("more running trials")));
}

class OverviewWidth : public ::testing::TestWithParam<int> {};

TEST_P(OverviewWidth, NoLineIsWiderThanTheFrame) {
  const int width = GetParam();
  SweepSnapshot running = snapshot_with(4);
  running.running_trials[1].host = "a-compute-node-with-a-very-long-name.cluster.example.org";
  SweepSnapshot stopped = snapshot_with(0);
  stopped.state = SweepState::stopped;
  stopped.summary = std::string(300, '=') + "\nlast line";
  for (const SweepSnapshot* s : {&running, &stopped}) {
    for (const Glyphs& glyphs : {Glyphs::unicode(), Glyphs::ascii()}) {
      for (const int height : {0, 24}) {
        EXPECT_LE(widest(render_overview(*s, {width, height, glyphs})), static_cast<std::size_t>(width));
        EXPECT_LE(widest(render_trial(*s, running.running_trials[1], {width, height, glyphs})),
                  static_cast<std::size_t>(width));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, OverviewWidth, ::testing::Range(60, 201));

TEST(Overview, ShowsEachSearchsBracket) {
  SweepSnapshot s = snapshot_with(1);
  SearchView narrowing;
  narrowing.search = 0;
  narrowing.limit = 2 * kGiB;
  narrowing.fits = 512;
  narrowing.does_not_fit = 1024;
  narrowing.trials = 3;
  SearchView ended;
  ended.search = 1;
  ended.limit = 4 * kGiB;
  ended.fits = 900;
  ended.trials = 6;
  ended.axis = "batch_size";
  ended.status = "above_range";
  s.searches = {narrowing, ended};
  const std::vector<std::string> lines = render_overview(s, {120, 0, Glyphs::unicode()});
  const std::string header = line_with(lines, "does not fit");
  for (const char* column : {"search", "axis", "limit", "fits", "trials", "status"})
    EXPECT_THAT(header, HasSubstr(column)) << column;
  EXPECT_THAT(line_with(lines, "1024"), HasSubstr("512"));
  EXPECT_THAT(line_with(lines, "1024"), HasSubstr("running"));
  EXPECT_THAT(line_with(lines, "above_range"), HasSubstr("batch_size"));
  EXPECT_THAT(line_with(lines, "above_range"), HasSubstr("900"));
  // Without searches, no such table.
  EXPECT_TRUE(line_with(render_overview(snapshot_with(1), {120, 0, Glyphs::unicode()}), "does not fit").empty());
}

TEST(Overview, FinishedSaysSoFirstAndShowsTheSummary) {
  SweepSnapshot s = snapshot_with(0);
  s.state = SweepState::finished;
  s.left = 0;
  s.done = 38;
  s.summary = "trials: 38 ok, 2 failed\npeak RSS: 1.50 GiB (trial 5e1f0c2a9b7d)\n";
  const std::vector<std::string> lines = render_overview(s, {100, 0, Glyphs::unicode()});
  ASSERT_GE(lines.size(), 2u);
  EXPECT_THAT(lines[0] + lines[1], HasSubstr("finished"));
  EXPECT_FALSE(line_with(lines, "trials: 38 ok, 2 failed").empty());
  EXPECT_FALSE(line_with(lines, "peak RSS: 1.50 GiB (trial 5e1f0c2a9b7d)").empty());
}

TEST(Overview, StoppedSaysHowToGoOn) {
  SweepSnapshot s = snapshot_with(0);
  s.state = SweepState::stopped;
  s.left = 7;
  const std::vector<std::string> lines = render_overview(s, {120, 0, Glyphs::unicode()});
  const std::string state = lines[0] + lines[1];
  EXPECT_THAT(state, HasSubstr("stopped: 7 trials left"));
  EXPECT_THAT(state, HasSubstr("memsweep run"));
  EXPECT_THAT(state, HasSubstr("--resume"));
}

TEST(Overview, LongSummaryIsCutToTheHeight) {
  SweepSnapshot s = snapshot_with(0);
  s.state = SweepState::finished;
  for (int i = 1; i <= 40; ++i) s.summary += "summary line " + std::to_string(i) + "\n";
  const int height = 20;
  const std::vector<std::string> lines = render_overview(s, {100, height, Glyphs::unicode()});
  EXPECT_EQ(lines.size(), static_cast<std::size_t>(height - 1));
  EXPECT_FALSE(line_with(lines, "summary line 1").empty());
  EXPECT_TRUE(line_with(lines, "summary line 40").empty());
  EXPECT_THAT(lines.back(), HasSubstr("more"));
  EXPECT_THAT(lines.back(), HasSubstr(s.path));
}

// ---- one trial ----

// Lines of the chart's plot: the y axis stands right after the labels.
long plot_rows(const std::vector<std::string>& lines, const Glyphs& glyphs) {
  return std::count_if(lines.begin(), lines.end(), [&](const std::string& line) {
    const std::size_t at = static_cast<std::size_t>(kChartLabelWidth);
    return line.size() > at && (line.compare(at, glyphs.y_axis.size(), glyphs.y_axis) == 0 ||
                                line.compare(at, glyphs.y_tick.size(), glyphs.y_tick) == 0);
  });
}

TEST(Trial, ShowsWhatTheTrialIsAndItsCounters) {
  const SweepSnapshot s = snapshot_with(2);
  TrialView trial = s.running_trials[0];
  trial.counter_names = s.counter_names;
  trial.counters = {123456789012, -1};
  trial.counter_rates = {1.5e9, -1.0};
  const std::vector<std::string> lines = render_trial(s, trial, {100, 0, Glyphs::unicode()});
  const std::string text = joined(lines);
  EXPECT_THAT(text, HasSubstr(trial.trial_id));
  EXPECT_THAT(text, HasSubstr(trial.hyperparameters));
  EXPECT_THAT(text, HasSubstr("2/5"));
  EXPECT_THAT(text, HasSubstr("node-b"));
  EXPECT_THAT(line_with(lines, "PAPI_TOT_INS"), HasSubstr("123456789012"));
  std::istringstream unknown(line_with(lines, "minor_faults"));
  std::vector<std::string> cells;
  for (std::string cell; unknown >> cell;) cells.push_back(cell);
  EXPECT_EQ(cells, (std::vector<std::string>{"minor_faults", "-", "-"}));
}

TEST(Trial, AGpuLineOnlyForATrialWithGpuMemory) {
  const SweepSnapshot s = snapshot_with(1);
  TrialView trial = s.running_trials[0];
  EXPECT_THAT(joined(render_trial(s, trial, {100, 0, Glyphs::unicode()})), Not(HasSubstr("GPU")));
  trial.gpu_now = 3 * kGiB;
  trial.gpu_peak = 5 * kGiB;
  const std::vector<std::string> lines = render_trial(s, trial, {100, 0, Glyphs::unicode()});
  const std::string gpu = line_with(lines, "GPU now");
  EXPECT_THAT(gpu, HasSubstr(format_bytes(3 * kGiB)));
  EXPECT_THAT(gpu, HasSubstr("peak " + format_bytes(5 * kGiB)));
}

TEST(Trial, SaysWhenNoCountersWereRecorded) {
  SweepSnapshot s = snapshot_with(1);
  s.counter_names.clear();
  EXPECT_THAT(joined(render_trial(s, s.running_trials[0], {100, 0, Glyphs::unicode()})), HasSubstr("none"));
}

TEST(Trial, FailedTrialShowsItsMessage) {
  const SweepSnapshot s = snapshot_with(1);
  TrialView trial = s.running_trials[0];
  trial.status = "diverged";
  trial.message = "loss became NaN in epoch 2";
  const std::string text = joined(render_trial(s, trial, {100, 0, Glyphs::unicode()}));
  EXPECT_THAT(text, HasSubstr("diverged"));
  EXPECT_THAT(text, HasSubstr("loss became NaN in epoch 2"));
}

TEST(Trial, PlainChartHasItsFixedHeight) {
  const SweepSnapshot s = snapshot_with(1);
  const Glyphs glyphs = Glyphs::unicode();
  const std::vector<std::string> lines = render_trial(s, s.running_trials[0], {100, 0, glyphs});
  // Two charts (RSS, the node's used memory) and the blank line between them.
  EXPECT_EQ(plot_rows(lines, glyphs), kPlainChartHeight - 1 - 2 * kChartFrameLines);
  EXPECT_FALSE(line_with(lines, "RSS of the trial's rank").empty());
  EXPECT_FALSE(line_with(lines, "system used").empty());
  // Its epoch boundaries are numbered on the time axis.
  EXPECT_FALSE(line_with(lines, "─1─").empty());
  EXPECT_FALSE(line_with(lines, "─3─").empty());
}

// A user's program that writes no events lines: every sample is of
// epoch 0, and no epoch is asked for (its file sets none).
TrialView program_without_events() {
  TrialView trial = running_trial(0);
  trial.program = true;
  trial.hyperparameters = "torch_mnist mnist lr=0.1 batch=64";
  trial.epoch = 0;
  trial.epochs = 0;
  trial.epoch_starts.clear();
  for (Point& point : trial.series) point.epoch = 0;
  return trial;
}

TEST(Overview, AProgramWithoutEventsIsRunningNotInAnInventedEpoch) {
  SweepSnapshot s = snapshot_with(1);
  s.running_trials[0] = program_without_events();
  const std::string line = line_with(render_overview(s, {120, 0, Glyphs::unicode()}), s.running_trials[0].trial_id);
  EXPECT_THAT(line, HasSubstr("running"));
  EXPECT_THAT(line, HasSubstr(format_duration(s.running_trials[0].elapsed_s)));
  EXPECT_THAT(line, Not(HasSubstr("setup")));
}

TEST(Trial, AProgramWithoutEventsShowsItsElapsedTimeAndItsTreesChart) {
  SweepSnapshot s = snapshot_with(1);
  const TrialView trial = program_without_events();
  const std::vector<std::string> lines = render_trial(s, trial, {100, 0, Glyphs::unicode()});
  const std::string progress = line_with(lines, "elapsed");
  EXPECT_THAT(progress, HasSubstr("running  elapsed " + format_duration(trial.elapsed_s)));
  EXPECT_THAT(progress, Not(HasSubstr("epoch")));
  EXPECT_THAT(progress, Not(HasSubstr("setup")));
  EXPECT_FALSE(line_with(lines, "RSS of the program's process tree").empty());
  EXPECT_TRUE(line_with(lines, "RSS of the trial's rank").empty());
}

TEST(Trial, AProgramThatReportsEpochsShowsThem) {
  SweepSnapshot s = snapshot_with(1);
  TrialView trial = program_without_events();
  trial.epoch = 2;
  EXPECT_THAT(line_with(render_trial(s, trial, {100, 0, Glyphs::unicode()}), "elapsed"), HasSubstr("epoch 2 "));
}

TEST(Trial, ChartTakesMostOfALimitedHeight) {
  const SweepSnapshot s = snapshot_with(1);
  const Glyphs glyphs = Glyphs::ascii();
  for (const int height : {24, 40, 60}) {
    const std::vector<std::string> lines = render_trial(s, s.running_trials[0], {100, height, glyphs});
    EXPECT_LE(lines.size(), static_cast<std::size_t>(height - 1));
    // The two charts' lines: their plots, each one's legend and axes, the blank line between.
    EXPECT_GE(plot_rows(lines, glyphs) + 2 * kChartFrameLines + 1, (height - 1) / 2) << "height " << height;
    EXPECT_THAT(joined(lines), HasSubstr("minor_faults")) << "height " << height;
  }
}

}  // namespace
}  // namespace memsweep::watch
