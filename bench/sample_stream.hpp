#pragma once
// The /samples rows rank 0 receives in a large sweep, for the benchmarks of
// the results file (bench_store.cpp, bench_watch.cpp): messages of
// kRowsPerMessage consecutive samples of one trial, from kWorkers workers in
// turn, with realistic values, and the header of a file that holds them.

#include "memsweep/random.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/store.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace memsweep::bench {

inline constexpr std::size_t kRowsPerMessage = kSamplesPerChunk;  // what a worker streams at once
inline constexpr std::size_t kWorkers = 64;
inline constexpr std::size_t kMessagesPerWorker = 16;  // the pool of distinct rows cycled through
inline const std::vector<std::string> kCounters{"PAPI_L1_DCM", "PAPI_L2_DCM", "PAPI_TLB_DM", "perf::PAGE-FAULTS"};

// What a sampler at 10 ms produces: time with a few microseconds of jitter,
// RSS moving by pages with steps at epoch boundaries, system figures
// wandering with the rest of the node, cumulative counters. In stream order:
// message 0 of workers 0..kWorkers-1, then message 1 of each, ...; worker w's
// rows have rank w + 1 and one trial id.
inline std::vector<SampleRow> realistic_rows() {
  Rng rng(42);
  std::vector<SampleRow> rows;
  rows.reserve(kWorkers * kMessagesPerWorker * kRowsPerMessage);
  for (std::size_t message = 0; message < kMessagesPerWorker; ++message) {
    for (std::size_t worker = 0; worker < kWorkers; ++worker) {
      Rng stream(mix_seed(42, worker));
      for (std::size_t i = 0; i < kRowsPerMessage; ++i) {
        const std::size_t k = message * kRowsPerMessage + i;
        SampleRow row;
        set_fixed(row.trial_id, fmt::format("{:012x}", mix_seed(7, worker) >> 16));
        row.attempt = 0;
        row.rank = static_cast<std::int32_t>(worker + 1);
        row.epoch = static_cast<std::int32_t>(k / 1000);
        row.t = 0.01 * static_cast<double>(k) + rng.normal() * 2e-5;
        const std::int64_t pages = 50'000 + 5'000 * row.epoch + rng.uniform_int(-200, 200);
        row.rss = 4096 * pages;
        row.anon_rss = row.rss - 30'000'000 + 4096 * rng.uniform_int(-20, 20);
        row.pss = row.rss - 4096 * static_cast<std::int64_t>(k / 100 % 50);
        row.sys_used = 4096 * (1'200'000 + rng.uniform_int(-5'000, 5'000));
        row.sys_total = 25'000'000'000;
        row.sys_available = 25'000'000'000 - row.sys_used;
        row.sys_active = 4096 * (900'000 + rng.uniform_int(-3'000, 3'000));
        const auto kk = static_cast<std::int64_t>(k);
        row.counters[0] = kk * 1'000'000 + rng.uniform_int(0, 100'000);
        row.counters[1] = kk * 200'000 + rng.uniform_int(0, 20'000);
        row.counters[2] = kk * 10'000 + rng.uniform_int(0, 1'000);
        row.counters[3] = kk * 3 + stream.uniform_int(0, 2);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

// The header of a file of these rows: kWorkers + 1 ranks sampling every 10 ms,
// the four counters (the store picks its /samples chunk from it).
inline FileHeader sample_stream_header(std::string sweep_name) {
  FileHeader header;
  header.sweep_name = std::move(sweep_name);
  header.counter_columns = kCounters;
  header.events_requested = kCounters;
  header.ranks = static_cast<int>(kWorkers + 1);
  header.sampler_interval_ms = 10;
  return header;
}

}  // namespace memsweep::bench
