#include "store/series_scan.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace memsweep::store {
namespace {

// 64 Ki rows of 48 bytes: 3 MiB per block.
constexpr std::uint64_t kScanBlockRows = 64 * 1024;

struct Accumulator {
  SeriesSummary summary;
  double rss_sum = 0.0;
  std::uint64_t rss_count = 0;
  double sys_used_sum = 0.0;
  std::uint64_t sys_used_count = 0;

  void add(const SeriesColumns& row) {
    if (summary.samples == 0) {
      summary.rank = row.rank;
      summary.first_rss = row.rss;
      summary.last_t = row.t;
      summary.last_epoch = row.epoch;
    }
    ++summary.samples;
    if (row.rss >= 0) {
      summary.peak_rss = std::max(summary.peak_rss, row.rss);
      rss_sum += static_cast<double>(row.rss);
      ++rss_count;
    }
    if (row.sys_used >= 0) {
      sys_used_sum += static_cast<double>(row.sys_used);
      ++sys_used_count;
    }
    summary.last_t = std::max(summary.last_t, row.t);
    summary.last_epoch = std::max(summary.last_epoch, row.epoch);
  }

  SeriesSummary finish() const {
    SeriesSummary done = summary;
    if (rss_count > 0) done.mean_rss = rss_sum / static_cast<double>(rss_count);
    if (sys_used_count > 0) done.sys_used_mean = sys_used_sum / static_cast<double>(sys_used_count);
    return done;
  }
};

// Accumulates rows in file order. A worker streams an attempt's samples in
// runs of consecutive rows, so the lookup happens once per run, not per row.
class SeriesScan {
 public:
  void add(const SeriesColumns& row) {
    if (row.trial_id[0] == '\0') return;  // never written (trial_id_schema())
    if (series_.empty() || row.attempt != current_attempt_ || row.trial_id != current_id_) {
      current_id_ = row.trial_id;
      current_attempt_ = row.attempt;
      const auto [found, added] = index_of_.try_emplace({get_fixed(row.trial_id), row.attempt}, series_.size());
      if (added) {
        series_.emplace_back();
        series_.back().summary.trial_id = found->first.first;
        series_.back().summary.attempt = row.attempt;
      }
      current_ = found->second;
    }
    series_[current_].add(row);
  }

  std::vector<SeriesSummary> finish() const {
    std::vector<SeriesSummary> summaries;
    summaries.reserve(series_.size());
    for (const Accumulator& accumulator : series_) summaries.push_back(accumulator.finish());
    return summaries;
  }

 private:
  std::vector<Accumulator> series_;
  std::map<std::pair<std::string, std::int32_t>, std::size_t> index_of_;
  FixedString<kTrialIdChars> current_id_{};
  std::int32_t current_attempt_ = -1;
  std::size_t current_ = 0;
};

}  // namespace

std::vector<SeriesSummary> scan_series(const Table& samples, const Hdf5Errors& errors,
                                       std::span<const SampleRow> unwritten) {
  const TypeHandle columns = memory_type(series_schema(), errors);
  SeriesScan scan;
  std::vector<SeriesColumns> block;
  for (std::uint64_t first = 0; first < samples.rows(); first += kScanBlockRows) {
    const std::uint64_t count = std::min(kScanBlockRows, samples.rows() - first);
    block.assign(count, SeriesColumns{});
    samples.read_as(columns.get(), first, count, block.data());
    for (const SeriesColumns& row : block) scan.add(row);
  }
  for (const SampleRow& row : unwritten)
    scan.add(SeriesColumns{row.trial_id, row.attempt, row.rank, row.epoch, row.t, row.rss, row.sys_used});
  return scan.finish();
}

}  // namespace memsweep::store
