#include "watch/render.hpp"

#include "common/duration_text.hpp"
#include "memsweep/eta.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

namespace memsweep::watch {
namespace {

constexpr int kGap = 2;              // spaces between table columns
constexpr int kMinSparkline = 12;    // narrower, a sparkline shows no shape: the hyperparameters move down
constexpr int kHyperIndent = 4;      // a running trial's hyperparameters on a line of their own
constexpr int kMinTrialChart = 8;    // chart lines kept when the counters would take the height
constexpr int kNodeShareOfRoom = 3;  // nodes take at most a third of a limited screen, trials the rest
constexpr int kMinNodeLines = 3;     // the nodes' header, one node and the count of the others

// The lines of a screen, never more than the frame allows, each cut to its width.
class Lines {
 public:
  explicit Lines(const Frame& frame)
      : frame_(frame), limit_(frame.height > 0 ? frame.height - 1 : std::numeric_limits<int>::max()) {}

  int room() const { return std::max(limit_ - static_cast<int>(lines_.size()), 0); }
  void add(std::string_view line) {
    if (room() > 0) lines_.push_back(fit(line, frame_.width, frame_.glyphs));
  }
  // A blank line between sections, unless it would take the last row.
  void gap() {
    if (room() > 1) lines_.emplace_back();
  }
  // "… and 3 more running trials"
  void more(std::size_t count, std::string_view what) {
    add(fmt::format("{} and {} more {}", frame_.glyphs.ellipsis, count, what));
  }
  std::vector<std::string> take() { return std::move(lines_); }

 private:
  const Frame& frame_;
  int limit_;
  std::vector<std::string> lines_;
};

// How many of `count` items of `lines_each` lines fit in `room` lines, leaving
// one for the line that counts the rest when not all fit.
std::size_t items_that_fit(std::size_t count, int lines_each, int room) {
  if (static_cast<long long>(count) * lines_each <= room) return count;
  return static_cast<std::size_t>(std::max(room - 1, 0) / std::max(lines_each, 1));
}

// ---- tables ----

struct Column {
  std::string_view title;
  bool right = false;     // numbers are right-aligned
  bool optional = false;  // left out when the screen is too narrow for the rest
};
using Row = std::vector<std::string>;

// Cells under titles; widths from the widest cell, counted in display columns.
class Table {
 public:
  Table(std::vector<Column> columns, std::vector<Row> rows) : columns_(std::move(columns)), rows_(std::move(rows)) {
    measure();
  }

  // Columns with the gap after each.
  int width() const {
    int total = 0;
    for (const std::size_t w : widths_) total += static_cast<int>(w) + kGap;
    return total;
  }
  std::size_t size() const { return rows_.size(); }
  std::string header() const {
    Row titles;
    for (const Column& column : columns_) titles.emplace_back(column.title);
    return line(titles);
  }
  std::string row(std::size_t i) const { return line(rows_[i]); }

  void drop_optional_columns() {
    for (std::size_t c = columns_.size(); c-- > 0;) {
      if (!columns_[c].optional) continue;
      columns_.erase(columns_.begin() + static_cast<std::ptrdiff_t>(c));
      for (Row& row : rows_) row.erase(row.begin() + static_cast<std::ptrdiff_t>(c));
    }
    measure();
  }

 private:
  void measure() {
    widths_.clear();
    for (const Column& column : columns_) widths_.push_back(display_width(column.title));
    for (const Row& row : rows_)
      for (std::size_t c = 0; c < row.size() && c < widths_.size(); ++c)
        widths_[c] = std::max(widths_[c], display_width(row[c]));
  }

  // Each cell padded to its column and followed by the gap, so that more can
  // be appended at a known column. Padded here, as fmt pads by bytes.
  std::string line(const Row& cells) const {
    std::string text;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::string_view cell = c < cells.size() ? std::string_view(cells[c]) : std::string_view();
      const std::string pad(widths_[c] - display_width(cell), ' ');
      text += columns_[c].right ? pad + std::string(cell) : std::string(cell) + pad;
      text += std::string(kGap, ' ');
    }
    return text;
  }

