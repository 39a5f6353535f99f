// ResultStore: the writer of a results file (rank 0), with the storage
// layout chosen by bench/bench_store.cpp.

#include "memsweep/store.hpp"
#include "store/disk_fill_hook.hpp"
#include "store/file_access.hpp"
#include "store/file_header.hpp"
#include "store/hdf5_handles.hpp"
#include "store/replace_target.hpp"
#include "store/result_store_internals.hpp"
#include "store/schema.hpp"
#include "store/series_scan.hpp"
#include "store/table.hpp"
#include "store/writer_lock.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace memsweep {
namespace {

// Beside the target, so that the final rename stays within one filesystem
// (atomic), and hidden, so that a crash's leftover is not mistaken for output.
std::filesystem::path temporary_path_beside(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.parent_path() / fmt::format(".{}.{}-{}.tmp", path.filename().string(), ::getpid(), counter.fetch_add(1));
}

// FileHeader::start_time is ISO 8601 UTC ("2024-05-01T12:00:00Z"); the
// current time when it does not parse.
double unix_time_of(const std::string& iso_time) {
  std::tm parts{};
  double seconds = 0.0;
  if (std::sscanf(iso_time.c_str(), "%d-%d-%dT%d:%d:%lf", &parts.tm_year, &parts.tm_mon, &parts.tm_mday, &parts.tm_hour,
                  &parts.tm_min, &seconds) == 6) {
    parts.tm_year -= 1900;
    parts.tm_mon -= 1;
    const std::time_t whole = ::timegm(&parts);
    if (whole != static_cast<std::time_t>(-1)) return static_cast<double>(whole) + seconds;
  }
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

RunRow first_run(const FileHeader& header) {
  RunRow run;
  run.run = 0;
  run.start_time = unix_time_of(header.start_time);
  run.ranks = header.ranks;
  set_fixed(run.hosts, fmt::format("{}", fmt::join(header.hosts, ",")));
  set_fixed(run.command_line, header.command_line);
  set_fixed(run.memsweep_version, header.memsweep_version);
  return run;
}

store::TableStorage samples_storage(const store::StoreLayout& layout, const FileHeader& header, double flush_seconds) {
  store::TableStorage storage = layout.samples;
  if (storage.chunk_rows == 0) storage.chunk_rows = store::samples_chunk_rows(header, flush_seconds);
  return storage;
}

template <typename Row>
std::vector<Row> every_row(const store::Table& table) {
  std::vector<Row> rows(table.rows());
  table.read(0, rows.size(), rows.data());
  return rows;
}

std::string exists_message(const std::filesystem::path& path) {
  return fmt::format("{} already exists: pass --resume to continue it or --force to replace it", path.string());
}

// Gives the finished temporary file its name. Without `replace` the name
// must still be free: link() fails if it is not, where rename() would not.
// `name_was_free`: --force found no file at the name, so it holds no lock
// on one; a file that appeared there meanwhile is another run's (two --force
// on a new name at once) and is not replaced either.
void publish(const std::filesystem::path& temporary, const std::filesystem::path& path, bool replace,
             bool name_was_free, const store::Hdf5Errors& errors) {
  if (!replace || name_was_free) {
    if (::link(temporary.c_str(), path.c_str()) == 0) {
      ::unlink(temporary.c_str());
      return;
    }
    if (errno == EEXIST) {
      if (!replace) throw StoreExistsError(exists_message(path));
      store::WriterLock::check_free(path, errors);  // names the run that has it, if one does
      errors.fail_plain("appeared while this run was creating it; run again with --force to replace it");
    }
    // A filesystem without hard links: check, then rename.
    std::error_code ignored;
    if (!replace && std::filesystem::exists(path, ignored)) throw StoreExistsError(exists_message(path));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error)
    errors.fail_plain(fmt::format("cannot move the new file {} to its name: {}", temporary.string(), error.message()));
}

}  // namespace

// The writer's state, and the steps its operations share. The layout is a
// parameter so that bench/bench_store.cpp measures this very code with other
// settings (ResultStoreInternals).
struct ResultStore::Impl {
  struct Tables {
    store::Table trials;
    store::Table samples;
    store::Table epochs;
    store::Table runs;
    store::Table messages;
    store::Table searches;
    store::Table metrics;  // schema 11

    // Every table, for what is done to each alike (flush marks, roll-backs).
    std::array<store::Table*, 7> all() { return {&trials, &samples, &epochs, &runs, &messages, &searches, &metrics}; }
  };

