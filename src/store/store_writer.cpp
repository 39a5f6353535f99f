#include "store/store_writer.hpp"

#include "store/file_access.hpp"
#include "store/file_header.hpp"
#include "store/replace_target.hpp"
#include "store/series_scan.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <exception>
#include <system_error>

namespace memsweep::store {
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

TableStorage samples_storage(const StoreLayout& layout, const FileHeader& header) {
  TableStorage storage = layout.samples;
  if (storage.chunk_rows == 0) storage.chunk_rows = samples_chunk_rows(header);
  return storage;
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
             bool name_was_free, const Hdf5Errors& errors) {
  if (!replace || name_was_free) {
    if (::link(temporary.c_str(), path.c_str()) == 0) {
      ::unlink(temporary.c_str());
      return;
    }
    if (errno == EEXIST) {
      if (!replace) throw StoreExistsError(exists_message(path));
      WriterLock::check_free(path, errors);  // names the run that has it, if one does
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

StoreWriter::StoreWriter(const std::filesystem::path& path, const StoreOptions& options, const StoreLayout& layout)
    : path_(path), errors_(path), options_(options), layout_(layout) {}

StoreWriter::~StoreWriter() {
  try {
    close();
  } catch (...) {
    // A destructor cannot report; close() is there for callers that care.
  }
}

std::unique_ptr<StoreWriter> StoreWriter::create(const std::filesystem::path& path, const FileHeader& header,
                                                 bool replace, const StoreOptions& options, const StoreLayout& layout,
                                                 const std::optional<RunRow>& run) {
  silence_hdf5_errors();
  std::error_code ignored;
  if (std::filesystem::is_directory(path, ignored))
    throw StoreError(fmt::format("{}: is a directory; expected the path of a results file (HDF5)", path.string()));
  // symlink_status: a dangling link, a FIFO, a device, all exist.
  const bool exists = std::filesystem::exists(std::filesystem::symlink_status(path, ignored));
  if (exists && !replace) throw StoreExistsError(exists_message(path));

  std::unique_ptr<StoreWriter> writer(new StoreWriter(path, options, layout));
  const Hdf5Errors& errors = writer->errors_;
  // --force replaces a finished or dead run's file, not a live run's, and
  // one run's at a time: the lock on the file it replaces is held until the
  // new file, locked itself, has its name (WriterLock says why).
  WriterLock replaced_file_lock;
  if (exists) {
    check_replaceable_kind(path, errors);
    replaced_file_lock = WriterLock::acquire_to_replace(path, errors);
    check_replaceable_content(path, errors);
  }
  writer->header_ = header;
  writer->header_.schema_version = kSchemaVersion;  // the tables below are this version's
  writer->header_.swmr = options.swmr;
  const std::filesystem::path temporary = temporary_path_beside(path);
  try {
    writer->file_ = create_file(temporary, errors);
    const hid_t file = writer->file_.get();
    write_header(file, writer->header_, errors);
    writer->tables_.emplace(Tables{
        Table::create(file, trials_schema(), layout.trials, errors),
        Table::create(file, samples_schema(header.counter_columns, errors), samples_storage(layout, header), errors),
        Table::create(file, epochs_schema(), layout.epochs, errors),
        Table::create(file, runs_schema(), layout.runs, errors),
        Table::create(file, messages_schema(), layout.messages, errors),
    });
    writer->append_run(run ? *run : first_run(writer->header_));
    writer->start_writing();
    // Without SWMR the new file is locked too: HDF5 holds its flock() on it.
    if (options.swmr) writer->lock_ = WriterLock::acquire(temporary, errors);
    publish(temporary, path, replace, !exists, errors);
  } catch (...) {
    writer->close_tables();
    writer->file_.reset();
    std::filesystem::remove(temporary, ignored);
    throw;
  }
  return writer;
}

std::unique_ptr<StoreWriter> StoreWriter::open_for_resume(const std::filesystem::path& path, const RunRow& run,
                                                          const StoreOptions& options,
                                                          const std::function<void(const FileHeader&)>& accept) {
  silence_hdf5_errors();
  // The layout is the file's own; only the writer's policy comes from here.
  std::unique_ptr<StoreWriter> writer(new StoreWriter(path, options, StoreLayout{}));
  const Hdf5Errors& errors = writer->errors_;
  // Before HDF5 opens the file, which clears a dead writer's flag: a live
  // one must not be mistaken for a dead one.
  if (options.swmr) {
    writer->lock_ = WriterLock::acquire(path, errors);
  } else {
    WriterLock::check_free(path, errors);
  }
  // Checked read-only first: a read-write open writes to the file (its
  // status flag), which must not happen to a file that is not ours.
  const FileHeader found = read_header(open_file_to_inspect(path, errors).get(), errors);
  check_resumable(found, errors);
  if (accept) accept(found);
  writer->file_ = open_file_for_writing(path, errors);
  writer->header_ = read_header(writer->file_.get(), errors);
  writer->open_tables();
  // A writer without SWMR killed during a flush can leave a table's size
  // ahead of its data: the last rows read as zeros. They were never written.
  for (Table* table :
       {&writer->tables_->trials, &writer->tables_->samples, &writer->tables_->epochs, &writer->tables_->messages})
    table->drop_unwritten_tail();
  writer->append_run(run);
  writer->start_writing();
  return writer;
}

void StoreWriter::open_tables() {
  // Only a file of the current version is written to (check_resumable):
  // every column must be there.
  const hid_t file = file_.get();
  tables_.emplace(Tables{
      Table::open(file, trials_schema(), kSchemaVersion, errors_),
      Table::open(file, samples_schema(header_.counter_columns, errors_), kSchemaVersion, errors_),
      Table::open(file, epochs_schema(), kSchemaVersion, errors_),
      Table::open(file, runs_schema(), kSchemaVersion, errors_),
      Table::open(file, messages_schema(), kSchemaVersion, errors_),
  });
}

void StoreWriter::close_tables() { tables_.reset(); }

void StoreWriter::append_run(RunRow run) {
  // The file decides the run's number: its row in /runs.
  run.run = static_cast<std::int32_t>(tables_->runs.rows());
  run_index_ = run.run;
  tables_->runs.append(&run, 1);
  run_ = run;
}

void StoreWriter::mark_run(std::string_view end_state) {
  silence_hdf5_errors();
  check_open();
  set_fixed(run_.end_state, end_state);
  run_.end_time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  tables_->runs.overwrite(static_cast<std::uint64_t>(run_index_), &run_);
  flush();
}

std::vector<RunRow> StoreWriter::read_runs() const {
  silence_hdf5_errors();
  check_open();
  std::vector<RunRow> rows(tables_->runs.rows());
  tables_->runs.read(0, rows.size(), rows.data());
  return rows;
}

void StoreWriter::start_writing() {
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

void StoreWriter::check_open() const {
  if (!file_.valid() || !tables_) errors_.fail_plain("the results file is already closed");
}

void StoreWriter::append_trial(const TrialRow& row, std::string_view message) {
  silence_hdf5_errors();
  check_open();
  // Every waiting sample row, the trial's own among them (a worker sends
  // its samples before its row): a rank 0 killed after this flush leaves
  // the row with its whole series, not a row whose `samples` the file
  // does not hold.
  write_samples(true);
  // The one place a message is made fit for the file: valid UTF-8 (program
  // output can hold any bytes), whole in /messages, its first bytes in the
  // row. The message's rows go first, so the flush that makes the trial's
  // row durable makes its message durable too.
  const std::string text = valid_utf8(message);
  TrialRow stored = row;
  set_fixed(stored.message, text);
  const std::vector<MessageRow> pieces = message_rows(stored, text);
  tables_->messages.append(pieces.data(), pieces.size());
  tables_->trials.append(&stored, 1);
  flush();
}

void StoreWriter::append_samples(std::span<const SampleRow> rows) {
  silence_hdf5_errors();
  check_open();
  if (unwritten_.empty()) oldest_unwritten_ = std::chrono::steady_clock::now();
  unwritten_.insert(unwritten_.end(), rows.begin(), rows.end());
  write_waiting_samples();
}

void StoreWriter::write_waiting_samples() {
  silence_hdf5_errors();
  check_open();
  write_samples(false);
  if (written_since_flush_ && std::chrono::steady_clock::now() - last_flush_ >= kSampleFlushInterval) flush();
}

void StoreWriter::append_epoch(const EpochRow& row) {
  silence_hdf5_errors();
  check_open();
  write_samples(false);
  tables_->epochs.append(&row, 1);
}

void StoreWriter::write_samples(bool all) {
  Table& samples = tables_->samples;
  const std::uint64_t chunk = samples.chunk_rows();
  // A chunk that was already partly in the file (a resumed file's last one,
  // or an earlier partial write) moves when it is written again: flushed at
  // once, the index that points at its old place is replaced at once.
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

void StoreWriter::write_unwritten(std::size_t count) {
  tables_->samples.append(unwritten_.data(), count);
  unwritten_.erase(unwritten_.begin(), unwritten_.begin() + static_cast<std::ptrdiff_t>(count));
  // The rows left are younger than the ones written; counting their age from
  // now delays their partial write by samples_max_age at most, where keeping
  // the old time would, under a steady stream, write a partial chunk at
  // every append.
  if (!unwritten_.empty()) oldest_unwritten_ = std::chrono::steady_clock::now();
  written_since_flush_ = true;
}

void StoreWriter::flush() {
  silence_hdf5_errors();
  check_open();
  // The whole file, superblock included: after this, a writer killed at any
  // moment leaves a file that reopens with every row written so far.
  errors_.check(H5Fflush(file_.get(), H5F_SCOPE_LOCAL), "flush the file");
  last_flush_ = std::chrono::steady_clock::now();
  written_since_flush_ = false;
}

void StoreWriter::close() {
  if (!file_.valid()) return;
  silence_hdf5_errors();
  std::exception_ptr failure;
  try {
    if (tables_) write_samples(true);
  } catch (...) {
    failure = std::current_exception();  // still close the file: what was flushed stays readable
  }
  unwritten_.clear();
  close_tables();
  const herr_t closed = file_.close();
  lock_ = WriterLock();
  if (failure) std::rethrow_exception(failure);
  if (closed < 0) errors_.fail("close the file (rows since the last flush may be lost)");
}

std::vector<TrialRow> StoreWriter::read_trials() const {
  silence_hdf5_errors();
  check_open();
  std::vector<TrialRow> rows(tables_->trials.rows());
  tables_->trials.read(0, rows.size(), rows.data());
  return rows;
}

std::vector<SeriesSummary> StoreWriter::scan_series() const {
  silence_hdf5_errors();
  check_open();
  return store::scan_series(tables_->samples, errors_, unwritten_);
}

}  // namespace memsweep::store
