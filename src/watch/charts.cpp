#include "watch/charts.hpp"

#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

namespace memsweep::watch {
namespace {

constexpr int kLevels = 8;      // heights per cell, as Glyphs::levels has them
constexpr int kLabelEvery = 4;  // rows between y labels, so that a tall chart is not a wall of numbers

// One value per column; nullopt: nothing to draw there.
using Columns = std::vector<std::optional<std::int64_t>>;
using Field = std::int64_t Point::*;

bool measured(const Point& point, Field field) { return point.*field >= 0 && std::isfinite(point.t); }

int column_of(double t, double t_min, double t_max, int columns) {
  if (!(t_max > t_min)) return 0;
  const double c = std::floor((t - t_min) / (t_max - t_min) * columns);
  return static_cast<int>(std::clamp(c, 0.0, static_cast<double>(columns - 1)));
}

// The largest value in each column. A column without a sample between two
// that have one holds the previous value: memory does not vanish between
// samples, and a series thinned to fewer points than columns stays a line.
Columns resample(std::span<const Point> series, Field field, double t_min, double t_max, int columns) {
  Columns out(static_cast<std::size_t>(std::max(columns, 0)));
  if (out.empty()) return out;
  for (const Point& point : series) {
    if (!measured(point, field)) continue;
    std::optional<std::int64_t>& cell = out[static_cast<std::size_t>(column_of(point.t, t_min, t_max, columns))];
    cell = std::max(cell.value_or(point.*field), point.*field);
  }
  const auto last = std::find_if(out.rbegin(), out.rend(), [](const auto& v) { return v.has_value(); });
  std::optional<std::int64_t> held;
  for (auto it = out.begin(); it != last.base(); ++it) {
    if (it->has_value())
      held = *it;
    else
      *it = held;
  }
  return out;
}

struct Extent {
  std::int64_t lo = 0;
  std::int64_t hi = 0;
};

std::optional<Extent> extent_of(const Columns& columns, std::optional<Extent> extent = std::nullopt) {
  for (const auto& value : columns) {
    if (!value) continue;
    if (!extent) extent = Extent{*value, *value};
    extent->lo = std::min(extent->lo, *value);
    extent->hi = std::max(extent->hi, *value);
  }
  return extent;
}

// ---- the parts of a line chart ----

// The y scale: eighths of a cell from lo, over `rows` rows.
struct Scale {
  double lo = 0.0;
  double hi = 0.0;
  int rows = 1;

