#pragma once
// The results file: HDF5 1.10, one file per sweep, written by one process
// (rank 0) and readable while it is written (SWMR). Tables /trials, /samples,
// /epochs, /runs and /messages (schema 5) are chunked, deflate-compressed, extendable 1-D datasets
// of the compound rows of results.hpp; root attributes describe the sweep and
// the machine. Layout and units: docs/results-file.md.
//
// SWMR: every dataset and attribute is created before SWMR writing starts
// (HDF5 cannot create objects afterwards); it needs a filesystem that keeps
// write order (local disks, Lustre, GPFS; not NFS), hence StoreOptions::swmr.

#include "memsweep/error.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sample_chunk.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memsweep {

// The file cannot be used: not HDF5, not a memsweep file, another schema
// version, truncated or damaged. The message names the file and what is wrong.
class StoreError : public InputError {
 public:
  using InputError::InputError;
};

// The output file exists and neither --resume nor --force was given.
class StoreExistsError : public StoreError {
 public:
  using StoreError::StoreError;
};

struct StoreOptions {
  bool swmr = true;
};

namespace store {
struct ResultStoreInternals;  // the white-box tests' and benchmark's access
}

// The writer (rank 0). Every method throws StoreError (an I/O or HDF5
// failure names the file and the operation).
class ResultStore {
 public:
  // A new file. Refuses (StoreExistsError) when `path` exists unless
  // `replace`; with `replace`, the new file is written beside it and renamed
  // over it only once it is complete, so a failure keeps the old one.
  // `run`: the first row of /runs, with the options the run measures with
  // (run_record.hpp); without it, one from the header.
  static ResultStore create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                            const StoreOptions& options, const std::optional<RunRow>& run = std::nullopt);
  // An existing file, to continue it (--resume): checks format and schema
  // version, and clears the "open for writing" mark an HDF5 writer that was
  // killed leaves in the superblock. Appends `run` to /runs.
  // `accept` sees the file's header before anything is written to it, and
  // throws to refuse the file (e.g. another sweep's): it is left untouched.
  static ResultStore open_for_resume(const std::filesystem::path& path, const RunRow& run, const StoreOptions& options,
                                     const std::function<void(const FileHeader&)>& accept = {});
  // The same in two steps, for a caller that decides this run's row from
  // the file (results_file_policy.hpp, decide_resume): hold_for_resume()
  // takes the writer's lock (with SWMR), checks format and schema version
  // and reads /runs, writing nothing; HeldForResume::resume() then opens it
  // for writing with the row decided. So the file is read once for the
  // decision, and no other writer can come between the decision and the
  // writing. A HeldForResume dropped gives the lock back, the file untouched.
  class HeldForResume;
  static HeldForResume hold_for_resume(const std::filesystem::path& path, const StoreOptions& options);

  ResultStore(ResultStore&&) noexcept;
  ResultStore& operator=(ResultStore&&) noexcept;
  ~ResultStore();  // closes (flushing); never throws

  const FileHeader& header() const;
  int run_index() const;  // this invocation's row of /runs

  // Appends (in memory order) and makes the rows visible to SWMR readers at
  // the next flush. append_trial writes every waiting sample row first and
  // flushes at once. Otherwise sample rows are written to the file a whole
  // chunk of /samples at a time, or once they have waited a second; close()
  // writes the rest (docs/results-file.md, Storage).
  // The trial's row and its whole `message`, of any length: stored as valid
  // UTF-8 (invalid sequences replaced, valid_utf8()) in /messages, and its
  // first kMessageChars bytes in the row's message column.
  void append_trial(const TrialRow& row, std::string_view message);
  // A row whose message is its own message column.
  void append_trial(const TrialRow& row);
  void append_samples(std::span<const SampleRow> rows);
  // One attempt's rows, compressed by a worker (sample_chunk.hpp): stored as
  // they are (HDF5's direct chunk write, nothing compressed here) when the
  // chunk fits sample_chunk_format() and /samples ends at a chunk boundary
  // with no earlier row of the attempt waiting; otherwise inflated and
  // appended as append_samples() would (docs/results-file.md, "Workers
  // compress, rank 0 writes").
  void append_compressed_samples(const CompressedSampleChunk& chunk);
  // /samples' counter columns, filters and chunk rows: what a chunk must be
  // made with to be stored as it is.
  SampleChunkFormat sample_chunk_format() const;
  // Writes the sample rows that have waited samples_max_age, and flushes
  // what was written once the last flush is a second old: for a writer that
  // has nothing else to do, so that its rows do not wait for the next call.
  void write_waiting_samples();
  void append_epoch(const EpochRow& row);
  // A program's metric row of /metrics (schema 11), as durable as an epoch's.
  void append_metric(const MetricRow& row);
  // A search's row of /searches (schema 6), flushed: durable when it returns.
  void append_search(const SearchRow& row);
  void flush();
  // Rewrites this run's row of /runs with `end_state` and the time now, and
  // flushes: durable when it returns.
  void mark_run(std::string_view end_state);
  void close();

  // For resume: what is already there.
  std::vector<TrialRow> read_trials() const;
  std::vector<RunRow> read_runs() const;
  std::vector<SearchRow> read_searches() const;
  std::vector<SeriesSummary> scan_series() const;  // one per (trial id, attempt) present in /samples

 private:
  friend struct store::ResultStoreInternals;
  struct Impl;
  explicit ResultStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class ResultStore::HeldForResume {
 public:
  HeldForResume(HeldForResume&&) noexcept;
  HeldForResume& operator=(HeldForResume&&) noexcept;
  ~HeldForResume();

  const FileHeader& header() const;
  const std::vector<RunRow>& runs() const;  // the file's /runs, as the last flush left it
  // Appends `run` to /runs and starts writing: ResultStore::open_for_resume's
  // second half. Consumes the hold.
  ResultStore resume(const RunRow& run) &&;

 private:
  friend class ResultStore;
  HeldForResume(std::unique_ptr<Impl> impl, std::vector<RunRow> runs);
  std::unique_ptr<Impl> impl_;
  std::vector<RunRow> runs_;
};

