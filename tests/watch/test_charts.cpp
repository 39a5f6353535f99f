// The drawing pieces of `memsweep watch`: sparklines and the large chart read
// as their documentation says (time columns, levels, boundaries, labels), and
// every line keeps to the width the terminal layer relies on.

#include "watch/charts.hpp"

#include "common/duration_text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::watch {
namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

// The code points of UTF-8 text, one string each: a column each in our glyphs.
std::vector<std::string> cells_of(const std::string& text) {
  std::vector<std::string> cells;
  for (const char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80 && !cells.empty())
      cells.back() += c;
    else
      cells.emplace_back(1, c);
  }
  return cells;
}

// The index of a glyph in glyphs.levels; -1 for anything else.
int level_of(const std::string& cell, const Glyphs& glyphs) {
  const auto it = std::find(glyphs.levels.begin(), glyphs.levels.end(), cell);
  return it == glyphs.levels.end() ? -1 : static_cast<int>(it - glyphs.levels.begin());
}

bool is_ascii(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

std::vector<Point> rising(int samples, double dt = 0.1) {
  std::vector<Point> series;
  for (int i = 0; i < samples; ++i) series.push_back({i * dt, (100 + 3 * i) * kMiB, -1, 0});
  return series;
}

// ---- sparkline ----

class SparklineWidth : public ::testing::TestWithParam<int> {};

TEST_P(SparklineWidth, RisingSeriesClimbsFromTheLowestToTheHighestGlyph) {
  const int width = GetParam();
  for (const Glyphs& glyphs : {Glyphs::unicode(), Glyphs::ascii()}) {
    const std::vector<std::string> cells = cells_of(sparkline(rising(300), width, glyphs));
    ASSERT_EQ(cells.size(), static_cast<std::size_t>(width));
    std::vector<int> levels;
    for (const std::string& cell : cells) levels.push_back(level_of(cell, glyphs));
    EXPECT_EQ(std::count(levels.begin(), levels.end(), -1), 0) << "a column without a glyph";
    EXPECT_TRUE(std::is_sorted(levels.begin(), levels.end()));
    EXPECT_EQ(levels.front(), 0);
    if (width > 1) {
      EXPECT_EQ(levels.back(), 7);
    }
  }
}

TEST_P(SparklineWidth, FillsExactlyTheWidthWhateverTheSampleCount) {
  const int width = GetParam();
  for (const int samples : {0, 1, 2, 7, 1000})
    EXPECT_EQ(display_width(sparkline(rising(samples), width, Glyphs::unicode())), static_cast<std::size_t>(width))
        << samples << " samples";
}

INSTANTIATE_TEST_SUITE_P(Widths, SparklineWidth, ::testing::Values(1, 2, 3, 8, 13, 40, 80, 299, 300, 301, 500));

TEST(Sparkline, IgnoresUnmeasuredSamples) {
  const std::vector<Point> clean = rising(50);
  std::vector<Point> holey;
  holey.push_back({-5.0, -1, -1, 0});  // before the first measured one: would move the time axis
  for (const Point& point : clean) {
    holey.push_back(point);
    holey.push_back({point.t + 0.05, -1, -1, 0});
  }
  for (const int width : {10, 37, 120})
    EXPECT_EQ(sparkline(holey, width, Glyphs::unicode()), sparkline(clean, width, Glyphs::unicode()));
}

TEST(Sparkline, BlankWithoutMeasuredSamples) {
  const std::vector<Point> none{{0.0, -1, -1, 0}, {1.0, -1, -1, 0}};
  EXPECT_EQ(sparkline(none, 12, Glyphs::unicode()), std::string(12, ' '));
}

TEST(Sparkline, FlatSeriesIsTheLowestLevelThroughout) {
  std::vector<Point> flat;
  for (int i = 0; i < 40; ++i) flat.push_back({i * 1.0, 512 * kMiB, -1, 0});
  const Glyphs glyphs = Glyphs::unicode();
  for (const std::string& cell : cells_of(sparkline(flat, 25, glyphs))) EXPECT_EQ(cell, glyphs.levels[0]);
}

TEST(Sparkline, HoldsTheLastValueAcrossColumnsWithoutSamples) {
  // Two samples, ten columns: the first nine columns have only the low one behind them.
  const std::vector<Point> two{{0.0, 100 * kMiB, -1, 0}, {10.0, 900 * kMiB, -1, 0}};
  const Glyphs glyphs = Glyphs::unicode();
  std::string expected;
  for (int i = 0; i < 9; ++i) expected += glyphs.levels[0];
  expected += glyphs.levels[7];
  EXPECT_EQ(sparkline(two, 10, glyphs), expected);
}

TEST(Sparkline, AsciiGlyphsAreAscii) {
  const std::string line = sparkline(rising(100), 60, Glyphs::ascii());
  EXPECT_TRUE(is_ascii(line)) << line;
}

// ---- line chart ----

// 0..100 s at 100 MiB, with one peak of `peak` at t = 50.
std::vector<Point> with_peak(std::int64_t peak) {
  std::vector<Point> series;
  for (int i = 0; i <= 200; ++i) series.push_back({i * 0.5, i == 100 ? peak : 100 * kMiB, -1, i / 50});
  return series;
}

int column_of(double t, double t_max, int width) {
  const int columns = width - kChartPlotOffset;
  return std::min(static_cast<int>(std::floor(t / t_max * columns)), columns - 1);
}

struct Size {
  int width;
  int height;
};

class LineChartSize : public ::testing::TestWithParam<Size> {};

TEST_P(LineChartSize, EveryLineIsExactlyTheWidthAndThereAreHeightLines) {
  const auto [width, height] = GetParam();
  std::vector<Point> series = with_peak(400 * kMiB);
  for (Point& point : series) point.sys_used = 3000 * kMiB + static_cast<std::int64_t>(point.t) * kMiB;
  const std::vector<double> starts{12.5, 25.0, 37.5, 50.0, 62.5, 75.0, 87.5, 99.0, 99.5};
  for (const auto value : {&Point::rss, &Point::sys_used}) {
    for (const Glyphs& glyphs : {Glyphs::unicode(), Glyphs::ascii()}) {
      const std::vector<std::string> lines = line_chart({series, starts, value}, width, height, glyphs);
      ASSERT_EQ(lines.size(), static_cast<std::size_t>(height));
      for (const std::string& line : lines) EXPECT_EQ(display_width(line), static_cast<std::size_t>(width)) << line;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, LineChartSize,
                         ::testing::Values(Size{80, 24}, Size{200, 60}, Size{40, 10}, Size{19, 4}, Size{12, 3},
                                           Size{5, 2}, Size{2, 1}, Size{120, 5}));

TEST(LineChart, BoundaryMarksStandWhereTheEpochsStart) {
  const int width = 80;
  const int height = 20;
  const Glyphs glyphs = Glyphs::unicode();
  const std::vector<double> starts{10.0, 37.3, 80.0};
  const std::vector<std::string> lines = line_chart({with_peak(400 * kMiB), starts}, width, height, glyphs);
  const std::vector<std::string> top = cells_of(lines[1]);  // under the legend; empty but for the peak
  const std::vector<std::string> axis = cells_of(lines[static_cast<std::size_t>(height - 2)]);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto column = static_cast<std::size_t>(kChartPlotOffset + column_of(starts[i], 100.0, width));
    EXPECT_EQ(top[column], glyphs.boundary) << "epoch " << i + 1;
    EXPECT_EQ(axis[column], std::to_string(i + 1)) << "epoch " << i + 1;
    EXPECT_NE(top[column - 1], glyphs.boundary);
  }
  EXPECT_EQ(std::count(top.begin(), top.end(), std::string(glyphs.boundary)), 3);
}

TEST(LineChart, ThePeakFillsTheTopRow) {
  const Glyphs glyphs = Glyphs::unicode();
  // One series read from zero, and one zoomed in (every value above half the peak).
  for (const std::int64_t base : {100 * kMiB, 380 * kMiB}) {
    std::vector<Point> series = with_peak(400 * kMiB);
    for (Point& point : series)
      if (point.rss != 400 * kMiB) point.rss = base;
    const int width = 100;
    const std::vector<std::string> lines = line_chart({series, {}}, width, 24, glyphs);
    const std::vector<std::string> top = cells_of(lines[1]);
    const auto peak = static_cast<std::size_t>(kChartPlotOffset + column_of(50.0, 100.0, width));
    for (std::size_t c = kChartPlotOffset; c < top.size(); ++c)
      EXPECT_EQ(top[c] == glyphs.levels[7], c == peak) << "column " << c << " base " << base;
    // The lowest value still shows in the bottom row, the one above the axis.
    const std::vector<std::string> bottom = cells_of(lines[lines.size() - 3]);
    EXPECT_GE(level_of(bottom[kChartPlotOffset], glyphs), 0);
  }
}

TEST(LineChart, TopLabelGivesTheMaximumInMiB) {
  for (const std::int64_t peak_mib : {400, 750, 1000}) {
    const std::vector<std::string> lines = line_chart({with_peak(peak_mib * kMiB), {}}, 80, 16, Glyphs::unicode());
    std::istringstream label(lines[1].substr(0, kChartLabelWidth));
    double value = 0.0;
    std::string unit;
    label >> value >> unit;
    EXPECT_EQ(unit, "MiB") << lines[1];
    EXPECT_NEAR(value, static_cast<double>(peak_mib), 0.5) << lines[1];
  }
}

TEST(LineChart, DrawsTheChosenFigureOnItsOwnScaleNamedInTheLegend) {
  // RSS peaks at 400 MiB; the node's used memory is a flat 2000 MiB.
  std::vector<Point> series = with_peak(400 * kMiB);
  for (Point& point : series) point.sys_used = 2000 * kMiB;
  for (const Glyphs& glyphs : {Glyphs::unicode(), Glyphs::ascii()}) {
    const std::vector<std::string> node = line_chart({series, {}, &Point::sys_used, "node used"}, 80, 20, glyphs);
    EXPECT_NE(node[0].find("node used"), std::string::npos) << node[0];
    // A flat figure fills every column of the top row, on its own scale.
    const std::vector<std::string> top = cells_of(node[1]);
    EXPECT_EQ(std::count(top.begin() + kChartPlotOffset, top.end(), std::string(glyphs.levels.back())),
              80 - kChartPlotOffset);
    std::istringstream label(node[1].substr(0, kChartLabelWidth));
    double value = 0.0;
    std::string unit;
    label >> value >> unit;
    EXPECT_NEAR(value * (unit == "GiB" ? 1024.0 : 1.0), 2000.0, 5.0) << node[1];
    // The RSS chart of the same points tops out at RSS's own peak.
    const std::vector<std::string> rss = line_chart({series, {}}, 80, 20, glyphs);
    EXPECT_NE(rss[0].find("RSS"), std::string::npos) << rss[0];
    std::istringstream rss_label(rss[1].substr(0, kChartLabelWidth));
    rss_label >> value >> unit;
    EXPECT_EQ(unit, "MiB");
    EXPECT_NEAR(value, 400.0, 0.5) << rss[1];
  }
}

TEST(LineChart, TimeAxisRunsFromZeroToTheLastSample) {
  const std::vector<std::string> lines = line_chart({with_peak(400 * kMiB), {}}, 80, 12, Glyphs::unicode());
  const std::string& times = lines.back();
  EXPECT_EQ(times.substr(kChartPlotOffset, 3), "0s ");
  EXPECT_EQ(times.substr(times.find_last_not_of(' ') - 4, 5), "1m40s") << times;
}

TEST(LineChart, AsciiGlyphsAreAscii) {
  std::vector<Point> series = with_peak(400 * kMiB);
  for (Point& point : series) point.sys_used = 900 * kMiB;
  for (const std::string& line :
       line_chart({series, std::vector<double>{20.0, 60.0}, &Point::sys_used}, 80, 20, Glyphs::ascii()))
    EXPECT_TRUE(is_ascii(line)) << line;
}

TEST(LineChart, EmptySeriesStillDrawsTheFrame) {
  const std::vector<std::string> lines = line_chart({}, 50, 8, Glyphs::unicode());
  ASSERT_EQ(lines.size(), 8u);
  for (const std::string& line : lines) EXPECT_EQ(display_width(line), 50u);
}

// ---- text and formatting ----

TEST(Fit, CutsAtCodePointBoundaries) {
  const std::string text = "aé€😀b…z";  // 1, 2, 3, 4, 1, 3, 1 bytes
  ASSERT_EQ(display_width(text), 7u);
  for (int width = 0; width <= 9; ++width) {
    const std::string cut = fit(text, width);
    EXPECT_EQ(display_width(cut), static_cast<std::size_t>(std::min(width, 7))) << width;
    EXPECT_EQ(text.compare(0, cut.size(), cut), 0) << "not a prefix at " << width;
    if (cut.size() < text.size()) {
      EXPECT_NE(static_cast<unsigned char>(text[cut.size()]) & 0xC0, 0x80) << "cut inside a code point at " << width;
    }
  }
}

TEST(Fit, MarksACutWithTheEllipsis) {
  const Glyphs glyphs = Glyphs::unicode();
  EXPECT_EQ(fit("node-with-a-long-name", 8, glyphs), "node-wi…");
  EXPECT_EQ(fit("short", 8, glyphs), "short");
  EXPECT_EQ(fit("exactly8", 8, glyphs), "exactly8");
  EXPECT_EQ(fit("cut", 0, glyphs), "");
  EXPECT_EQ(fit_padded("ab", 5, glyphs), "ab   ");
  EXPECT_EQ(fit("node-with-a-long-name", 8, Glyphs::ascii()), "node-wi~");
}

TEST(Format, DurationsAsTheProgressLinesWriteThem) {
  EXPECT_EQ(format_duration(0.0), "0s");
  EXPECT_EQ(format_duration(45.0), "45s");
  EXPECT_EQ(format_duration(200.0), "3m20s");
  EXPECT_EQ(format_duration(3900.0), "1h05m");
  EXPECT_EQ(format_duration(-1.0), "-");
  EXPECT_EQ(format_time_point(12.34), "12.3s");
  EXPECT_EQ(format_time_point(0.0), "0s");
}

TEST(Format, BytesUnknownAndKnown) {
  EXPECT_EQ(format_bytes(-1), "-");
  EXPECT_EQ(format_bytes(3 * 512 * kMiB), "1.50 GiB");
  EXPECT_EQ(format_bytes_short(-1), "-");
  EXPECT_EQ(format_bytes_short(3 * 512 * kMiB), "1.50 GiB");
  EXPECT_EQ(format_bytes_short(512 * kMiB), "512 MiB");
}

TEST(Format, ShortBytesKeepToTheirWidth) {
  for (std::int64_t bytes = 1; bytes < (std::int64_t{1} << 50); bytes = bytes * 3 / 2 + 1)
    EXPECT_LE(format_bytes_short(bytes).size(), static_cast<std::size_t>(kShortBytesWidth)) << bytes;
  // Where rounding carries into the next decade.
  for (const double mib : {9.996, 99.96, 1023.9})
    EXPECT_LE(format_bytes_short(static_cast<std::int64_t>(mib * kMiB)).size(),
              static_cast<std::size_t>(kShortBytesWidth))
        << mib;
}

}  // namespace
}  // namespace memsweep::watch
