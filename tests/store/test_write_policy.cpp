// The writer's policy (ResultStore, with store::ResultStoreInternals): sample rows
// wait for a whole chunk, compressed chunks are written once, so that SWMR
// leaks no space and a killed writer without SWMR leaves no index pointing
// at reused space (test_file_safety.cpp kills writers).

#include "memsweep/store.hpp"
#include "store/result_store_internals.hpp"
#include "store/store_fixtures.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <ostream>
#include <thread>

namespace memsweep {
namespace {

using testing::example_header;
using testing::example_run;
using testing::example_samples;
using testing::example_trial;

std::vector<SampleRow> numbered(std::size_t first, std::size_t count) {
  std::vector<SampleRow> rows = example_samples(testing::example_id(0), 0, count);
  for (std::size_t i = 0; i < count; ++i) rows[i].counters[0] = static_cast<std::int64_t>(first + i);
  return rows;
}

void expect_numbered(const std::filesystem::path& path, std::size_t count) {
  const ResultReader reader(path);
  ASSERT_EQ(reader.sample_count(), count);
  const std::vector<SampleRow> rows = reader.samples(0, count);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(rows[i].counters[0], static_cast<std::int64_t>(i)) << "row " << i;
}

struct ChunkCase {
  int ranks;
  int interval_ms;
  double flush_seconds;
  std::uint64_t chunk_rows;
};

void PrintTo(const ChunkCase& chunk_case, std::ostream* out) {
  *out << chunk_case.ranks << " ranks at " << chunk_case.interval_ms << " ms, flushing every "
       << chunk_case.flush_seconds << " s";
}

class SampleChunks : public ::testing::TestWithParam<ChunkCase> {};

// Issue 29: a chunk is what one worker samples in 3/4 of its flush interval,
// whatever the number of ranks, so that workers fill whole chunks.
TEST_P(SampleChunks, HoldWhatOneWorkerSamplesInThreeQuartersOfItsFlushInterval) {
  FileHeader header;
  header.ranks = GetParam().ranks;
  header.sampler_interval_ms = GetParam().interval_ms;
  EXPECT_EQ(store::samples_chunk_rows(header, GetParam().flush_seconds), GetParam().chunk_rows);
}

INSTANTIATE_TEST_SUITE_P(RanksAndIntervals, SampleChunks,
                         ::testing::Values(ChunkCase{1, 10, 2.0, 150},     // 200 rows in 2 s
                                           ChunkCase{1000, 10, 2.0, 150},  // the ranks do not matter
                                           ChunkCase{2, 1, 2.0, 1500},     // 2000 rows in 2 s
                                           ChunkCase{2, 10, 1.0, 75},      // a shorter flush interval
                                           ChunkCase{2, 1, 60.0, 16384},   // the largest
                                           ChunkCase{1, 1000, 2.0, 64},    // the smallest
                                           ChunkCase{0, 0, 2.0, 150}));    // nonsense: the default interval

TEST(WritePolicy, SampleRowsWaitForAWholeChunkAndCloseWritesTheRest) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  auto writer = store::ResultStoreInternals::create(path, example_header(), false, {}, {});
  const std::size_t chunk = store::ResultStoreInternals::samples_chunk_rows(writer);
  ASSERT_EQ(chunk, store::samples_chunk_rows(example_header(), kDefaultFlushSeconds));
  ASSERT_GT(chunk, 100u);
  writer.append_samples(numbered(0, 100));
  EXPECT_EQ(store::ResultStoreInternals::unwritten_samples(writer), 100u);
  ASSERT_EQ(writer.scan_series().size(), 1u);
  EXPECT_EQ(writer.scan_series()[0].samples, 100u) << "scan_series counts the waiting rows";
  writer.append_samples(numbered(100, 2 * chunk - 50));
  EXPECT_EQ(store::ResultStoreInternals::unwritten_samples(writer), 50u) << "one whole chunk written";
  writer.close();
  expect_numbered(path, 2 * chunk + 50);
}

// The number of sample rows in the file a writer killed at `moment` leaves:
// `write` runs in a child that is SIGKILLed once it returns.
std::size_t samples_left_by_killed_writer(const std::filesystem::path& path, bool swmr,
                                          const std::function<void(ResultStore&)>& write) {
  testing::ChildProcess child([&](const testing::ChildProcess::Channel& parent) {
    store::StoreLayout layout;
    layout.samples_max_age = std::chrono::milliseconds(20);
    auto writer = store::ResultStoreInternals::create(path, example_header(), false, StoreOptions{swmr}, layout);
    write(writer);
    parent.send('w');
    parent.receive();  // killed while waiting
  });
  child.receive();
  child.kill_hard();
  return ResultReader(path).sample_count();
}

// A trial's row stands for its series: killed after append_trial, a writer
// must leave the rows its `samples` counts. They used to wait for a whole
// chunk, and 44 ok rows of 66 runs killed under mpirun had short series.
TEST(WritePolicy, ATrialsRowIsWrittenWithEverySampleRowBeforeIt) {
  for (const bool swmr : {true, false}) {
    const testing::TempDir dir;
    auto writer =
        store::ResultStoreInternals::create(dir.path() / "results.h5", example_header(), false, StoreOptions{swmr}, {});
    writer.append_samples(numbered(0, 100));
    writer.append_trial(example_trial(0), "");
    EXPECT_EQ(store::ResultStoreInternals::unwritten_samples(writer), 0u) << (swmr ? "swmr" : "no swmr");
    // The partial chunk written again, with the rows that complete it.
    writer.append_samples(numbered(100, 500));
    writer.close();
    expect_numbered(dir.path() / "results.h5", 600);

    const std::size_t left = samples_left_by_killed_writer(dir.path() / "killed.h5", swmr, [](auto& killed) {
      killed.append_samples(numbered(0, 100));
      killed.append_trial(example_trial(0), "");
    });
    EXPECT_EQ(left, 100u) << (swmr ? "swmr" : "no swmr");
  }
}

// Without a message to trigger it: rank 0 calls write_waiting_samples on a
// timer.
TEST(WritePolicy, RowsOlderThanTheMaximumAgeAreWrittenAndFlushedWithoutAnotherAppend) {
  for (const bool swmr : {true, false}) {
    const testing::TempDir dir;
    store::StoreLayout layout;
    layout.samples_max_age = std::chrono::milliseconds(20);
    auto writer = store::ResultStoreInternals::create(dir.path() / "results.h5", example_header(), false,
                                                      StoreOptions{swmr}, layout);
    writer.append_samples(numbered(0, 10));
    writer.write_waiting_samples();
    EXPECT_EQ(store::ResultStoreInternals::unwritten_samples(writer), 10u) << "young rows wait";
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    writer.write_waiting_samples();
    EXPECT_EQ(store::ResultStoreInternals::unwritten_samples(writer), 0u) << (swmr ? "swmr" : "no swmr");

    // Flushed once the last flush (the file's creation) is a second old.
    const std::size_t left = samples_left_by_killed_writer(dir.path() / "killed.h5", swmr, [](auto& killed) {
      killed.append_samples(numbered(0, 10));
      std::this_thread::sleep_for(store::kSampleFlushInterval);
      killed.write_waiting_samples();
    });
    EXPECT_EQ(left, 10u) << (swmr ? "swmr" : "no swmr");
  }
}

class NoLeak : public ::testing::TestWithParam<bool> {};

// Under SWMR, HDF5 never frees the old place of a compressed chunk written
// again; a table that rewrote its last chunk at every flush grew by that
// chunk each time (4 KB per trial row with 64-row chunks).
TEST_P(NoLeak, AFlushPerTrialRowCostsNoMoreThanTheRow) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  constexpr int kTrials = 400;
  constexpr std::size_t kSamplesPerTrial = 256;  // a quiet sweep: a flush every 256 sample rows
  {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{GetParam()});
    for (int i = 0; i < kTrials; ++i) {
      store.append_samples(example_samples(testing::example_id(i), 0, kSamplesPerTrial));
      store.append_epoch(testing::example_epoch(i));
      store.append_trial(example_trial(i));
    }
  }
  const auto bytes = static_cast<double>(std::filesystem::file_size(path));
  const double samples_bytes = static_cast<double>(kTrials * kSamplesPerTrial) * (80 + 8 * 3);  // uncompressed
  // Rows compress to a fraction of their size; leaking, the file was
  // several times the uncompressed samples.
  EXPECT_LT(bytes, 0.6 * samples_bytes) << bytes / kTrials << " bytes per trial";
}

INSTANTIATE_TEST_SUITE_P(SwmrAndNot, NoLeak, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& case_info) {
  return case_info.param ? "Swmr" : "NoSwmr";
});

TEST(WritePolicy, AResumeCompletesThePartialLastChunk) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, {});
    ASSERT_NE(1537 % store::ResultStoreInternals::samples_chunk_rows(store), 0u);
    store.append_samples(numbered(0, 1537));  // closes with a partial last chunk
  }
  for (std::size_t first = 1537; first < 4000; first += 500) {
    ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), {});
    store.append_samples(numbered(first, 500));
  }
  expect_numbered(path, 4037);
}

}  // namespace
}  // namespace memsweep
