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
#include "memsweep/flush_interval.hpp"
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

// Root attributes. Written once, when the file is created.
struct FileHeader {
  std::string format{kFormatName};
  int schema_version = kSchemaVersion;
  std::string sweep_name;
  std::string sweep_file;  // as given on the command line
  std::string sweep_text;  // its whole text
  std::string sweep_hash;  // results.hpp sweep_hash(): of the part's trials when `part` is set
  // The part of the sweep the file holds, as SweepPart::name() gives it
  // ("dataset=mnist", sweep_split.hpp); empty: the whole sweep. Files written
  // before parts existed have no such attribute and read as empty.
  std::string part;
  std::string command_line;
  std::string memsweep_version;
  std::string onednn_version;
  std::string mpi_version;
  std::string papi_version;
  std::string hdf5_version;
  int ranks = 1;
  std::vector<std::string> hosts;  // by rank
  std::string start_time;          // ISO 8601, UTC
  int sampler_interval_ms = 0;
  std::int64_t planned_trials = 0;            // attempts the sweep defines (trials x repeats)
  std::vector<std::string> events_requested;  // as the sweep file asked (empty: defaults)
  std::vector<std::string> counter_columns;   // events recorded, in the samples table's column order
  // Per counter column, what served it when the file was created: "papi" or
  // "kernel" (event_source_name()), and the perf_event type and config
  // (encoding_text()). Files written before counters had two sources have
  // neither attribute; they read as empty (all their counters came from PAPI).
  std::vector<std::string> counter_sources;
  std::vector<std::string> counter_encodings;
  std::vector<std::string> event_notes;  // events left out, and why
  bool swmr = true;
};

// Paths in /runs: long enough for a cluster's scratch paths.
inline constexpr std::size_t kPathChars = 1024;

// One row of /runs: each invocation of `memsweep run` on the file.
struct RunRow {
  std::int32_t run = 0;
  double start_time = 0.0;  // seconds since the Unix epoch
  std::int32_t ranks = 0;
  FixedString<kMessageChars> hosts{};  // comma-separated
  FixedString<kMessageChars * 4> command_line{};
  FixedString<kNameChars> memsweep_version{};
  // How the run ended (schema 3; older files read the defaults): rank 0
  // rewrites its run's row when a stop begins and when it closes the file.
  double end_time = -1.0;               // seconds since the Unix epoch; -1: not (yet) ended
  FixedString<kNameChars> end_state{};  // a run_end_state name; empty: running, or rank 0 died unaware
  // What the run measured with, and how it was started (schema 5; older
  // files read the defaults). A resume reuses them (run_record.hpp).
  FixedString<kPathChars> data_dirs{};           // the dataset search folders, absolute, ':'-separated
  std::int64_t max_train_examples = 0;           // 0: all
  std::int64_t max_test_examples = 0;            // 0: all
  std::int32_t threads = 0;                      // training threads per rank as asked; 0: the CPUs the rank may use
  FixedString<kNameChars> counter_source{};      // auto, papi or kernel: the sweep file's, or --counter-source
  std::int64_t mem_budget = -1;                  // bytes; -1: none
  double trial_timeout = -1.0;                   // seconds; -1: none
  double flush_interval = kDefaultFlushSeconds;  // seconds
  std::int32_t no_swmr = 0;                      // 1: --no-swmr
  FixedString<kNameChars> launcher{};            // mpirun, srun, or empty: alone (ranks 1) or not known
  FixedString<kPathChars> executable{};          // memsweep as it was invoked
  FixedString<kPathChars> sweep_file{};          // as given
  FixedString<kPathChars> output_option{};       // -o as given; empty: the default
  FixedString<kNameChars> split_by{};            // --split-by; empty: the whole sweep
  std::int32_t part = -1;                        // --part; -1: the whole sweep
  FixedString<kMessageChars> retried{};          // the statuses this run ran again (--retry), comma-separated
  FixedString<kPathChars> changed_options{};     // what --allow-changed-options let differ from the run before
  // What the predictions added for a fresh trial process on rank 0's node
  // (trial_process_cost.hpp): its coefficients and where they came from
  // (schema 9; older files read empty).
  FixedString<kMessageChars> trial_process_cost{};
};

// RunRow::end_state.
namespace run_end_state {
inline constexpr std::string_view kStopping = "stopping";  // a stop began (a signal): written at once
inline constexpr std::string_view kStopped = "stopped";    // closed after a stop, trials left to run
inline constexpr std::string_view kEnded = "ended";        // closed with every trial run
}  // namespace run_end_state

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
