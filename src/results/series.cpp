// An attempt's samples summed up, and the row they make when its result
// never came (resume.cpp; rank 0 for a silent worker).

#include "memsweep/byte_size.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sample_chunk.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace memsweep {

SeriesAccumulator::SeriesAccumulator(std::string trial_id, std::int32_t attempt) {
  summary_.trial_id = std::move(trial_id);
  summary_.attempt = attempt;
}

void SeriesAccumulator::add(std::int32_t rank, std::int32_t epoch, double t, std::int64_t rss, std::int64_t sys_used) {
  if (summary_.samples == 0) {
    summary_.rank = rank;
    summary_.first_rss = rss;
    summary_.last_t = t;
    summary_.last_epoch = epoch;
  }
  ++summary_.samples;
  if (rss >= 0) {
    summary_.peak_rss = std::max(summary_.peak_rss, rss);
    rss_sum_ += static_cast<double>(rss);
    ++rss_count_;
  }
  if (sys_used >= 0) {
    sys_used_sum_ += static_cast<double>(sys_used);
    ++sys_used_count_;
  }
  summary_.last_t = std::max(summary_.last_t, t);
  summary_.last_epoch = std::max(summary_.last_epoch, epoch);
}

void SeriesAccumulator::add(const SampleChunkSeries& chunk) {
  if (chunk.samples == 0) return;
  if (summary_.samples == 0) {
    summary_.rank = chunk.rank;
    summary_.first_rss = chunk.first_rss;
    summary_.last_t = chunk.last_t;
    summary_.last_epoch = chunk.last_epoch;
  }
  summary_.samples += chunk.samples;
  summary_.peak_rss = std::max(summary_.peak_rss, chunk.peak_rss);
  rss_sum_ += chunk.rss_sum;
  rss_count_ += chunk.rss_count;
  sys_used_sum_ += chunk.sys_used_sum;
  sys_used_count_ += chunk.sys_used_count;
  summary_.last_t = std::max(summary_.last_t, chunk.last_t);
  summary_.last_epoch = std::max(summary_.last_epoch, chunk.last_epoch);
}

SeriesSummary SeriesAccumulator::summary() const {
  SeriesSummary done = summary_;
  if (rss_count_ > 0) done.mean_rss = rss_sum_ / static_cast<double>(rss_count_);
  if (sys_used_count_ > 0) done.sys_used_mean = sys_used_sum_ / static_cast<double>(sys_used_count_);
  return done;
}

std::string series_text(const SeriesSummary& series) {
  const std::string peak =
      series.peak_rss >= 0 ? format_byte_size(static_cast<std::uint64_t>(series.peak_rss)) : std::string("unknown");
  return fmt::format("its last sample was at {:.3f} s in epoch {}, {} samples, peak RSS {}", series.last_t,
                     series.last_epoch, series.samples, peak);
}

TrialRecord row_from_series(const TrialSpec& trial, const SeriesSummary& series, int run, TrialStatus status,
                            std::string_view cause, std::string_view message) {
  TrialRecord record{trial_row_for(trial, series.attempt), {}};
  TrialRow& row = record.row;
  row.run = run;
  row.rank = series.rank;
  set_fixed(row.status, status_name(status));
  set_message(record, message);
  set_fixed(row.end_cause, cause);
  row.wall_seconds = series.last_t;
  row.rss_baseline = series.first_rss;
  row.rss_peak = series.peak_rss;
  row.rss_mean = series.mean_rss;
  if (series.first_rss >= 0 && series.peak_rss >= 0) row.rss_footprint = series.peak_rss - series.first_rss;
  row.sys_used_mean = series.sys_used_mean;
  row.samples = series.samples;
  return record;
}

}  // namespace memsweep