  Impl(const std::filesystem::path& path, const StoreOptions& options, const store::StoreLayout& layout);
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl();

  static std::unique_ptr<Impl> create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                                      const StoreOptions& options, const store::StoreLayout& layout,
                                      const std::optional<RunRow>& run);
  // A resume's two steps (ResultStore::hold_for_resume): the lock taken,
  // the file checked and its /runs read; then opened for writing.
  static std::unique_ptr<Impl> hold_for_resume(const std::filesystem::path& path, const StoreOptions& options,
                                               std::vector<RunRow>& runs);
  void resume_held(const RunRow& run);

  void flush();
  // After a failed write: every table set back to its last flushed size,
  // and flushed again, where HDF5 can (store::Table::roll_back_to_flushed).
  void roll_back_unflushed_rows();
  // A write that failed (a full disk, met by a flush, a direct chunk write
  // or an append): the file is left as its last good flush, and nothing
  // more is written to it (write_failed_). Once.
  void give_up_writing() noexcept;
  // Runs one of the writer's operations, giving up writing when it throws.
  template <typename Operation>
  void writing(const Operation& operation);
  void check_writable() const;
  void close();
  // After a failed write: the file closed, then its rows never written
  // dropped (drop_rows_never_written), the lock given back.
  void close_after_failure() noexcept;
  // After a failed write or close, once the file is closed (its definition says why).
  void drop_rows_never_written() noexcept;

  void open_tables();
  void close_tables();
  void note_chunk_format();
  void append_run(RunRow run);
  // With SWMR: tables closed, SWMR writing started, tables reopened. Then a
  // flush, so that the file on disk is whole before anyone sees it.
  void start_writing();
  void check_open() const;
  // Writes the waiting sample rows that complete chunks; all of them once
  // the oldest is samples_max_age old; with `all`, all of them.
  void write_samples(bool all);
  void write_unwritten(std::size_t count);
  // Whether a row of this attempt waits in unwritten_ (it must be written
  // before the attempt's next chunk).
  bool waits(const CompressedChunkInfo& info) const;
  void append_compressed(const CompressedSampleChunk& chunk);
  // ResultStore::write_waiting_samples(), inside writing().
  void write_waiting_samples();

  std::filesystem::path path_;
  store::Hdf5Errors errors_;
  StoreOptions options_;
  store::StoreLayout layout_;
  FileHeader header_;
  store::FileHandle file_;
  std::optional<Tables> tables_;
  store::WriterLock lock_;
  int run_index_ = 0;
  RunRow run_;  // this run's row of /runs, as written
  std::chrono::steady_clock::time_point last_flush_{};
  std::vector<SampleRow> unwritten_;
  std::chrono::steady_clock::time_point oldest_unwritten_{};
  // What chunks /samples takes as they are (after open_tables()).
  SampleChunkFormat chunk_format_;
  bool chunks_accepted_ = false;  // false: a filter this build does not make
  store::SampleWriteCounts counts_;
  bool written_since_flush_ = false;
  // Set by a failed write: nothing more is written, close() included,
  // since a size it grew could reach the file without the rows (a later
  // flush writes the tables' sizes in place, where a full disk still takes
  // them, and not the new chunks: rows of zeros).
  bool write_failed_ = false;
  // The file has its name (path_): a failed write may reopen it there.
  bool published_ = false;
  store::StoreHook hook_;
};

ResultStore::Impl::Impl(const std::filesystem::path& path, const StoreOptions& options,
                        const store::StoreLayout& layout)
    : path_(path),
      errors_(path),
      options_(options),
      layout_(layout),
      hook_(store::store_hook_from_environment(errors_)) {}

ResultStore::Impl::~Impl() {
  try {
    close();
  } catch (...) {
    // A destructor cannot report; close() is there for callers that care.
  }
}

