#pragma once
// The results file's tables as HDF5 sees them: for each table its columns
// (columns.hpp declares them), description, default row and storage layout.
// The compound types HDF5 needs are built from these descriptions.
// docs/results-file.md documents the same tables for readers.

#include "memsweep/columns.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sample_chunk.hpp"
#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace memsweep::store {

inline constexpr char kTrialsTable[] = "trials";
inline constexpr char kSamplesTable[] = "samples";
inline constexpr char kEpochsTable[] = "epochs";
inline constexpr char kRunsTable[] = "runs";
inline constexpr char kMessagesTable[] = "messages";  // schema 5
inline constexpr char kSearchesTable[] = "searches";  // schema 6
inline constexpr char kMetricsTable[] = "metrics";    // schema 11

// Attribute names on each table: per column "unit:<column>" and, from
// schema 12, "since:<column>" (the version that added it) and, for a
// figure whose -1 means not measured, "missing:<column>" (that value); an
// estimate part's "label:<column>"; and one description.
inline constexpr char kUnitPrefix[] = "unit:";
inline constexpr char kSincePrefix[] = "since:";
inline constexpr char kMissingPrefix[] = "missing:";
inline constexpr char kLabelPrefix[] = "label:";
inline constexpr char kDescriptionAttribute[] = "description";

struct Column {
  std::string name;
  std::size_t offset = 0;  // in the row struct
  ColumnKind kind = ColumnKind::int32;
  std::size_t extent = 1;  // bytes of a text column, elements of an array column
  std::string unit;
  // The schema version that added the column: files of older versions lack
  // it, and their rows read the row struct's default value there.
  int since_version = 1;
  MinusOne minus_one = MinusOne::value;
  // What the column holds, in words, where its name cannot say it exactly
  // (an estimate part's name, "oneDNN scratchpad"): the table's
  // kLabelPrefix attribute of the column. Empty: no such attribute.
  std::string label = {};
};

struct TableSchema {
  std::string name;  // the dataset's name under the root group
  std::string description;
  std::size_t row_size = 0;  // sizeof the row struct
  std::vector<Column> columns;
  // A default-constructed row's bytes (row_size of them; empty for the
  // partial schemas below): what a column the file lacks reads as.
  std::vector<std::byte> default_row;
};

// Bytes in memory of one column's value in a row.
std::size_t column_bytes(const Column& column);

TableSchema trials_schema();
// One int64 column per counter, named as given (FileHeader::counter_columns),
// mapped to SampleRow::counters[i]. Throws StoreError (naming `file`) for
// more counters than SampleRow holds, or a name used twice.
TableSchema samples_schema(std::span<const std::string> counter_columns, const Hdf5Errors& errors);
TableSchema epochs_schema();
TableSchema runs_schema();
TableSchema messages_schema();
TableSchema searches_schema();
TableSchema metrics_schema();

// The /samples columns a scan of the series needs, read through a partial
// compound type so that HDF5 converts only these.
struct SeriesColumns {
  FixedString<kTrialIdChars> trial_id{};
  std::int32_t attempt = 0;
  std::int32_t rank = -1;
  std::int32_t epoch = 0;
  double t = 0.0;
  std::int64_t rss = -1;
  std::int64_t sys_used = -1;
};
TableSchema series_schema();

// Just the trial_id column of /trials, /samples, /epochs, /messages or /metrics, or
// /searches' configuration_id. A row whose id is empty was never written:
// its chunk did not reach the file while the table's size did (a writer
// without SWMR killed during a flush).
TableSchema trial_id_schema(const std::string& table);

// The row struct's layout (for reading and writing rows in memory) and the
// file's packed layout of the same columns.
TypeHandle memory_type(const TableSchema& schema, const Hdf5Errors& errors);
// The same, of only `columns` (some of the schema's).
TypeHandle memory_type(const TableSchema& schema, const std::vector<Column>& columns, const Hdf5Errors& errors);
TypeHandle file_type(const TableSchema& schema, const Hdf5Errors& errors);

// How a table is stored: 1-D chunks of `chunk_rows` rows, optionally
// shuffled and deflated.
struct TableStorage {
  std::uint64_t chunk_rows = 1;
  unsigned deflate_level = 0;  // 0: no compression filter at all
  bool shuffle = false;        // byte shuffle before deflate
};

// The tables' storage and the writer's policy, chosen with
// bench/bench_store.cpp and the crash tests (docs/results-file.md, Storage).
//
// The rule behind them: a compressed chunk that is written again with more
// rows changes size and moves. Under SWMR HDF5 never frees the old copy (a
// reader may still follow the old index), so every rewrite leaks its size.
// Without SWMR it would free it and put the new copy in its place before
// the index is flushed; a writer killed in between leaves a flushed index
// pointing at other data. So the file never reuses freed space (create_file,
// fence_end_of_allocation: both modes leak the old copy), and compressed
// chunks are written once, whole, where the rows allow:
// - /trials, /runs, /messages and /searches: one row per chunk, each row
//   its own chunk (a message's rows are written with its trial's row, and
//   as durably);
// - /samples: rows wait in the writer until they fill a chunk. A partial
//   chunk is written too when a trial's row is (its series must be in the
//   file with it), and once its first row is samples_max_age old, so that
//   a live reader, and a resume after rank 0's death, lose little. Chunks
//   hold what one worker samples in 3/4 of its flush interval, so that the
//   workers compress whole chunks and rank 0 writes them as they are
//   (ResultStore::append_compressed_samples);
// - /epochs: rows come one at a time and must be as durable as the trial's
//   row, so the table is not compressed: an uncompressed chunk keeps its
//   size and place however often it is rewritten (epochs are a small part of
//   the file).
struct StoreLayout {
  TableStorage trials{1, 1, false};
  // Deflate 1 after the shuffle filter stores a 112-byte row in about 26
  // bytes; levels 4 and 6 save 2% more at 0.75 and 0.68 times the rate;
  // without the shuffle the row takes 45 bytes, and more time. 0 rows:
  // samples_chunk_rows(header, the run's flush interval).
  TableStorage samples{0, kSamplesDeflateLevel, kSamplesShuffle};
  TableStorage epochs{1024, 0, false};
  TableStorage runs{1, 1, false};
  TableStorage messages{1, 1, false};
  TableStorage searches{1, 1, false};
  // As /epochs: rows a few at a time, as durable as the trial's row.
  TableStorage metrics{1024, 0, false};
  std::chrono::milliseconds samples_max_age{1000};
  // HDF5's default file space strategy, which reuses freed space, and no
  // fence after a partial chunk: unsafe without SWMR (a killed writer can
  // leave a chunk unreadable), there for bench/bench_store.cpp to measure
  // what never reusing space costs.
  bool reuse_freed_space = false;
};

// The rows one worker samples in 3/4 of its flush interval (a worker sends
// whole chunks compressed, and only its trials' tails as rows:
// worker_sample_chunk_rows(), sample_chunk.hpp), in [64, 16384]: 150 at
// 10 ms and 2 s, 1500 at 1 ms and 2 s. Files before issue 29 have chunks of
// two seconds of all workers' rows (256 to 4096); they are still written,
// their chunks inflated and appended by rank 0 when the sizes differ.
std::uint64_t samples_chunk_rows(const FileHeader& header, double flush_seconds);

}  // namespace memsweep::store
