#pragma once
// The pieces `memsweep watch` draws with: a sparkline of a trial's RSS, a
// large chart of its memory over time with the epoch boundaries, and the
// formatting of sizes and durations. Pure text: lines of UTF-8 whose display
// width is counted in code points, since every glyph used here takes one
// column (wide characters in host names or paths would be counted short).

#include "watch/snapshot.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::watch {

// The characters charts are drawn with: block and box-drawing characters when
// the terminal's charset is UTF-8, ASCII otherwise. The default is ASCII, the
// one that reads on every terminal and in every log file.
struct Glyphs {
  // Eight heights, lowest first: a sparkline's levels and the top cell of a
  // filled chart column. The lowest is visible, so that "at the minimum"
  // differs from "no sample".
  std::array<std::string_view, 8> levels{"_", ".", ":", "-", "=", "*", "%", "#"};
  std::string_view boundary = "|";  // an epoch boundary in a chart's empty cells
  std::string_view y_axis = "|";
  std::string_view y_tick = "+";  // the y axis beside a label
  std::string_view x_axis = "-";
  std::string_view x_tick = "+";  // an epoch boundary on the x axis without room for its number
  std::string_view corner = "+";
  std::string_view ellipsis = "~";  // marks text cut to fit

  static Glyphs ascii() { return {}; }
  static Glyphs unicode() { return {{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}, "┊", "│", "┤", "─", "┴", "└", "…"}; }
  // What the terminal layer asks for: unicode() when the locale's charset is UTF-8.
  static Glyphs for_charset(bool utf8) { return utf8 ? unicode() : ascii(); }
};

// ---- text width ----

// Columns that UTF-8 text takes: its code points (continuation bytes are not counted).
std::size_t display_width(std::string_view utf8);
// At most `width` columns of `utf8`, cut at a code point boundary; never padded.
std::string fit(std::string_view utf8, int width);
// The same, with the last column of a cut text replaced by glyphs.ellipsis so
// that a reader sees it was cut.
std::string fit(std::string_view utf8, int width, const Glyphs& glyphs);
// Exactly `width` columns: fit() with the ellipsis, then spaces.
std::string fit_padded(std::string_view utf8, int width, const Glyphs& glyphs);

// ---- formatting ----

// format_byte_size ("1.50 GiB", "512.00 MiB"); "-" for a negative (unknown) size.
std::string format_bytes(std::int64_t bytes);
// Three significant digits, for axis labels and narrow columns: "512 MiB",
// "1.50 GiB", "12.3 GiB"; at most kShortBytesWidth columns; "-" when unknown.
std::string format_bytes_short(std::int64_t bytes);
inline constexpr int kShortBytesWidth = 8;  // "1023 MiB"
// A point on a time axis: "0s", "12.3s" under a minute, then as
// format_duration (common/duration_text.hpp).
std::string format_time_point(double seconds);

// ---- sparkline ----

// RSS over time in `width` columns (exactly, each one glyph). The time from
// the first to the last measured sample is cut into `width` equal columns;
// each column shows the largest RSS sampled in it. A column without a sample
// repeats the previous one: RSS is held between samples, and a series thinned
// to fewer points than columns still draws a continuous line. The levels run
// from the smallest to the largest column, so the whole range of glyphs is
// used; a flat series draws the lowest level throughout. Samples with rss -1
// are ignored; without any, the line is blank.
std::string sparkline(std::span<const Point> series, int width, const Glyphs& glyphs);

// ---- line chart ----

// What a large chart draws: one of a series' figures (RSS, or the node's used
// memory) as a filled area, eight heights per cell, with the epoch
// boundaries. One figure per chart, each on its own scale: on a shared one a
// rank's RSS is a sliver under the node's gigabytes. Views into data the
// caller keeps alive during the call.
struct ChartInput {
  std::span<const Point> series;             // in time order; a value of -1 is not drawn
  std::span<const double> epoch_starts;      // the t at which epochs 1, 2, ... began
  std::int64_t Point::*value = &Point::rss;  // the figure drawn
  std::string_view title = "RSS";            // named in the legend
};

// Columns left of the plot: the y labels (kShortBytesWidth) and the y axis.
// Wider than format_bytes_short: a chart of a few hundred KiB's change in
// hundreds of MiB needs "221.72 MiB" to tell its rows apart.
inline constexpr int kChartLabelWidth = 10;
inline constexpr int kChartPlotOffset = kChartLabelWidth + 1;
// The lines around the plot: the legend above, the x axis and the times below.
inline constexpr int kChartFrameLines = 3;

// `height` lines (the legend, height - 3 plot rows, the x axis with the epoch
// numbers, the times "0s" ... "12.3s") of exactly `width` columns each.
//
// x: time runs from 0 to t_max, the largest t of a measured sample or an epoch
// start. A time t is drawn in plot column
//   min(floor(t / t_max * columns), columns - 1),  columns = width - kChartPlotOffset,
// counted from column kChartPlotOffset of the line. Like the sparkline, each
// column shows its largest sample and holds the previous one across gaps.
// y: from lo to hi, hi the largest value drawn (so the peak fills the top
// row). lo is 0 when the smallest value is under half the largest (the amount
// is read from zero); else lo sits one row below the smallest value, so that
// growth from epoch to epoch fills the height rather than one row. Every
// measured column fills at least one eighth of a cell. Labels left of the
// axis give the value at the top of their row.
//
// A narrower chart (width < kChartPlotOffset + kMinChartColumns) has no y
// labels; a lower one drops the legend, then the times, then the axis.
inline constexpr int kMinChartColumns = 10;
std::vector<std::string> line_chart(const ChartInput& input, int width, int height, const Glyphs& glyphs);

}  // namespace memsweep::watch