  // Height in eighths, at least one for a measured value, at most the plot.
  int eighths(std::int64_t value) const {
    const int full = rows * kLevels;
    if (!(hi > lo)) return full;
    const long long e = std::llround((static_cast<double>(value) - lo) / (hi - lo) * full);
    return static_cast<int>(std::clamp<long long>(e, 1, full));
  }
  // The value at the top of row `row` (0: the top row).
  double top_of(int row) const { return lo + (hi - lo) * (rows - row) / rows; }
};

Scale scale_for(const Extent& extent, int rows) {
  Scale scale{0.0, static_cast<double>(extent.hi), rows};
  const auto span = static_cast<double>(extent.hi - extent.lo);
  if (extent.lo * 2 >= extent.hi && span > 0.0 && rows > 1)
    scale.lo = static_cast<double>(extent.lo) - span / (rows - 1);
  return scale;
}

using Grid = std::vector<std::vector<std::string_view>>;  // [row from the top][column]

void draw_area(Grid& grid, const Columns& values, const Scale& scale, const Glyphs& glyphs) {
  for (std::size_t c = 0; c < values.size(); ++c) {
    if (!values[c]) continue;
    const int height = scale.eighths(*values[c]);
    for (int r = 0; r < scale.rows; ++r) {  // r from the bottom
      const int cell = std::clamp(height - r * kLevels, 0, kLevels);
      if (cell > 0) grid[static_cast<std::size_t>(scale.rows - 1 - r)][c] = glyphs.levels[cell - 1];
    }
  }
}

// Boundaries go only into empty cells: a mark through the area would hide the data.
void draw_boundaries(Grid& grid, std::span<const double> starts, double t_max, const Glyphs& glyphs) {
  const int columns = grid.empty() ? 0 : static_cast<int>(grid.front().size());
  for (const double t : starts) {
    if (!std::isfinite(t) || columns == 0) continue;
    const auto c = static_cast<std::size_t>(column_of(t, 0.0, t_max, columns));
    for (auto& row : grid)
      if (row[c] == " ") row[c] = glyphs.boundary;
  }
}

bool labelled(const Scale& scale, int row) {
  const int last = scale.rows - 1;
  return row == 0 || row == last || (row % kLabelEvery == 0 && last - row >= 2);
}

// A y label with the decimals that one row's step needs, so that labels
// of neighbouring rows differ ("222 MiB" in a chart of hundreds of MiB,
// "221.72 MiB" in one that moves by a few hundred KiB); never wider than
// `width`.
std::string axis_label(double bytes, double row_step, int width) {
  const ScaledBytes scaled = scale_byte_size(static_cast<std::uint64_t>(std::max(bytes, 0.0)));
  const double step = scaled.value > 0.0 ? row_step * scaled.value / bytes : row_step;  // in the label's unit
  int decimals = step > 0.0 && step < 1.0 ? std::min(static_cast<int>(std::ceil(-std::log10(step))), 2) : 0;
  decimals = std::max(decimals, scaled.value < 10.0 ? 2 : scaled.value < 100.0 ? 1 : 0);  // 3 significant digits
  if (scaled.unit == "B") decimals = 0;
  for (; decimals >= 0; --decimals) {
    std::string label = fmt::format("{:.{}f} {}", scaled.value, decimals, scaled.unit);
    if (static_cast<int>(label.size()) <= width) return label;
  }
  return format_bytes_short(static_cast<std::int64_t>(bytes));
}

// The label of a row (the value at its top) and the axis beside it.
std::string y_axis(const Scale& scale, int row, bool has_data, int label_width, const Glyphs& glyphs) {
  if (!has_data || label_width == 0 || !labelled(scale, row))
    return std::string(static_cast<std::size_t>(label_width), ' ') + std::string(glyphs.y_axis);
  const double row_step = (scale.hi - scale.lo) / std::max(scale.rows, 1);
  return fmt::format("{:>{}}{}", axis_label(scale.top_of(row), row_step, label_width), label_width, glyphs.y_tick);
}

// The x axis with each epoch's number where its boundary falls, or a tick
// where the previous number leaves no room.
std::string x_axis(std::span<const double> starts, double t_max, int columns, const Glyphs& glyphs) {
  std::vector<std::string> cells(static_cast<std::size_t>(columns), std::string(glyphs.x_axis));
  int free_from = 0;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (!std::isfinite(starts[i])) continue;
    const int c = column_of(starts[i], 0.0, t_max, columns);
    const std::string number = std::to_string(i + 1);
    const int end = c + static_cast<int>(number.size());
    if (c >= free_from && end <= columns) {
      for (std::size_t k = 0; k < number.size(); ++k) cells[static_cast<std::size_t>(c) + k] = number.substr(k, 1);
      free_from = end + 1;
    } else if (cells[static_cast<std::size_t>(c)] == glyphs.x_axis) {
      cells[static_cast<std::size_t>(c)] = glyphs.x_tick;
    }
  }
  std::string line;
  for (const std::string& cell : cells) line += cell;
  return line;
}

std::string times(double t_max, int columns) {
  const std::string left = format_time_point(0.0);
  const std::string right = format_time_point(t_max);
  const int gap = columns - static_cast<int>(left.size() + right.size());
  if (gap < 1) return left;
  return left + std::string(static_cast<std::size_t>(gap), ' ') + right;
}

std::string legend(const ChartInput& input, const Glyphs& glyphs) {
  std::string line = fmt::format("{} {}", glyphs.levels.back(), input.title);
  if (!input.epoch_starts.empty()) line += fmt::format("   {} epoch start, numbered on the time axis", glyphs.boundary);
  return line;
}

double time_span(const ChartInput& input) {
  double t_max = 0.0;
  for (const Point& point : input.series)
    if (measured(point, input.value)) t_max = std::max(t_max, point.t);
  for (const double t : input.epoch_starts)
    if (std::isfinite(t)) t_max = std::max(t_max, t);
  return t_max;
}

}  // namespace

// ---- text width ----