  std::vector<Column> columns_;
  std::vector<Row> rows_;
  std::vector<std::size_t> widths_;
};

std::string trimmed(std::string line) {
  line.erase(line.find_last_not_of(' ') + 1);
  return line;
}

// ---- formatting ----

std::string title(const SweepSnapshot& snapshot) {
  std::string line = "memsweep watch  " + snapshot.sweep_name;
  if (!snapshot.part.empty()) line += " [" + snapshot.part + "]";
  return line + "  " + snapshot.path;
}

std::string state_line(const SweepSnapshot& snapshot) {
  switch (snapshot.state) {
    case SweepState::running: return "running";
    case SweepState::finished:
      return snapshot.search_progress ? "finished: every search has ended"
                                      : "finished: every planned trial has a final result";
    case SweepState::stopped:
      return fmt::format("stopped: {} {} left; continue with: memsweep run ... --resume", snapshot.left,
                         snapshot.search_progress ? "searches" : "trials");
  }
  return {};
}

// A search sweep's trials are probes, made as its searches go: the searches
// ended of all, then the probes finished, running and how many more at most.
std::string search_counts_line(const SearchProgress& p) {
  return fmt::format("searches {}/{} ended ({} failed); probes: finished {}, running {}, at most {} more", p.ended,
                     p.searches, p.failed, p.probes_finished, p.probes_running, p.probes_at_most);
}

std::string counts_line(const SweepSnapshot& s) {
  if (s.search_progress) return search_counts_line(*s.search_progress);
  return fmt::format("trials {}/{}: done {}, running {}, failed {}, left {}", s.planned - s.left, s.planned, s.done,
                     s.running, s.failed, s.left);
}

std::string times_line(const SweepSnapshot& s) {
  const std::string eta = (s.eta_is_bound ? "at most " : "") + eta_text(s.eta_s);
  const std::string age = s.file_age_s >= 0.0 ? "updated " + format_duration(s.file_age_s) + " ago" : "updated -";
  return fmt::format("elapsed {}  ETA {}  ranks {}  workers {}  {}", format_duration(s.elapsed_s), eta, s.ranks,
                     s.workers, age);
}

// "2/5", "setup/5"; a program that reported no epoch: its status
// ("running"), never an invented setup phase.
std::string epoch_text(const TrialView& trial) {
  if (trial.epoch <= 0 && trial.program) return trial.status;
  if (trial.epoch <= 0) return trial.epochs > 0 ? fmt::format("setup/{}", trial.epochs) : "setup";
  return trial.epochs > 0 ? fmt::format("{}/{}", trial.epoch, trial.epochs) : std::to_string(trial.epoch);
}

std::string host_text(const std::string& host) { return host.empty() ? "-" : host; }

// Counters run to billions: three significant digits and a decimal prefix.
std::string format_count(double value) {
  if (value < 0.0 || !std::isfinite(value)) return "-";
  constexpr std::array<std::string_view, 5> kPrefixes{"", "k", "M", "G", "T"};
  std::size_t prefix = 0;
  while (value >= 1000.0 && prefix + 1 < kPrefixes.size()) {
    value /= 1000.0;
    ++prefix;
  }
  return prefix == 0 ? fmt::format("{:.1f}", value) : fmt::format("{:.3g} {}", value, kPrefixes[prefix]);
}

// ---- overview sections ----

void add_header(Lines& out, const SweepSnapshot& snapshot) {
  out.add(title(snapshot));
  out.add(state_line(snapshot));
  out.add(counts_line(snapshot));
  out.add(times_line(snapshot));
}

// Rows of a table that fit in `room` lines with its header.
void add_table(Lines& out, const Table& table, int room, std::string_view what) {
  out.add(trimmed(table.header()));
  const std::size_t shown = items_that_fit(table.size(), 1, room - 1);
  for (std::size_t i = 0; i < shown; ++i) out.add(trimmed(table.row(i)));
  if (shown < table.size()) out.more(table.size() - shown, what);
}

void add_nodes(Lines& out, const std::vector<NodeMemory>& nodes, int room) {
  std::vector<Row> rows;
  for (const NodeMemory& node : nodes) {
    const std::optional<double> percent = node.used_percent();
    rows.push_back({node.host, format_bytes(node.total), format_bytes(node.available),
                    percent ? fmt::format("{:.1f}%", *percent) : "-", format_bytes(node.used),
                    format_bytes(node.active)});
  }
  const Table table(
      {{"host"}, {"total", true}, {"available", true}, {"used %", true}, {"used", true}, {"active", true}},
      std::move(rows));
  add_table(out, table, room, "nodes");
}

// The running trials' table: fixed columns, then the sparkline in the width
// left, then the hyperparameters on the same line when they fit beside a
// sparkline of kMinSparkline, else indented on the next line.
void add_running(Lines& out, const std::vector<TrialView>& trials, const Frame& frame) {
  if (trials.empty()) {
    out.add("no trial running");
    return;
  }
  std::vector<Row> rows;
  int hyper_width = 0;
  for (const TrialView& trial : trials) {
    rows.push_back({std::to_string(trial.rank), host_text(trial.host), trial.trial_id, epoch_text(trial),
                    format_duration(trial.elapsed_s), format_bytes_short(trial.rss_now),
                    format_bytes_short(trial.rss_peak)});
    hyper_width = std::max(hyper_width, static_cast<int>(display_width(trial.hyperparameters)));
  }
  Table table({{"rank", true},
               {"host", false, true},
               {"trial"},
               {"epoch", true},
               {"elapsed", true, true},
               {"rss now", true},
               {"rss peak", true}},
              std::move(rows));
  if (table.width() + kMinSparkline > frame.width) table.drop_optional_columns();

  const int left = frame.width - table.width();
  const bool same_line = left - kGap - hyper_width >= kMinSparkline;
  const int spark_width = same_line ? left - kGap - hyper_width : left;
  const bool with_spark = spark_width >= kMinSparkline;

  std::string header = table.header();
  if (with_spark) header += fit_padded("rss over time", spark_width, frame.glyphs);
  if (same_line) header += std::string(kGap, ' ') + "hyperparameters";
  out.add(trimmed(header));

  const auto lines_of = [&](const TrialView& t) { return same_line || t.hyperparameters.empty() ? 1 : 2; };
  const int lines_each =
      std::any_of(trials.begin(), trials.end(), [&](const TrialView& t) { return lines_of(t) == 2; }) ? 2 : 1;
  const std::size_t shown = items_that_fit(trials.size(), lines_each, out.room());
  for (std::size_t i = 0; i < shown; ++i) {
    const TrialView& trial = trials[i];
    std::string line = table.row(i);
    if (with_spark) line += sparkline(trial.series, spark_width, frame.glyphs);
    if (same_line) line += std::string(kGap, ' ') + trial.hyperparameters;
    out.add(trimmed(line));
    if (lines_of(trial) == 2) out.add(std::string(kHyperIndent, ' ') + trial.hyperparameters);
  }
  if (shown < trials.size()) out.more(trials.size() - shown, "running trials");
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(trimmed(line));
  return lines;
}

// Each search's bracket: the largest value that fit so far and the smallest
// that did not, narrowing as its probes end.
void add_searches(Lines& out, const std::vector<SearchView>& searches) {
  const auto value = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-"; };
  std::vector<Row> rows;
  for (const SearchView& s : searches)
    rows.push_back({std::to_string(s.search), s.axis.empty() ? "-" : s.axis, format_bytes(s.limit), value(s.fits),
                    value(s.does_not_fit), std::to_string(s.trials), s.status});
  const Table table({{"search", true},
                     {"axis"},
                     {"limit", true},
                     {"fits", true},
                     {"does not fit", true},
                     {"trials", true},
                     {"status"}},
                    std::move(rows));
  add_table(out, table, out.room(), "searches");
}

// What `memsweep summary` printed, cut to the room with a pointer to all of it.
void add_summary(Lines& out, const SweepSnapshot& snapshot) {
  const std::vector<std::string> lines = split_lines(snapshot.summary);
  const std::size_t shown = items_that_fit(lines.size(), 1, out.room());
  for (std::size_t i = 0; i < shown; ++i) out.add(lines[i]);
  if (shown < lines.size()) out.more(lines.size() - shown, "lines of the summary: memsweep summary " + snapshot.path);
}

// ---- trial sections ----

// GPU memory, only for a trial that has it (docs/runner.md, "GPU memory").
void add_gpu_line(Lines& out, const TrialView& trial) {
  if (trial.gpu_now < 0 && trial.gpu_peak < 0) return;
  out.add(fmt::format("GPU now {}  peak {}", format_bytes(trial.gpu_now), format_bytes(trial.gpu_peak)));
}

void add_trial_header(Lines& out, const SweepSnapshot& snapshot, const TrialView& trial) {
  out.add(title(snapshot));
  out.add(fmt::format("trial {}  attempt {}{}  {}  rank {}  host {}", trial.trial_id, trial.attempt,
                      trial.attempts > 1 ? fmt::format(" ({} attempts)", trial.attempts) : std::string(), trial.status,
                      trial.rank, host_text(trial.host)));
  const bool without_epochs = trial.program && trial.epoch <= 0;
  out.add(fmt::format("{}{}  elapsed {}  RSS now {}  peak {}", without_epochs ? "" : "epoch ", epoch_text(trial),
                      format_duration(trial.elapsed_s), format_bytes(trial.rss_now), format_bytes(trial.rss_peak)));
  if (!trial.hyperparameters.empty()) out.add(trial.hyperparameters);
  if (!trial.message.empty() && trial.status != "ok") out.add("message: " + trial.message);
  add_gpu_line(out, trial);
}

const std::vector<std::string>& counter_names(const SweepSnapshot& snapshot, const TrialView& trial) {
  return trial.counter_names.empty() ? snapshot.counter_names : trial.counter_names;
}

void add_counters(Lines& out, const std::vector<std::string>& names, const TrialView& trial) {
  if (names.empty()) {
    out.add("counters: none were recorded for this trial");
    return;
  }
  std::vector<Row> rows;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::int64_t value = i < trial.counters.size() ? trial.counters[i] : -1;
    const double rate = i < trial.counter_rates.size() ? trial.counter_rates[i] : -1.0;
    rows.push_back({names[i], value < 0 ? "-" : std::to_string(value), format_count(rate)});
  }
  add_table(out, Table({{"counter"}, {"now", true}, {"per second", true}}, std::move(rows)), out.room(), "counters");
}

}  // namespace