std::unique_ptr<ResultStore::Impl> ResultStore::Impl::create(const std::filesystem::path& path,
                                                             const FileHeader& header, bool replace,
                                                             const StoreOptions& options,
                                                             const store::StoreLayout& layout,
                                                             const std::optional<RunRow>& run) {
  store::silence_hdf5_errors();
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    throw StoreError(fmt::format("{}: is a directory; expected the path of a results file (HDF5)", path.string()));
  // symlink_status: a dangling link, a FIFO, a device, all exist.
  const bool exists = std::filesystem::exists(std::filesystem::symlink_status(path, ignored));
  if (exists && !replace) throw StoreExistsError(exists_message(path));

  std::unique_ptr<Impl> writer(new Impl(path, options, layout));
  const store::Hdf5Errors& errors = writer->errors_;
  // --force replaces a finished or dead run's file, not a live run's, and
  // one run's at a time: the lock on the file it replaces is held until the
  // new file, locked itself, has its name (store::WriterLock says why).
  store::WriterLock replaced_file_lock;
  if (exists) {
    store::check_replaceable_kind(path, errors);
    replaced_file_lock = store::WriterLock::acquire_to_replace(path, errors);
    store::check_replaceable_content(path, errors);
  }
  writer->header_ = header;
  writer->header_.schema_version = kSchemaVersion;  // the tables below are this version's
  writer->header_.swmr = options.swmr;
  const std::filesystem::path temporary = temporary_path_beside(path);
  try {
    writer->file_ = store::create_file(temporary, errors, layout.reuse_freed_space);
    const hid_t file = writer->file_.get();
    store::write_header(file, writer->header_, errors);
    writer->tables_.emplace(Tables{
        store::Table::create(file, store::trials_schema(), layout.trials, errors),
        store::Table::create(file, store::samples_schema(header.counter_columns, errors),
                             samples_storage(layout, header, run ? run->flush_interval : kDefaultFlushSeconds), errors),
        store::Table::create(file, store::epochs_schema(), layout.epochs, errors),
        store::Table::create(file, store::runs_schema(), layout.runs, errors),
        store::Table::create(file, store::messages_schema(), layout.messages, errors),
        // Created now although a sweep without [search] leaves it empty:
        // SWMR writing cannot create it later.
        store::Table::create(file, store::searches_schema(), layout.searches, errors),
        store::Table::create(file, store::metrics_schema(), layout.metrics, errors),
    });
    writer->append_run(run ? *run : first_run(writer->header_));
    writer->start_writing();
    // Without SWMR the new file is locked too: HDF5 holds its flock() on it.
    if (options.swmr) writer->lock_ = store::WriterLock::acquire(temporary, errors);
    publish(temporary, path, replace, !exists, errors);
    writer->published_ = true;
  } catch (...) {
    writer->close_tables();
    writer->file_.reset();
    std::filesystem::remove(temporary, ignored);
    throw;
  }
  return writer;
}

std::unique_ptr<ResultStore::Impl> ResultStore::Impl::hold_for_resume(const std::filesystem::path& path,
                                                                      const StoreOptions& options,
                                                                      std::vector<RunRow>& runs) {
  store::silence_hdf5_errors();
  // The layout is the file's own; only the writer's policy comes from here.
  std::unique_ptr<Impl> writer(new Impl(path, options, store::StoreLayout{}));
  const store::Hdf5Errors& errors = writer->errors_;
  // Before HDF5 opens the file, which clears a dead writer's flag: a live
  // one must not be mistaken for a dead one.
  if (options.swmr) {
    writer->lock_ = store::WriterLock::acquire(path, errors);
  } else {
    store::WriterLock::check_free(path, errors);
  }
  // Read-only here: a read-write open writes to the file (its status flag),
  // which must not happen to a file that is not ours.
  const store::FileHandle inspected = store::open_file_to_inspect(path, errors);
  writer->header_ = store::read_header(inspected.get(), errors);
  store::check_resumable(writer->header_, errors);
  runs = every_row<RunRow>(store::Table::open(inspected.get(), store::runs_schema(), kSchemaVersion, errors));
  return writer;
}

void ResultStore::Impl::resume_held(const RunRow& run) {
  file_ = store::open_file_for_writing(path_, errors_);
  published_ = true;
  header_ = store::read_header(file_.get(), errors_);
  open_tables();
  // A writer without SWMR killed during a flush can leave a table's size
  // ahead of its data: the last rows read as zeros. They were never written.
  for (store::Table* table : {&tables_->trials, &tables_->samples, &tables_->epochs, &tables_->messages,
                              &tables_->searches, &tables_->metrics})
    table->drop_unwritten_tail();
  append_run(run);
  start_writing();
}

