// Rank 0's ingest ceiling: how fast one process appends /samples rows to the
// results file, through the store's own writer (ResultStore, created with
// store::ResultStoreInternals), with several storage layouts of /samples in the same
// run: no compression, deflate levels with and without the shuffle filter,
// other chunk sizes. Rows arrive as rank 0 gets them: messages of 256
// consecutive samples of one trial, from many workers in turn; the writer
// buffers them into whole chunks and flushes every second, as in a sweep.
// Each layout runs several times (the order rotates every round); the table
// shows medians, the file's size per row, and the rate at 10 ms sampling
// divided into ranks.
//
// Then issue 29's comparison, "workers compress, rank 0 writes": with the
// chunk a worker fills at 1 ms sampling and 2 s flushes (and at 10 ms), rank
// 0 ingesting rows it compresses itself (today's path), chunks compressed
// beforehand (by the "workers", timed apart: ResultStore::
// append_compressed_samples only), and rows without compression; and the
// cost of compressing on one core (compress_sample_chunk), as a worker pays it.
//
// Last, what never reusing freed file space costs (the store's rule since a
// writer without SWMR killed between a partial chunk's rewrite and the next
// flush could leave it unreadable; StoreLayout::reuse_freed_space): the
// chosen setting against HDF5's default, with and without SWMR, for a steady
// stream and for short trials (a trial row, hence a partial chunk written
// again, every 512 sample rows).
// Run: memsweep_bench_store [rows per run] [runs] [folder for the files] [freed-space: that part only]

#include "bench_numbers.hpp"
#include "memsweep/flush_interval.hpp"
#include "memsweep/sample_chunk.hpp"
#include "memsweep/store.hpp"
#include "sample_stream.hpp"
#include "store/result_store_internals.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
namespace store = memsweep::store;

constexpr std::size_t kDefaultRows = 1'000'000;
constexpr int kDefaultRuns = 5;
constexpr double kSamplingRowsPerRankPerSecond = 100.0;  // 10 ms interval
using memsweep::bench::kCounters;
using memsweep::bench::kRowsPerMessage;
using memsweep::bench::kWorkers;

memsweep::FileHeader bench_header();

struct Layout {
  std::string name;
  store::StoreLayout layout;
};

std::vector<Layout> layouts() {
  const store::StoreLayout chosen;  // the defaults ResultStore uses
  auto with = [&](unsigned level, bool shuffle, std::uint64_t chunk_rows) {
    store::StoreLayout layout = chosen;
    layout.samples = store::TableStorage{chunk_rows, level, shuffle};
    return layout;
  };
  // What the store chooses for this many workers at 10 ms (the header below).
  const std::uint64_t chunk = store::samples_chunk_rows(bench_header(), memsweep::kDefaultFlushSeconds);
  const unsigned level = chosen.samples.deflate_level;
  return {
      {"no compression", with(0, false, chunk)},
      {fmt::format("deflate {} + shuffle, chunk {} (chosen)", level, chunk), with(level, true, chunk)},
      {"deflate 4 + shuffle", with(4, true, chunk)},
      {"deflate 6 + shuffle", with(6, true, chunk)},
      {fmt::format("deflate {}, no shuffle", level), with(level, false, chunk)},
      {fmt::format("deflate {} + shuffle, chunk 256", level), with(level, true, 256)},
      {fmt::format("deflate {} + shuffle, chunk 1024", level), with(level, true, 1024)},
  };
}

memsweep::FileHeader bench_header() { return memsweep::bench::sample_stream_header("bench-store"); }

struct RunResult {
  double seconds = 0.0;
  double file_bytes = 0.0;
};