std::vector<std::string> render_overview(const SweepSnapshot& snapshot, const Frame& frame) {
  Lines out(frame);
  add_header(out, snapshot);
  if (!snapshot.nodes.empty()) {
    out.gap();
    const int room = frame.height > 0 ? std::max(out.room() / kNodeShareOfRoom, kMinNodeLines) : out.room();
    add_nodes(out, snapshot.nodes, room);
  }
  if (snapshot.state == SweepState::running || !snapshot.running_trials.empty()) {
    out.gap();
    add_running(out, snapshot.running_trials, frame);
  }
  if (!snapshot.searches.empty()) {
    out.gap();
    add_searches(out, snapshot.searches);
  }
  if (snapshot.state != SweepState::running && !snapshot.summary.empty()) {
    out.gap();
    add_summary(out, snapshot);
  }
  return out.take();
}

std::vector<std::string> render_trial(const SweepSnapshot& snapshot, const TrialView& trial, const Frame& frame) {
  Lines out(frame);
  add_trial_header(out, snapshot, trial);
  out.gap();

  const std::vector<std::string>& names = counter_names(snapshot, trial);
  int chart_height = kPlainChartHeight;
  if (frame.height > 0) {
    // The chart takes what the counters leave, but keeps kMinTrialChart rows
    // before the counters are cut.
    const int counter_lines = names.empty() ? 1 : 1 + static_cast<int>(names.size());
    chart_height = std::max(out.room() - 1 - counter_lines, std::min(kMinTrialChart, out.room()));
  }
  // Two charts, each on its own scale, the node's under the rank's: RSS
  // takes three fifths of the lines, a blank line parts them.
  const bool with_system_used =
      std::any_of(trial.series.begin(), trial.series.end(), [](const Point& p) { return p.sys_used >= 0; });
  const int node_height = with_system_used ? (chart_height - 1) * 2 / 5 : 0;
  const int rss_height = with_system_used ? chart_height - 1 - node_height : chart_height;
  const ChartInput rss{trial.series, trial.epoch_starts, &Point::rss,
                       trial.program ? "RSS of the program's process tree" : "RSS of the trial's rank"};
  for (const std::string& line : line_chart(rss, frame.width, rss_height, frame.glyphs)) out.add(line);
  if (with_system_used) {
    out.gap();
    const ChartInput node{trial.series, trial.epoch_starts, &Point::sys_used,
                          "system used: the node's total - (free + buffers + cached)"};
    for (const std::string& line : line_chart(node, frame.width, node_height, frame.glyphs)) out.add(line);
  }

  out.gap();
  add_counters(out, names, trial);
  return out.take();
}

}  // namespace memsweep::watch
