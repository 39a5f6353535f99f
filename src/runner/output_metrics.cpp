#include "runner/output_metrics.hpp"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cmath>

namespace memsweep::runner::detail {
namespace {

constexpr std::size_t kShownChars = 40;  // of a value that was not a number, in the message

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::optional<double> metric_value(std::string_view captured) {
  while (!captured.empty() && (captured.front() == ' ' || captured.front() == '\t')) captured.remove_prefix(1);
  while (!captured.empty() && (captured.back() == ' ' || captured.back() == '\t')) captured.remove_suffix(1);
  // from_chars takes no '+'; a program may print one.
  if (captured.size() > 1 && captured.front() == '+' && captured[1] != '-') captured.remove_prefix(1);
  if (captured.empty()) return std::nullopt;
  double value = 0.0;
  // Decimal only: a pattern's group around "0x1A" or "inf" is more likely a
  // mistake than a figure (nan and inf are accepted: a diverged loss prints them).
  const auto [end, error] =
      std::from_chars(captured.data(), captured.data() + captured.size(), value, std::chars_format::general);
  if (error != std::errc() || end != captured.data() + captured.size()) return std::nullopt;
  return value;
}

OutputMetrics::OutputMetrics(OutputFeed& feed, const std::vector<ProgramMetric>& metrics,
                             const FixedString<kTrialIdChars>& trial_id, std::int32_t attempt, TrialSink& sink)
    : feed_(feed), trial_id_(trial_id), attempt_(attempt), sink_(sink) {
  // The epoch's pattern first: it sets the epoch of the line it is on.
  for (const ProgramMetric& metric : metrics) {
    const bool is_epoch = metric.name == kEpochMetric;
    Metric compiled{metric.name, std::regex(metric.pattern, std::regex::ECMAScript | std::regex::optimize), is_epoch};
    if (is_epoch) {
      metrics_.insert(metrics_.begin(), std::move(compiled));
      epoch_from_output_ = true;
    } else {
      metrics_.push_back(std::move(compiled));
    }
  }
}

void OutputFeed::append(std::string_view bytes) {
  const std::lock_guard lock(mutex_);
  if (bytes.size() >= kMetricFinalScanBytes) {
    dropped_ += held_.size() + bytes.size() - kMetricFinalScanBytes;
    held_.assign(bytes.substr(bytes.size() - kMetricFinalScanBytes));
    return;
  }
  if (held_.size() + bytes.size() > kMetricFinalScanBytes) {
    const std::size_t drop = held_.size() + bytes.size() - kMetricFinalScanBytes;
    held_.erase(0, drop);
    dropped_ += drop;
  }
  held_.append(bytes);
}

OutputFeed::Taken OutputFeed::take(std::size_t most) {
  const std::lock_guard lock(mutex_);
  Taken taken{held_.substr(0, most), dropped_};
  held_.erase(0, taken.bytes.size());
  dropped_ = 0;
  return taken;
}

void OutputMetrics::scan(std::int32_t events_epoch) {
  if (!epoch_from_output_) enter_epoch(events_epoch);
  match(feed_.take(kMetricScanBytesPerCall), false);
}

void OutputMetrics::finish(std::int32_t events_epoch) {
  if (!epoch_from_output_) enter_epoch(events_epoch);
  match(feed_.take(kMetricFinalScanBytes), true);
  flush_epoch();
}

void OutputMetrics::match(const OutputFeed::Taken& taken, bool at_end) {
  if (taken.dropped > 0) {
    // The drop cut a line somewhere: matching resumes at the next line's start.
    skipped_bytes_ += taken.dropped;
    lines_.lose_place();
  }
  const auto take = [this](std::string_view line) { take_line(line); };
  lines_.feed(taken.bytes, take, [this](std::string_view) { ++long_lines_; });
  // The program has ended: a last line without its newline still counts.
  if (at_end) lines_.finish(take);
}

void OutputMetrics::take_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // A progress bar rewrites its line with \r: what shows is after the last.
  if (const std::size_t cr = line.rfind('\r'); cr != std::string_view::npos) line.remove_prefix(cr + 1);
  std::cmatch found;
  for (const Metric& metric : metrics_) {
    if (!std::regex_search(line.data(), line.data() + line.size(), found, metric.pattern)) continue;
    if (!found[1].matched) continue;  // an optional group left out: no value on this line
    const std::string_view captured(found[1].first, static_cast<std::size_t>(found[1].length()));
    const std::optional<double> value = metric_value(captured);
    const bool epoch_ok =
        !metric.is_epoch || (value && *value >= 0 && *value <= INT32_MAX && std::floor(*value) == *value);
    if (!value || !epoch_ok) {
      if (not_numbers_++ == 0)
        first_not_number_ = fmt::format("{} = \"{}\"{}", metric.name, captured.substr(0, kShownChars),
                                        metric.is_epoch ? " (an epoch is a whole number from 0)" : "");
      continue;
    }
    if (metric.is_epoch) {
      enter_epoch(static_cast<std::int32_t>(*value));
      continue;
    }
    Held& held = held_[metric.name];
    held.value = *value;
    held.seconds = seconds_since(start_);
    ++held.matches;
  }
}

void OutputMetrics::enter_epoch(std::int32_t epoch) {
  if (epoch == epoch_) return;
  flush_epoch();
  epoch_ = epoch;
}

void OutputMetrics::flush_epoch() {
  for (const auto& [name, held] : held_) {
    MetricRow row;
    row.trial_id = trial_id_;
    row.attempt = attempt_;
    row.epoch = epoch_;
    set_fixed(row.name, name);
    row.value = held.value;
    row.seconds = held.seconds;
    row.matches = held.matches;
    sink_.metric(row);
  }
  held_.clear();
}

std::string OutputMetrics::problems() const {
  std::vector<std::string> said;
  if (not_numbers_ > 0)
    said.push_back(fmt::format("{} metric match{} not a number, the first: {}", not_numbers_,
                               not_numbers_ == 1 ? " was" : "es were", first_not_number_));
  if (long_lines_ > 0)
    said.push_back(fmt::format("{} output line{} longer than {} KiB not matched for metrics", long_lines_,
                               long_lines_ == 1 ? "" : "s", kMetricMaxLineBytes / 1024));
  if (skipped_bytes_ > 0)
    said.push_back(
        fmt::format("metrics: {:.1f} MiB of the program's output not matched (it wrote faster than it could be "
                    "matched; at most {} MiB wait to be)",
                    static_cast<double>(skipped_bytes_) / (1024.0 * 1024.0), kMetricFinalScanBytes / (1024 * 1024)));
  std::string text;
  for (const std::string& part : said) text += (text.empty() ? "" : "; ") + part;
  return text;
}

}  // namespace memsweep::runner::detail