void ResultStore::Impl::open_tables() {
  // Only a file of the current version is written to (store::check_resumable):
  // every column must be there.
  const hid_t file = file_.get();
  tables_.emplace(Tables{
      store::Table::open(file, store::trials_schema(), kSchemaVersion, errors_),
      store::Table::open(file, store::samples_schema(header_.counter_columns, errors_), kSchemaVersion, errors_),
      store::Table::open(file, store::epochs_schema(), kSchemaVersion, errors_),
      store::Table::open(file, store::runs_schema(), kSchemaVersion, errors_),
      store::Table::open(file, store::messages_schema(), kSchemaVersion, errors_),
      store::Table::open(file, store::searches_schema(), kSchemaVersion, errors_),
      store::Table::open(file, store::metrics_schema(), kSchemaVersion, errors_),
  });
  note_chunk_format();
}

void ResultStore::Impl::close_tables() { tables_.reset(); }

void ResultStore::Impl::note_chunk_format() {
  bool other_filters = false;
  const store::TableStorage storage = tables_->samples.storage(&other_filters);
  chunk_format_ = SampleChunkFormat{static_cast<std::uint32_t>(header_.counter_columns.size()), storage.deflate_level,
                                    storage.shuffle, storage.chunk_rows};
  // The codec makes deflate chunks, shuffled or not; an uncompressed table
  // (a benchmark's) or one with other filters takes rows only.
  chunks_accepted_ = !other_filters && storage.deflate_level > 0 && chunk_format_.chunk_rows <= kMaxWorkerChunkRows;
}

void ResultStore::Impl::append_run(RunRow run) {
  // The file decides the run's number: its row in /runs.
  run.run = static_cast<std::int32_t>(tables_->runs.rows());
  run_index_ = run.run;
  tables_->runs.append(&run, 1);
  run_ = run;
}

void ResultStore::Impl::start_writing() {
  if (options_.swmr) {
    // SWMR cannot create objects or attributes: all exist by now. HDF5
    // refreshes open datasets itself, but starting from none is simpler to
    // reason about.
    close_tables();
    errors_.check(H5Fstart_swmr_write(file_.get()), "start SWMR writing");
    open_tables();
  }
  flush();
}

void ResultStore::Impl::check_open() const {
  if (!file_.valid() || !tables_) errors_.fail_plain("the results file is already closed");
}

void ResultStore::Impl::check_writable() const {
  if (write_failed_) errors_.fail_plain("an earlier write to the file failed; nothing more is written to it");
  check_open();
}

template <typename Operation>
void ResultStore::Impl::writing(const Operation& operation) {
  store::silence_hdf5_errors();
  check_writable();
  try {
    operation();
  } catch (...) {
    give_up_writing();
    throw;
  }
}

void ResultStore::Impl::give_up_writing() noexcept {
  if (write_failed_) return;
  write_failed_ = true;
  roll_back_unflushed_rows();
  // Closed now rather than when the store is destroyed: under mpirun the
  // workers end once they know the status, the launcher then ends rank 0,
  // and rank 0 must have printed its line by then. A file not yet at its
  // name (create) is removed by create itself.
  if (published_) close_after_failure();
}

void ResultStore::Impl::write_samples(bool all) {
  store::Table& samples = tables_->samples;
  const std::uint64_t chunk = samples.chunk_rows();
  // A chunk that was already partly in the file (a resumed file's last one,
  // or an earlier partial write) moves when it is written again, its old
  // copy left as it is (create_file, flush); flushed at once, so that the
  // index points at the new copy and a reader or a resume reads its rows.
  const auto write_rows = [&](std::size_t count) {
    const bool rewrites_a_chunk = samples.rows() % chunk != 0;
    write_unwritten(count);
    if (rewrites_a_chunk) flush();
  };
  for (;;) {
    const std::uint64_t to_boundary = chunk - samples.rows() % chunk;
    if (unwritten_.size() < to_boundary) break;
    write_rows(to_boundary);
  }
  if (unwritten_.empty()) return;
  // With or without SWMR: a writer without readers still dies.
  const bool too_old = std::chrono::steady_clock::now() - oldest_unwritten_ >= layout_.samples_max_age;
  if (all || too_old) write_rows(unwritten_.size());
}

void ResultStore::Impl::write_unwritten(std::size_t count) {
  tables_->samples.append(unwritten_.data(), count);
  counts_.rows_written += count;
  unwritten_.erase(unwritten_.begin(), unwritten_.begin() + static_cast<std::ptrdiff_t>(count));
  // The rows left are younger than the ones written; counting their age from
  // now delays their partial write by samples_max_age at most, where keeping
  // the old time would, under a steady stream, write a partial chunk at
  // every append.
  if (!unwritten_.empty()) oldest_unwritten_ = std::chrono::steady_clock::now();
  written_since_flush_ = true;
}