// A reader: summary, watch, tests. Opens with SWMR read access when the file
// was written with SWMR, so it can follow a writer; refresh() sees new rows.
class ResultReader {
 public:
  explicit ResultReader(const std::filesystem::path& path);
  ResultReader(ResultReader&&) noexcept;
  ResultReader& operator=(ResultReader&&) noexcept;
  ~ResultReader();

  const FileHeader& header() const;
  void refresh();
  std::vector<RunRow> runs() const;
  std::vector<TrialRow> trials() const;
  std::uint64_t trial_count() const;
  // Rows [first, first + count) of /trials (clamped to the end).
  std::vector<TrialRow> trials(std::uint64_t first, std::uint64_t count) const;
  std::vector<EpochRow> epochs() const;
  // /metrics (programs' own figures); empty for a file before schema 11.
  std::vector<MetricRow> metrics() const;
  // /searches; empty for a file before schema 6.
  std::vector<SearchRow> searches() const;
  // The whole messages of /messages; empty for a file before schema 5.
  // whole_message(row, messages()) gives a row's.
  TrialMessages messages() const;
  std::uint64_t sample_count() const;
  // Rows [first, first + count) of /samples (clamped to the end).
  std::vector<SampleRow> samples(std::uint64_t first, std::uint64_t count) const;
  std::vector<SeriesSummary> scan_series() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether a live memsweep run is writing `path` with SWMR (it holds the
// writer's lock, docs/results-file.md). Only queries the lock: never blocks,
// never takes one, so it never gets in the writer's way. nullopt: cannot tell
// (no such file, or a filesystem without these locks). A writer without SWMR
// keeps readers out altogether (ResultReader says so).
std::optional<bool> writer_is_live(const std::filesystem::path& path);

// "1.10.8"
std::string hdf5_library_version();

}  // namespace memsweep