std::size_t display_width(std::string_view utf8) {
  return static_cast<std::size_t>(
      std::count_if(utf8.begin(), utf8.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string fit(std::string_view utf8, int width) {
  if (width <= 0) return {};
  int seen = 0;
  for (std::size_t i = 0; i < utf8.size(); ++i) {
    if ((static_cast<unsigned char>(utf8[i]) & 0xC0) == 0x80) continue;
    if (seen++ == width) return std::string(utf8.substr(0, i));
  }
  return std::string(utf8);
}

std::string fit(std::string_view utf8, int width, const Glyphs& glyphs) {
  if (width <= 0) return {};
  if (display_width(utf8) <= static_cast<std::size_t>(width)) return std::string(utf8);
  const int mark = static_cast<int>(display_width(glyphs.ellipsis));
  if (width <= mark) return fit(utf8, width);
  return fit(utf8, width - mark) + std::string(glyphs.ellipsis);
}

std::string fit_padded(std::string_view utf8, int width, const Glyphs& glyphs) {
  std::string line = fit(utf8, width, glyphs);
  const auto used = static_cast<int>(display_width(line));
  if (used < width) line.append(static_cast<std::size_t>(width - used), ' ');
  return line;
}

// ---- formatting ----

std::string format_bytes(std::int64_t bytes) {
  return bytes < 0 ? std::string("-") : format_byte_size(static_cast<std::uint64_t>(bytes));
}

std::string format_bytes_short(std::int64_t bytes) {
  if (bytes < 0) return "-";
  const auto [value, unit] = scale_byte_size(static_cast<std::uint64_t>(bytes));
  if (unit == "B") return fmt::format("{} B", bytes);
  // Decide the decimals on the rounded value: 9.996 is "10.0", not "10.00".
  const int decimals = std::round(value * 10.0) >= 1000.0 ? 0 : std::round(value * 100.0) >= 1000.0 ? 1 : 2;
  return fmt::format("{:.{}f} {}", value, decimals, unit);
}

std::string format_time_point(double seconds) {
  if (!(seconds > 0.0)) return "0s";
  if (seconds < 59.95) return fmt::format("{:.1f}s", seconds);
  return format_duration(seconds);
}

// ---- charts ----

std::string sparkline(std::span<const Point> series, int width, const Glyphs& glyphs) {
  if (width <= 0) return {};
  const auto first =
      std::find_if(series.begin(), series.end(), [](const Point& p) { return measured(p, &Point::rss); });
  const auto last =
      std::find_if(series.rbegin(), series.rend(), [](const Point& p) { return measured(p, &Point::rss); });
  if (first == series.end()) return std::string(static_cast<std::size_t>(width), ' ');

  const Columns columns = resample(series, &Point::rss, first->t, last->t, width);
  const Extent extent = *extent_of(columns);
  std::string line;
  for (const auto& value : columns) {
    if (!value) {
      line += ' ';
      continue;
    }
    const double fraction = extent.hi > extent.lo
                                ? static_cast<double>(*value - extent.lo) / static_cast<double>(extent.hi - extent.lo)
                                : 0.0;
    line += glyphs.levels[static_cast<std::size_t>(std::lround(fraction * (kLevels - 1)))];
  }
  return line;
}

std::vector<std::string> line_chart(const ChartInput& input, int width, int height, const Glyphs& glyphs) {
  if (height <= 0) return {};
  // Lines give way from the top: the legend first, then the times, then the axis.
  const bool with_legend = height >= kChartFrameLines + 1;
  const bool with_times = height >= 3;
  const bool with_axis = height >= 2;
  const int rows = height - int{with_legend} - int{with_times} - int{with_axis};

  const int label_width = width >= kChartPlotOffset + kMinChartColumns ? kChartLabelWidth : 0;
  const int columns = width - label_width - 1;
  if (columns < 1) return std::vector<std::string>(static_cast<std::size_t>(height), fit_padded("", width, glyphs));

  const double t_max = time_span(input);
  const Columns values = resample(input.series, input.value, 0.0, t_max, columns);
  const std::optional<Extent> extent = extent_of(values);
  const Scale scale = extent ? scale_for(*extent, rows) : Scale{0.0, 0.0, rows};

  Grid grid(static_cast<std::size_t>(rows),
            std::vector<std::string_view>(static_cast<std::size_t>(columns), std::string_view(" ")));
  draw_boundaries(grid, input.epoch_starts, t_max, glyphs);
  draw_area(grid, values, scale, glyphs);

  std::vector<std::string> lines;
  if (with_legend) lines.push_back(fit_padded(legend(input, glyphs), width, glyphs));
  for (int r = 0; r < rows; ++r) {
    std::string line = y_axis(scale, r, extent.has_value(), label_width, glyphs);
    for (const std::string_view cell : grid[static_cast<std::size_t>(r)]) line += cell;
    lines.push_back(fit_padded(line, width, glyphs));
  }
  const std::string indent(static_cast<std::size_t>(label_width), ' ');
  if (with_axis)
    lines.push_back(fit_padded(indent + std::string(glyphs.corner) + x_axis(input.epoch_starts, t_max, columns, glyphs),
                               width, glyphs));
  if (with_times) lines.push_back(fit_padded(indent + " " + times(t_max, columns), width, glyphs));
  return lines;
}

}  // namespace memsweep::watch
