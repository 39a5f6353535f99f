// ResultStore: the public face of store::StoreWriter, with the storage
// layout chosen by bench/bench_store.cpp.

#include "memsweep/store.hpp"
#include "store/store_writer.hpp"

namespace memsweep {

struct ResultStore::Impl {
  std::unique_ptr<store::StoreWriter> writer;
};

ResultStore::ResultStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResultStore::ResultStore(ResultStore&&) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&&) noexcept = default;
ResultStore::~ResultStore() = default;

ResultStore ResultStore::create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                                const StoreOptions& options, const std::optional<RunRow>& run) {
  return ResultStore(std::make_unique<Impl>(
      Impl{store::StoreWriter::create(path, header, replace, options, store::StoreLayout{}, run)}));
}

ResultStore ResultStore::open_for_resume(const std::filesystem::path& path, const RunRow& run,
                                         const StoreOptions& options,
                                         const std::function<void(const FileHeader&)>& accept) {
  return ResultStore(std::make_unique<Impl>(Impl{store::StoreWriter::open_for_resume(path, run, options, accept)}));
}

const FileHeader& ResultStore::header() const { return impl_->writer->header(); }
int ResultStore::run_index() const { return impl_->writer->run_index(); }
void ResultStore::append_trial(const TrialRow& row, std::string_view message) {
  impl_->writer->append_trial(row, message);
}
void ResultStore::append_trial(const TrialRow& row) { impl_->writer->append_trial(row, get_fixed(row.message)); }
void ResultStore::append_samples(std::span<const SampleRow> rows) { impl_->writer->append_samples(rows); }
void ResultStore::append_epoch(const EpochRow& row) { impl_->writer->append_epoch(row); }
void ResultStore::write_waiting_samples() { impl_->writer->write_waiting_samples(); }
void ResultStore::flush() { impl_->writer->flush(); }
void ResultStore::mark_run(std::string_view end_state) { impl_->writer->mark_run(end_state); }
void ResultStore::close() { impl_->writer->close(); }
std::vector<RunRow> ResultStore::read_runs() const { return impl_->writer->read_runs(); }
std::vector<TrialRow> ResultStore::read_trials() const { return impl_->writer->read_trials(); }
std::vector<SeriesSummary> ResultStore::scan_series() const { return impl_->writer->scan_series(); }

std::string hdf5_library_version() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace memsweep
