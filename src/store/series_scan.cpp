#include "store/series_scan.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace memsweep::store {
namespace {

// 64 Ki rows of 48 bytes: 3 MiB per block.
constexpr std::uint64_t kScanBlockRows = 64 * 1024;

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
      if (added) series_.emplace_back(found->first.first, row.attempt);
      current_ = found->second;
    }
    series_[current_].add(row.rank, row.epoch, row.t, row.rss, row.sys_used);
  }

  std::vector<SeriesSummary> finish() const {
    std::vector<SeriesSummary> summaries;
    summaries.reserve(series_.size());
    for (const SeriesAccumulator& accumulator : series_) summaries.push_back(accumulator.summary());
    return summaries;
  }

 private:
  std::vector<SeriesAccumulator> series_;
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
