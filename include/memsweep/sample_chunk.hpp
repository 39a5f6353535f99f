#pragma once
// One chunk of /samples as the results file stores it, made where the rows
// are (a worker), so that rank 0 writes it with HDF5's direct chunk write
// and compresses nothing itself (issue 29; docs/results-file.md, "Workers
// compress, rank 0 writes"). Pure: zlib, no HDF5 and no MPI, so that the
// sweep's workers use it without the store.
//
// The bytes are exactly what HDF5's filter pipeline of /samples makes of the
// chunk: the rows in the file's packed compound type (the columns of
// store/schema.cpp's samples_schema(), in order, without the row struct's
// padding), byte-shuffled with the row's size as element size, then
// compressed with zlib's compress2 at the file's deflate level. The store's
// tests check the packed layout against the file's own type.

#include "memsweep/results.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memsweep {

// How a file's /samples chunks are made: what a chunk maker must agree on
// with the file. Every rank derives it from the same settings.
struct SampleChunkFormat {
  std::uint32_t counters = 0;       // the file's counter columns (FileHeader::counter_columns)
  std::uint32_t deflate_level = 1;  // 1..9
  bool shuffle = true;              // the shuffle filter before deflate
  std::uint64_t chunk_rows = 0;     // rows per chunk of /samples
  bool operator==(const SampleChunkFormat&) const = default;
};

// What rank 0 needs of a chunk's rows without inflating them: the sums a
// SeriesAccumulator keeps (a silent worker's row is made from them).
struct SampleChunkSeries {
  std::int32_t rank = -1;  // of the first row
  std::int32_t last_epoch = 0;
  std::uint64_t samples = 0;
  std::int64_t first_rss = -1;
  std::int64_t peak_rss = -1;
  double rss_sum = 0.0;
  std::uint64_t rss_count = 0;
  double sys_used_sum = 0.0;
  std::uint64_t sys_used_count = 0;
  double last_t = 0.0;
};

// Plain bytes (a message's head): no padding, trivially copyable.
struct CompressedChunkInfo {
  FixedString<kTrialIdChars> trial_id{};  // every row's: a chunk holds one attempt's rows
  std::int32_t attempt = 0;
  std::uint32_t counters = 0;
  std::uint32_t deflate_level = 0;
  std::uint32_t shuffle = 0;
  std::uint32_t filter_mask = 0;  // H5Dwrite_chunk's: 0, every filter applied
  std::uint64_t rows = 0;
  SampleChunkSeries series;
};

struct CompressedSampleChunk {
  CompressedChunkInfo info;
  std::vector<std::byte> bytes;  // the filtered chunk, as stored in the file
  // Whether it was made with `format`: then rank 0 may store it as it is.
  bool fits(const SampleChunkFormat& format) const;
};

// Bytes of one row in the file's packed type with `counters` counter columns.
std::size_t packed_sample_row_bytes(std::size_t counters);
// The rows in the packed type, one after the other (`dst`: rows.size() *
// packed_sample_row_bytes(counters) bytes), and back.
void pack_sample_rows(std::span<const SampleRow> rows, std::size_t counters, std::byte* dst);
void unpack_sample_rows(const std::byte* src, std::size_t counters, std::span<SampleRow> rows);

// The chunk of `rows` (one trial attempt's, in order; at most
// format.chunk_rows) in `format`. A chunk of fewer rows than
// format.chunk_rows is valid too, but only a whole one is stored directly.
// Throws std::runtime_error when zlib fails or the rows are of several attempts.
CompressedSampleChunk compress_sample_chunk(std::span<const SampleRow> rows, const SampleChunkFormat& format);
// The rows back; throws std::runtime_error for bytes that do not inflate to
// info.rows rows.
std::vector<SampleRow> inflate_sample_chunk(const CompressedSampleChunk& chunk);

// Rows per chunk of /samples, so that one worker sampling every
// `sampler_interval_ms` fills a chunk well within its flush interval (3/4 of
// it): then its whole chunks go compressed and its flush timer sends only
// trial tails. Within [kMinWorkerChunkRows, kMaxWorkerChunkRows].
inline constexpr std::uint64_t kMinWorkerChunkRows = 64;
inline constexpr std::uint64_t kMaxWorkerChunkRows = 16384;
std::uint64_t worker_sample_chunk_rows(int sampler_interval_ms, std::chrono::milliseconds flush_interval);

// /samples' deflate level and shuffle filter in the files memsweep creates
// (store/schema.hpp's StoreLayout, chosen with bench/bench_store.cpp).
inline constexpr std::uint32_t kSamplesDeflateLevel = 1;
inline constexpr bool kSamplesShuffle = true;
// The format of a new file's chunks, as every rank can work it out.
SampleChunkFormat worker_sample_chunk_format(std::size_t counters, int sampler_interval_ms,
                                             std::chrono::milliseconds flush_interval);

}  // namespace memsweep
