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

struct ResultStoreInternals {
  // ResultStore::create with `layout` instead of the chosen one.
  static ResultStore create(const std::filesystem::path& path, const FileHeader& header, bool replace,
                            const StoreOptions& options, const StoreLayout& layout,
                            const std::optional<RunRow>& run = std::nullopt);
  static std::size_t unwritten_samples(const ResultStore& store);
  static std::uint64_t samples_chunk_rows(const ResultStore& store);
};

}  // namespace memsweep::store