RunResult run_once(const Layout& layout, const std::vector<memsweep::SampleRow>& pool, std::size_t rows,
                   const std::filesystem::path& file) {
  std::filesystem::remove(file);
  const auto start = Clock::now();
  {
    auto writer =
        store::ResultStoreInternals::create(file, bench_header(), false, memsweep::StoreOptions{true}, layout.layout);
    for (std::size_t written = 0; written < rows; written += kRowsPerMessage) {
      const std::size_t offset = written % pool.size();
      writer.append_samples(std::span(pool).subspan(offset, std::min(kRowsPerMessage, rows - written)));
    }
    writer.close();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto bytes = static_cast<double>(std::filesystem::file_size(file));
  std::filesystem::remove(file);
  return {seconds, bytes};
}

// Issue 29: one rank 0 path with /samples in chunks of `chunk_rows`.
enum class Ingest { rank0_compresses, workers_compress, uncompressed };
struct IngestCase {
  std::string name;
  Ingest ingest;
  std::uint64_t chunk_rows;
};

// Each worker's rows of the pool in order, cut into whole chunks of one
// attempt, compressed as a worker would.
std::vector<memsweep::CompressedSampleChunk> worker_chunks(const std::vector<memsweep::SampleRow>& pool,
                                                           const memsweep::SampleChunkFormat& format) {
  std::vector<std::vector<memsweep::SampleRow>> by_worker(kWorkers);
  for (const memsweep::SampleRow& row : pool) by_worker[static_cast<std::size_t>(row.rank - 1)].push_back(row);
  std::vector<memsweep::CompressedSampleChunk> chunks;
  for (std::size_t first = 0; first + format.chunk_rows <= by_worker[0].size(); first += format.chunk_rows)
    for (const auto& rows : by_worker)
      chunks.push_back(memsweep::compress_sample_chunk(std::span(rows).subspan(first, format.chunk_rows), format));
  return chunks;
}

struct IngestResult {
  double seconds = 0.0;
  store::SampleWriteCounts counts;
};

IngestResult ingest_once(const IngestCase& c, const std::vector<memsweep::SampleRow>& pool,
                         const std::vector<memsweep::CompressedSampleChunk>& chunks, std::size_t rows,
                         const std::filesystem::path& file) {
  std::filesystem::remove(file);
  store::StoreLayout layout;
  layout.samples = c.ingest == Ingest::uncompressed
                       ? store::TableStorage{c.chunk_rows, 0, false}
                       : store::TableStorage{c.chunk_rows, memsweep::kSamplesDeflateLevel, memsweep::kSamplesShuffle};
  IngestResult result;
  const auto start = Clock::now();
  {
    auto writer =
        store::ResultStoreInternals::create(file, bench_header(), false, memsweep::StoreOptions{true}, layout);
    if (c.ingest == Ingest::workers_compress) {
      for (std::size_t written = 0, k = 0; written < rows; written += c.chunk_rows, ++k)
        writer.append_compressed_samples(chunks[k % chunks.size()]);
    } else {
      for (std::size_t written = 0; written < rows; written += kRowsPerMessage) {
        const std::size_t offset = written % pool.size();
        writer.append_samples(std::span(pool).subspan(offset, std::min(kRowsPerMessage, rows - written)));
      }
    }
    result.counts = store::ResultStoreInternals::sample_write_counts(writer);
    writer.close();
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::filesystem::remove(file);
  return result;
}

using memsweep::bench::median;

// ---- freed space never reused, against HDF5's default ------------------------

struct SpaceCase {
  std::string name;
  bool swmr;
  std::size_t rows_per_trial;  // 0: one stream, no trial rows
};

RunResult space_once(const SpaceCase& c, bool reuse_freed_space, const std::vector<memsweep::SampleRow>& pool,
                     std::size_t rows, const std::filesystem::path& file) {
  std::filesystem::remove(file);
  store::StoreLayout layout;
  layout.reuse_freed_space = reuse_freed_space;
  const auto start = Clock::now();
  {
    auto writer =
        store::ResultStoreInternals::create(file, bench_header(), false, memsweep::StoreOptions{c.swmr}, layout);
    memsweep::TrialRow trial;
    memsweep::set_fixed(trial.trial_id, "bench-trial");
    for (std::size_t written = 0; written < rows; written += kRowsPerMessage) {
      const std::size_t offset = written % pool.size();
      writer.append_samples(std::span(pool).subspan(offset, std::min(kRowsPerMessage, rows - written)));
      if (c.rows_per_trial > 0 && (written + kRowsPerMessage) % c.rows_per_trial == 0) writer.append_trial(trial);
    }
    writer.close();
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto bytes = static_cast<double>(std::filesystem::file_size(file));
  std::filesystem::remove(file);
  return {seconds, bytes};
}

void compare_freed_space(const std::vector<memsweep::SampleRow>& pool, std::size_t rows, int runs,
                         const std::filesystem::path& file) {
  const std::vector<SpaceCase> cases{
      {"SWMR, one stream", true, 0},
      {"no SWMR, one stream", false, 0},
      {"SWMR, a trial row every 512 rows", true, 512},
      {"no SWMR, a trial row every 512 rows", false, 512},
  };
  fmt::print(
      "\nFreed file space never reused (chosen) against HDF5's default strategy, which reuses it: {} rows per "
      "run, {} runs, medians; ratio = chosen / default\n\n",
      rows, runs);
  fmt::print("{:<38} {:>12} {:>12} {:>7} {:>12} {:>12} {:>7}\n", "case", "rows/s", "default", "ratio", "bytes/row",
             "default", "ratio");
  for (const SpaceCase& c : cases) {
    std::vector<double> times[2];
    std::vector<double> sizes[2];
    for (int run = 0; run < runs; ++run) {
      for (int j = 0; j < 2; ++j) {
        const int reuse = (j + run) % 2;  // alternate which goes first
        const RunResult result = space_once(c, reuse == 1, pool, rows, file);
        times[reuse].push_back(result.seconds);
        sizes[reuse].push_back(result.file_bytes);
      }
    }
    const double n = static_cast<double>(rows);
    const double rate[2] = {n / median(times[0]), n / median(times[1])};
    const double per_row[2] = {median(sizes[0]) / n, median(sizes[1]) / n};
    fmt::print("{:<38} {:>12.0f} {:>12.0f} {:>7.2f} {:>12.2f} {:>12.2f} {:>7.3f}\n", c.name, rate[0], rate[1],
               rate[0] / rate[1], per_row[0], per_row[1], per_row[0] / per_row[1]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t rows = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : kDefaultRows;
  const int runs = argc > 2 ? std::atoi(argv[2]) : kDefaultRuns;
  const std::filesystem::path folder = argc > 3 ? argv[3] : std::filesystem::temp_directory_path();
  if (rows == 0 || runs <= 0) {
    fmt::print(stderr, "usage: memsweep_bench_store [rows per run] [runs] [folder]\n");
    return 2;
  }
  const std::vector<memsweep::SampleRow> pool = memsweep::bench::realistic_rows();
  const std::filesystem::path file = folder / fmt::format("memsweep-bench-store-{}.h5", ::getpid());
  if (argc > 4 && std::string_view(argv[4]) == "freed-space") {
    compare_freed_space(pool, rows, runs, file);
    return 0;
  }
  const std::vector<Layout> all = layouts();
  // Bytes of a row as stored, before compression: the fixed columns and one
  // int64 per counter (the packed file type has no padding).
  const double row_bytes = static_cast<double>(offsetof(memsweep::SampleRow, counters) + 8 * kCounters.size());

  std::vector<std::vector<double>> seconds(all.size());
  std::vector<std::vector<double>> bytes(all.size());
  for (int run = 0; run < runs; ++run) {
    for (std::size_t j = 0; j < all.size(); ++j) {
      const std::size_t i = (j + static_cast<std::size_t>(run)) % all.size();  // rotate the order
      const RunResult result = run_once(all[i], pool, rows, file);
      seconds[i].push_back(result.seconds);
      bytes[i].push_back(result.file_bytes);
    }
  }

  fmt::print(
      "/samples append, one process: {} rows of {} bytes (4 counters) per run, {} runs, messages of {} rows "
      "from {} workers in turn, SWMR, flushed every {} ms; files in {}\n\n",
      rows, row_bytes, runs, kRowsPerMessage, kWorkers, store::kSampleFlushInterval.count(), folder.string());
  fmt::print("{:<42} {:>10} {:>7} {:>11} {:>10} {:>6} {:>14}\n", "layout", "rows/s", "MB/s", "min..max s", "bytes/row",
             "ratio", "ranks @ 10 ms");
  for (std::size_t i = 0; i < all.size(); ++i) {
    const double s = median(seconds[i]);
    const double rate = static_cast<double>(rows) / s;
    const double per_row = median(bytes[i]) / static_cast<double>(rows);
    const auto [low, high] = std::minmax_element(seconds[i].begin(), seconds[i].end());
    fmt::print("{:<42} {:>10.0f} {:>7.1f} {:>5.2f}..{:<5.2f} {:>10.1f} {:>6.2f} {:>14.0f}\n", all[i].name, rate,
               rate * row_bytes / 1e6, *low, *high, per_row, row_bytes / per_row, rate / kSamplingRowsPerRankPerSecond);
  }
  fmt::print(
      "\nMB/s counts uncompressed row bytes (10^6 bytes); bytes/row is the final file's size over its rows; "
      "ranks @ 10 ms = rows/s / 100, the ranks whose samples one process could store, and nothing else.\n");

  // ---- issue 29: workers compress, rank 0 writes --------------------------------
  const auto flush = std::chrono::milliseconds(static_cast<int>(memsweep::kDefaultFlushSeconds * 1000));
  const std::uint64_t chunk_1ms = memsweep::worker_sample_chunk_rows(1, flush);
  const std::uint64_t chunk_10ms = memsweep::worker_sample_chunk_rows(10, flush);
  const std::vector<IngestCase> cases{
      {fmt::format("rank 0 compresses, chunk {}", chunk_1ms), Ingest::rank0_compresses, chunk_1ms},
      {fmt::format("workers compress, chunk {}", chunk_1ms), Ingest::workers_compress, chunk_1ms},
      {fmt::format("uncompressed, chunk {}", chunk_1ms), Ingest::uncompressed, chunk_1ms},
      {fmt::format("rank 0 compresses, chunk {}", chunk_10ms), Ingest::rank0_compresses, chunk_10ms},
      {fmt::format("workers compress, chunk {}", chunk_10ms), Ingest::workers_compress, chunk_10ms},
  };
  std::vector<std::vector<memsweep::CompressedSampleChunk>> chunk_pools;
  std::vector<double> compress_rates;  // rows/s of one core, per chunk size
  for (const std::uint64_t chunk_rows : {chunk_1ms, chunk_10ms}) {
    const memsweep::SampleChunkFormat format = memsweep::worker_sample_chunk_format(kCounters.size(), 1, flush);
    memsweep::SampleChunkFormat sized = format;
    sized.chunk_rows = chunk_rows;
    std::vector<double> rates;
    for (int run = 0; run < runs; ++run) {
      const auto start = Clock::now();
      std::vector<memsweep::CompressedSampleChunk> chunks = worker_chunks(pool, sized);
      const double took = std::chrono::duration<double>(Clock::now() - start).count();
      rates.push_back(static_cast<double>(chunks.size() * chunk_rows) / took);
      if (run == 0) chunk_pools.push_back(std::move(chunks));
    }
    compress_rates.push_back(median(rates));
  }
  std::vector<std::vector<double>> ingest_seconds(cases.size());
  std::vector<store::SampleWriteCounts> counts(cases.size());
  for (int run = 0; run < runs; ++run) {
    for (std::size_t j = 0; j < cases.size(); ++j) {
      const std::size_t i = (j + static_cast<std::size_t>(run)) % cases.size();
      const auto& chunks = chunk_pools[cases[i].chunk_rows == chunk_1ms ? 0 : 1];
      const IngestResult result = ingest_once(cases[i], pool, chunks, rows, file);
      ingest_seconds[i].push_back(result.seconds);
      counts[i] = result.counts;
    }
  }
  fmt::print(
      "\nIssue 29, workers compress, rank 0 writes: rank 0's ingest of {} rows per run, {} runs (medians); "
      "chunks of what one worker samples in 3/4 of a {} ms flush interval at 1 ms ({} rows) and 10 ms ({} rows)\n\n",
      rows, runs, flush.count(), chunk_1ms, chunk_10ms);
  fmt::print("{:<34} {:>11} {:>13} {:>12} {:>12} {:>15}\n", "rank 0 path", "rows/s", "min..max s", "rows direct",
             "rows by r0", "x rank 0 comp.");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const double rate = static_cast<double>(rows) / median(ingest_seconds[i]);
    const std::size_t base = cases[i].chunk_rows == chunk_1ms ? 0 : 3;
    const double base_rate = static_cast<double>(rows) / median(ingest_seconds[base]);
    const auto [low, high] = std::minmax_element(ingest_seconds[i].begin(), ingest_seconds[i].end());
    fmt::print("{:<34} {:>11.0f} {:>6.2f}..{:<6.2f} {:>12} {:>12} {:>15.2f}\n", cases[i].name, rate, *low, *high,
               counts[i].rows_direct, counts[i].rows_written, rate / base_rate);
  }
  fmt::print("\nA worker's cost of compressing (compress_sample_chunk on one core, medians of {} runs):\n", runs);
  const std::uint64_t sizes[] = {chunk_1ms, chunk_10ms};
  for (std::size_t k = 0; k < 2; ++k)
    fmt::print("  chunk {:>5}: {:>10.0f} rows/s; a core's share at 1 ms sampling {:.3f} %, at 10 ms {:.4f} %\n",
               sizes[k], compress_rates[k], 100.0 * 1000.0 / compress_rates[k], 100.0 * 100.0 / compress_rates[k]);
  compare_freed_space(pool, rows, runs, file);
  return 0;
}