bool ResultStore::Impl::waits(const CompressedChunkInfo& info) const {
  return std::any_of(unwritten_.begin(), unwritten_.end(), [&](const SampleRow& row) {
    return row.attempt == info.attempt && row.trial_id == info.trial_id;
  });
}

void ResultStore::Impl::append_compressed(const CompressedSampleChunk& chunk) {
  store::Table& samples = tables_->samples;
  // Stored as it is only at a chunk boundary, and behind every earlier row
  // of its attempt: an attempt's rows stay in time order in the file.
  if (chunks_accepted_ && chunk.fits(chunk_format_) && samples.rows() % samples.chunk_rows() == 0 &&
      !waits(chunk.info)) {
    if (hook_.fill_disk_before_chunk == counts_.chunks_direct + 1) {
      store::fill_disk_beside(path_, errors_);
      store::allocate_past_last_page(file_.get(), errors_);
    }
    samples.append_chunk(chunk.bytes, chunk.info.filter_mask, chunk.info.rows);
    counts_.chunks_direct += 1;
    counts_.rows_direct += chunk.info.rows;
    written_since_flush_ = true;
    return;
  }
  // Otherwise its rows join the others: the table's last chunk is partial
  // (a trial's tail, rows written for their age, a resumed file), or the
  // chunk is not of this file's format. Rank 0 compresses them.
  const std::vector<SampleRow> rows = inflate_sample_chunk(chunk);
  counts_.rows_inflated += rows.size();
  if (unwritten_.empty()) oldest_unwritten_ = std::chrono::steady_clock::now();
  unwritten_.insert(unwritten_.end(), rows.begin(), rows.end());
}

void ResultStore::Impl::flush() {
  store::silence_hdf5_errors();
  check_open();
  // The whole file, superblock included: after this, a writer killed at any
  // moment leaves a file that reopens with every row written so far.
  if (H5Fflush(file_.get(), H5F_SCOPE_LOCAL) < 0) {
    const std::string cause = store::innermost_hdf5_error();
    give_up_writing();
    errors_.fail_plain(cause.empty() ? "cannot flush the file (HDF5 gave no reason)"
                                     : fmt::format("cannot flush the file: {}", store::readable_cause(cause)));
  }
  if (tables_) {
    for (store::Table* table : tables_->all()) table->mark_flushed();
    // The partial chunk just flushed is written again when its next rows
    // come: its new copy must not take its place (under SWMR nothing freed
    // is reused at all).
    const store::Table& samples = tables_->samples;
    if (!options_.swmr && !layout_.reuse_freed_space && samples.rows() % samples.chunk_rows() != 0)
      store::fence_end_of_allocation(file_.get(), errors_);
  }
  last_flush_ = std::chrono::steady_clock::now();
  written_since_flush_ = false;
}

void ResultStore::Impl::roll_back_unflushed_rows() {
  if (!tables_ || !file_.valid()) return;
  for (store::Table* table : tables_->all()) table->roll_back_to_flushed();
  // The tables' old sizes fit in their headers' places: this flush can
  // succeed on the disk that failed the last one. If it does not, readers
  // still leave the rows out (docs/results-file.md, Rows never written).
  H5Fflush(file_.get(), H5F_SCOPE_LOCAL);
  H5Eclear2(H5E_DEFAULT);
}

void ResultStore::Impl::close() {
  if (!file_.valid()) return;  // never opened, or closed (after a failed write too)
  store::silence_hdf5_errors();
  try {
    if (tables_ && !write_failed_) write_samples(true);
  } catch (...) {
    give_up_writing();  // closes the file: what was flushed stays readable
    throw;
  }
  unwritten_.clear();
  close_tables();
  const herr_t closed = file_.close();
  if (closed < 0) {
    const std::string cause = store::innermost_hdf5_error();
    write_failed_ = true;
    if (published_) drop_rows_never_written();  // still under the writer's lock
    lock_ = store::WriterLock();
    errors_.fail_plain(fmt::format("cannot close the file (rows since the last flush may be lost): {}",
                                   cause.empty() ? "HDF5 gave no reason" : store::readable_cause(cause)));
  }
  lock_ = store::WriterLock();
}

