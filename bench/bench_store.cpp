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
// Run: memsweep_bench_store [rows per run] [runs] [folder for the files]

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
  const std::uint64_t chunk = store::samples_chunk_rows(bench_header());
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

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
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
  const std::vector<Layout> all = layouts();
  // Bytes of a row as stored, before compression: the fixed columns and one
  // int64 per counter (the packed file type has no padding).
  const double row_bytes = static_cast<double>(offsetof(memsweep::SampleRow, counters) + 8 * kCounters.size());

  std::vector<std::vector<double>> seconds(all.size());
  std::vector<std::vector<double>> bytes(all.size());
  const std::filesystem::path file = folder / fmt::format("memsweep-bench-store-{}.h5", ::getpid());
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
  return 0;
}
