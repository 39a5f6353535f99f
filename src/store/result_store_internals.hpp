#pragma once
// What the white-box tests and bench/bench_store.cpp reach inside a
// ResultStore: the storage layout as a parameter (so that the benchmark
// measures this very writer with other settings) and the sample rows still
// waiting for a chunk.

#include "memsweep/store.hpp"
#include "store/schema.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>

namespace memsweep::store {

// Sample rows written since the last flush are flushed (made visible to SWMR
// readers and durable against the writer's death) at the next append once
// the last flush is this old. More often would cost rank 0 more than it
// gives a reader.
inline constexpr std::chrono::milliseconds kSampleFlushInterval{1000};

// How /samples rows reached the file (issue 29): rank 0's share of the
// compression is rows_written (it compressed them: rows given as rows, and
// rows_inflated of the chunks) against rows_direct.
struct SampleWriteCounts {
  std::uint64_t rows_written = 0;  // through the filters, by this process
  std::uint64_t rows_direct = 0;   // in chunks stored as they came
  std::uint64_t chunks_direct = 0;
  std::uint64_t rows_inflated = 0;  // of chunks that could not be stored as they came
};

struct ResultStoreInternals {
  // ResultStore::create with `layout` instead of the chosen one.
  static ResultStore create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                            const StoreOptions& options, const StoreLayout& layout,
                            const std::optional<RunRow>& run = std::nullopt);
  static std::size_t unwritten_samples(const ResultStore& store);
  static std::uint64_t samples_chunk_rows(const ResultStore& store);
  static SampleWriteCounts sample_write_counts(const ResultStore& store);
};

}  // namespace memsweep::store
