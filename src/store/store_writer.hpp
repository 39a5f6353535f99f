#pragma once
// The writer behind ResultStore, with the storage layout as a parameter so
// that bench/bench_store.cpp measures this very code with other settings.

#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"
#include "store/schema.hpp"
#include "store/table.hpp"
#include "store/writer_lock.hpp"

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace memsweep::store {

// Sample rows written since the last flush are flushed (made visible to SWMR
// readers and durable against the writer's death) at the next append once
// the last flush is this old. More often would cost rank 0 more than it
// gives a reader.
inline constexpr std::chrono::milliseconds kSampleFlushInterval{1000};

class StoreWriter {
 public:
  static std::unique_ptr<StoreWriter> create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                                             const StoreOptions& options, const StoreLayout& layout,
                                             const std::optional<RunRow>& run = std::nullopt);
  static std::unique_ptr<StoreWriter> open_for_resume(const std::filesystem::path& path, const RunRow& run,
                                                      const StoreOptions& options,
                                                      const std::function<void(const FileHeader&)>& accept);
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;
  ~StoreWriter();

  const FileHeader& header() const { return header_; }
  int run_index() const { return run_index_; }
  void mark_run(std::string_view end_state);
  std::vector<RunRow> read_runs() const;

  // `message` whole; the row's message column gets its first bytes.
  void append_trial(const TrialRow& row, std::string_view message);
  // Sample rows wait here until they fill a chunk of /samples, a trial's
  // row comes, or they are samples_max_age old (StoreLayout says why);
  // close() writes the rest.
  void append_samples(std::span<const SampleRow> rows);
  // The age rule above, and a flush of what it wrote once the last flush is
  // kSampleFlushInterval old, without new rows to trigger it.
  void write_waiting_samples();
  void append_epoch(const EpochRow& row);
  void flush();
  void close();

  std::vector<TrialRow> read_trials() const;
  // Includes the sample rows still waiting to be written.
  std::vector<SeriesSummary> scan_series() const;
  std::size_t unwritten_samples() const { return unwritten_.size(); }
  std::uint64_t samples_chunk_rows() const { return tables_ ? tables_->samples.chunk_rows() : 0; }

 private:
  struct Tables {
    Table trials;
    Table samples;
    Table epochs;
    Table runs;
    Table messages;
  };

  StoreWriter(const std::filesystem::path& path, const StoreOptions& options, const StoreLayout& layout);
  void open_tables();
  void close_tables();
  void append_run(RunRow run);
  // With SWMR: tables closed, SWMR writing started, tables reopened. Then a
  // flush, so that the file on disk is whole before anyone sees it.
  void start_writing();
  void check_open() const;
  // Writes the waiting sample rows that complete chunks; all of them once
  // the oldest is samples_max_age old; with `all`, all of them.
  void write_samples(bool all);
  void write_unwritten(std::size_t count);

  std::filesystem::path path_;
  Hdf5Errors errors_;
  StoreOptions options_;
  StoreLayout layout_;
  FileHeader header_;
  FileHandle file_;
  std::optional<Tables> tables_;
  WriterLock lock_;
  int run_index_ = 0;
  RunRow run_;  // this run's row of /runs, as written
  std::chrono::steady_clock::time_point last_flush_{};
  std::vector<SampleRow> unwritten_;
  std::chrono::steady_clock::time_point oldest_unwritten_{};
  bool written_since_flush_ = false;
};

}  // namespace memsweep::store