void ResultStore::Impl::close_after_failure() noexcept {
  unwritten_.clear();
  close_tables();
  file_.close();  // fails on a full disk: store::note_failed_close
  // Still under the writer's lock: no resume can have the file meanwhile.
  drop_rows_never_written();
  lock_ = store::WriterLock();
}

void ResultStore::Impl::drop_rows_never_written() noexcept {
  // A flush that fails in HDF5 1.10.8 still writes the tables' new sizes
  // (the datasets' headers, rewritten in place, need no room) after the
  // chunks they cover failed to reach the disk: rows of zeros at the end of
  // a table, which the roll-back cannot take back, since a flush after a
  // failed one stops at its first write that needs room. So the file is
  // opened again, as a resume opens it (which also clears its "open for
  // writing" mark, so that h5dump reads it), and each table's rows never
  // written are dropped; that too rewrites the headers in place. Best
  // effort: a file that does not open again is left as the failure left
  // it (readers leave such rows out; a resume drops them).
  try {
    const store::FileHandle file = store::open_file_for_writing(path_, errors_);
    for (const store::TableSchema& schema :
         {store::trials_schema(), store::samples_schema(header_.counter_columns, errors_), store::epochs_schema(),
          store::messages_schema(), store::searches_schema()})
      store::Table::open(file.get(), schema, kSchemaVersion, errors_).drop_unwritten_tail();
  } catch (...) {
    // Left as it was; the caller reports the failure that brought it here.
  }
}

ResultStore::ResultStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ResultStore::ResultStore(ResultStore&&) noexcept = default;
ResultStore& ResultStore::operator=(ResultStore&&) noexcept = default;
ResultStore::~ResultStore() = default;

ResultStore ResultStore::create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                                const StoreOptions& options, const std::optional<RunRow>& run) {
  return ResultStore(Impl::create(path, header, replace, options, store::StoreLayout{}, run));
}

ResultStore ResultStore::open_for_resume(const std::filesystem::path& path, const RunRow& run,
                                         const StoreOptions& options,
                                         const std::function<void(const FileHeader&)>& accept) {
  HeldForResume held = hold_for_resume(path, options);
  if (accept) accept(held.header());
  return std::move(held).resume(run);
}

ResultStore::HeldForResume ResultStore::hold_for_resume(const std::filesystem::path& path,
                                                        const StoreOptions& options) {
  std::vector<RunRow> runs;
  std::unique_ptr<Impl> impl = Impl::hold_for_resume(path, options, runs);
  return HeldForResume(std::move(impl), std::move(runs));
}

ResultStore::HeldForResume::HeldForResume(std::unique_ptr<Impl> impl, std::vector<RunRow> runs)
    : impl_(std::move(impl)), runs_(std::move(runs)) {}
ResultStore::HeldForResume::HeldForResume(HeldForResume&&) noexcept = default;
ResultStore::HeldForResume& ResultStore::HeldForResume::operator=(HeldForResume&&) noexcept = default;
ResultStore::HeldForResume::~HeldForResume() = default;

const FileHeader& ResultStore::HeldForResume::header() const { return impl_->header_; }
const std::vector<RunRow>& ResultStore::HeldForResume::runs() const { return runs_; }

ResultStore ResultStore::HeldForResume::resume(const RunRow& run) && {
  std::unique_ptr<Impl> impl = std::move(impl_);
  impl->resume_held(run);
  return ResultStore(std::move(impl));
}

const FileHeader& ResultStore::header() const { return impl_->header_; }
int ResultStore::run_index() const { return impl_->run_index_; }
// The writer's own steps too (after a chunk, at destruction).
void ResultStore::flush() {
  impl_->writing([&] { impl_->flush(); });
}
void ResultStore::close() { impl_->close(); }

void ResultStore::append_trial(const TrialRow& row, std::string_view message) {
  impl_->writing([&] {
    // Every waiting sample row, the trial's own among them (a worker sends
    // its samples before its row): a rank 0 killed after this flush leaves
    // the row with its whole series, not a row whose `samples` the file
    // does not hold.
    impl_->write_samples(true);
    // The one place a message is made fit for the file: valid UTF-8 (program
    // output can hold any bytes), whole in /messages, its first bytes in the
    // row. The message's rows go first, so the flush that makes the trial's
    // row durable makes its message durable too.
    const std::string text = valid_utf8(message);
    TrialRow stored = row;
    set_fixed(stored.message, text);
    const std::vector<MessageRow> pieces = message_rows(stored, text);
    impl_->tables_->messages.append(pieces.data(), pieces.size());
    impl_->tables_->trials.append(&stored, 1);
    impl_->flush();
  });
}

