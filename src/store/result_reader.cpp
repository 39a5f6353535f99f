// ResultReader: reads a results file, following a live SWMR writer.

#include "memsweep/store.hpp"
#include "store/file_access.hpp"
#include "store/file_header.hpp"
#include "store/series_scan.hpp"
#include "store/table.hpp"
#include "store/writer_lock.hpp"

#include <algorithm>
#include <optional>

namespace memsweep {

struct ResultReader::Impl {
  explicit Impl(const std::filesystem::path& path) : errors(path) {}

  store::Hdf5Errors errors;
  store::FileHandle file;
  bool swmr = false;
  FileHeader header;
  std::optional<store::Table> trials;
  std::optional<store::Table> samples;
  std::optional<store::Table> epochs;
  std::optional<store::Table> runs;
  std::optional<store::Table> messages;  // schema 5 on
  std::optional<store::Table> searches;  // schema 6 on
  std::optional<store::Table> metrics;   // schema 11 on

  // Rows without a trial id at the end of a table were never written
  // (store::trial_id_schema()): not part of what this reader shows.
  void hide_unwritten_rows() {
    for (auto* table : {&trials, &samples, &epochs}) (*table)->hide_unwritten_tail();
    for (auto* table : {&messages, &searches, &metrics})
      if (*table) (*table)->hide_unwritten_tail();
  }

  template <typename Row>
  std::vector<Row> read_range(const store::Table& table, std::uint64_t first, std::uint64_t count) const {
    const std::uint64_t rows = table.rows();
    if (first >= rows) return {};
    std::vector<Row> out(std::min(count, rows - first));
    table.read(first, out.size(), out.data());
    return out;
  }

  template <typename Row>
  std::vector<Row> read_all(const store::Table& table) const {
    std::vector<Row> rows(table.rows());
    table.read(0, rows.size(), rows.data());
    return rows;
  }
};

ResultReader::ResultReader(const std::filesystem::path& path) : impl_(std::make_unique<Impl>(path)) {
  store::silence_hdf5_errors();
  const store::Hdf5Errors& errors = impl_->errors;
  store::OpenedForReading opened = store::open_file_for_reading(path, errors);
  impl_->file = std::move(opened.file);
  impl_->swmr = opened.swmr;
  const hid_t file = impl_->file.get();
  impl_->header = store::read_header(file, errors);
  // Any version from kOldestReadableSchemaVersion on: columns added since
  // the file's version read as their "not measured" value.
  const int version = impl_->header.schema_version;
  impl_->trials.emplace(store::Table::open(file, store::trials_schema(), version, errors));
  impl_->samples.emplace(
      store::Table::open(file, store::samples_schema(impl_->header.counter_columns, errors), version, errors));
  impl_->epochs.emplace(store::Table::open(file, store::epochs_schema(), version, errors));
  impl_->runs.emplace(store::Table::open(file, store::runs_schema(), version, errors));
  // Older files keep their messages in /trials' message column only.
  constexpr int kFirstVersionWithMessages = 5;
  if (version >= kFirstVersionWithMessages)
    impl_->messages.emplace(store::Table::open(file, store::messages_schema(), version, errors));
  // Older files hold no searches.
  constexpr int kFirstVersionWithSearches = 6;
  if (version >= kFirstVersionWithSearches)
    impl_->searches.emplace(store::Table::open(file, store::searches_schema(), version, errors));
  // Older files hold no program metrics.
  constexpr int kFirstVersionWithMetrics = 11;
  if (version >= kFirstVersionWithMetrics)
    impl_->metrics.emplace(store::Table::open(file, store::metrics_schema(), version, errors));
  impl_->hide_unwritten_rows();
}

ResultReader::ResultReader(ResultReader&&) noexcept = default;
ResultReader& ResultReader::operator=(ResultReader&&) noexcept = default;
ResultReader::~ResultReader() = default;

const FileHeader& ResultReader::header() const { return impl_->header; }

void ResultReader::refresh() {
  store::silence_hdf5_errors();
  store::address_whole_file(impl_->file.get(), impl_->errors);
  for (auto* table : {&impl_->trials, &impl_->samples, &impl_->epochs, &impl_->runs}) (*table)->refresh(impl_->swmr);
  for (auto* table : {&impl_->messages, &impl_->searches, &impl_->metrics})
    if (*table) (*table)->refresh(impl_->swmr);
  impl_->hide_unwritten_rows();
}

std::vector<RunRow> ResultReader::runs() const {
  store::silence_hdf5_errors();
  return impl_->read_all<RunRow>(*impl_->runs);
}

std::vector<TrialRow> ResultReader::trials() const {
  store::silence_hdf5_errors();
  return impl_->read_all<TrialRow>(*impl_->trials);
}

std::uint64_t ResultReader::trial_count() const { return impl_->trials->rows(); }

std::vector<TrialRow> ResultReader::trials(std::uint64_t first, std::uint64_t count) const {
  store::silence_hdf5_errors();
  return impl_->read_range<TrialRow>(*impl_->trials, first, count);
}

std::vector<EpochRow> ResultReader::epochs() const {
  store::silence_hdf5_errors();
  return impl_->read_all<EpochRow>(*impl_->epochs);
}

std::vector<MetricRow> ResultReader::metrics() const {
  store::silence_hdf5_errors();
  if (!impl_->metrics) return {};
  return impl_->read_all<MetricRow>(*impl_->metrics);
}

TrialMessages ResultReader::messages() const {
  store::silence_hdf5_errors();
  if (!impl_->messages) return {};
  return join_message_rows(impl_->read_all<MessageRow>(*impl_->messages));
}

std::vector<SearchRow> ResultReader::searches() const {
  store::silence_hdf5_errors();
  if (!impl_->searches) return {};
  return impl_->read_all<SearchRow>(*impl_->searches);
}

std::uint64_t ResultReader::sample_count() const { return impl_->samples->rows(); }

std::vector<SampleRow> ResultReader::samples(std::uint64_t first, std::uint64_t count) const {
  store::silence_hdf5_errors();
  return impl_->read_range<SampleRow>(*impl_->samples, first, count);
}

std::vector<SeriesSummary> ResultReader::scan_series() const {
  store::silence_hdf5_errors();
  return store::scan_series(*impl_->samples, impl_->errors);
}

std::optional<bool> writer_is_live(const std::filesystem::path& path) { return store::WriterLock::is_held(path); }

}  // namespace memsweep