void ResultStore::append_trial(const TrialRow& row) { append_trial(row, get_fixed(row.message)); }

void ResultStore::append_samples(std::span<const SampleRow> rows) {
  impl_->writing([&] {
    if (impl_->unwritten_.empty()) impl_->oldest_unwritten_ = std::chrono::steady_clock::now();
    impl_->unwritten_.insert(impl_->unwritten_.end(), rows.begin(), rows.end());
    impl_->write_waiting_samples();
  });
}

SampleChunkFormat ResultStore::sample_chunk_format() const {
  impl_->check_open();
  return impl_->chunk_format_;
}

void ResultStore::append_compressed_samples(const CompressedSampleChunk& chunk) {
  impl_->writing([&] {
    try {
      impl_->append_compressed(chunk);
    } catch (const std::runtime_error& error) {
      if (dynamic_cast<const StoreError*>(&error) != nullptr) throw;
      impl_->errors_.fail_plain(fmt::format("cannot store a chunk of samples: {}", error.what()));
    }
    impl_->write_waiting_samples();
  });
}

void ResultStore::write_waiting_samples() {
  impl_->writing([&] { impl_->write_waiting_samples(); });
}

void ResultStore::Impl::write_waiting_samples() {
  write_samples(false);
  if (written_since_flush_ && std::chrono::steady_clock::now() - last_flush_ >= store::kSampleFlushInterval) flush();
}

void ResultStore::append_epoch(const EpochRow& row) {
  impl_->writing([&] {
    impl_->write_samples(false);
    impl_->tables_->epochs.append(&row, 1);
  });
}

void ResultStore::append_metric(const MetricRow& row) {
  store::silence_hdf5_errors();
  impl_->check_open();
  impl_->write_samples(false);
  impl_->tables_->metrics.append(&row, 1);
}

void ResultStore::append_search(const SearchRow& row) {
  impl_->writing([&] {
    impl_->tables_->searches.append(&row, 1);
    // A search's answer is what a resume does not search again: as durable
    // as a trial's row.
    impl_->flush();
  });
}

void ResultStore::mark_run(std::string_view end_state) {
  impl_->writing([&] {
    set_fixed(impl_->run_.end_state, end_state);
    impl_->run_.end_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    impl_->tables_->runs.overwrite(static_cast<std::uint64_t>(impl_->run_index_), &impl_->run_);
    impl_->flush();
  });
}

std::vector<RunRow> ResultStore::read_runs() const {
  store::silence_hdf5_errors();
  impl_->check_open();
  return every_row<RunRow>(impl_->tables_->runs);
}

std::vector<TrialRow> ResultStore::read_trials() const {
  store::silence_hdf5_errors();
  impl_->check_open();
  return every_row<TrialRow>(impl_->tables_->trials);
}

std::vector<SearchRow> ResultStore::read_searches() const {
  store::silence_hdf5_errors();
  impl_->check_open();
  return every_row<SearchRow>(impl_->tables_->searches);
}

std::vector<SeriesSummary> ResultStore::scan_series() const {
  store::silence_hdf5_errors();
  impl_->check_open();
  return store::scan_series(impl_->tables_->samples, impl_->errors_, impl_->unwritten_);
}

ResultStore store::ResultStoreInternals::create(const std::filesystem::path& path, const FileHeader& header,
                                                bool replace, const StoreOptions& options,
                                                const store::StoreLayout& layout, const std::optional<RunRow>& run) {
  return ResultStore(ResultStore::Impl::create(path, header, replace, options, layout, run));
}
std::size_t store::ResultStoreInternals::unwritten_samples(const ResultStore& store) {
  return store.impl_->unwritten_.size();
}
store::SampleWriteCounts store::ResultStoreInternals::sample_write_counts(const ResultStore& store) {
  return store.impl_->counts_;
}
std::uint64_t store::ResultStoreInternals::samples_chunk_rows(const ResultStore& store) {
  return store.impl_->tables_ ? store.impl_->tables_->samples.chunk_rows() : 0;
}

std::string hdf5_library_version() {
  unsigned major = 0;
  unsigned minor = 0;
  unsigned release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

}  // namespace memsweep
