// Issue 29: /samples chunks compressed outside the store (a worker) and
// written by rank 0 as they are (HDF5's direct chunk write). They must read
// back as the same rows written the ordinary way, through the store's
// reader, h5py and h5dump, whatever the counter columns; mixed with rows
// (trial tails, rows written for their age, a resumed file's partial last
// chunk), every attempt's rows stay complete and in order.

#include "memsweep/sample_chunk.hpp"
#include "memsweep/store.hpp"
#include "store/hdf5_handles.hpp"
#include "store/result_store_internals.hpp"
#include "store/schema.hpp"
#include "store/store_fixtures.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using testing::example_header;
using testing::example_id;
using testing::example_samples;

constexpr std::uint64_t kChunk = 128;

FileHeader header_with(std::vector<std::string> counters) {
  FileHeader header = example_header();
  header.counter_sources.assign(counters.size(), "papi");
  header.counter_encodings.assign(counters.size(), "");
  header.counter_columns = std::move(counters);
  return header;
}

store::StoreLayout layout_with(std::uint64_t chunk_rows) {
  store::StoreLayout layout;
  layout.samples.chunk_rows = chunk_rows;
  return layout;
}

// Rows whose every column differs from row to row and from the defaults.
std::vector<SampleRow> rows_of(int trial, std::int32_t attempt, std::size_t first, std::size_t count,
                               std::size_t counters) {
  std::vector<SampleRow> rows = example_samples(example_id(trial), attempt, first + count);
  rows.erase(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].rank = trial + 1;
    for (std::size_t c = 0; c < kMaxCounters; ++c)
      rows[i].counters[c] = c < counters ? static_cast<std::int64_t>(7919 * (c + 1) + first + i) : 0;
  }
  return rows;
}

std::vector<SampleRow> all_samples(const std::filesystem::path& path) {
  const ResultReader reader(path);
  return reader.samples(0, reader.sample_count());
}

int shell(const std::string& command) { return std::system(command.c_str()); }

class DirectChunks : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DirectChunks, PackedRowsAreTheFilesRowType) {
  std::vector<std::string> names;
  for (std::size_t c = 0; c < GetParam(); ++c) names.push_back(fmt::format("counter{}", c));
  const store::Hdf5Errors errors("test");
  const store::TypeHandle packed = store::file_type(store::samples_schema(names, errors), errors);
  EXPECT_EQ(H5Tget_size(packed.get()), packed_sample_row_bytes(GetParam()));
  // Each column's bytes where the codec puts them: pack a row whose bytes
  // all differ, and compare with HDF5's conversion of it to the packed type.
  SampleRow row = rows_of(3, 2, 5, 1, GetParam()).front();
  std::vector<std::byte> ours(packed_sample_row_bytes(GetParam()));
  pack_sample_rows(std::span(&row, 1), GetParam(), ours.data());
  std::vector<std::byte> converted(sizeof(SampleRow));
  std::memcpy(converted.data(), &row, sizeof(SampleRow));
  const store::TypeHandle memory = store::memory_type(store::samples_schema(names, errors), errors);
  std::vector<std::byte> background(sizeof(SampleRow));
  ASSERT_GE(H5Tconvert(memory.get(), packed.get(), 1, converted.data(), background.data(), H5P_DEFAULT), 0);
  converted.resize(ours.size());
  EXPECT_TRUE(converted == ours);
}

TEST_P(DirectChunks, ReadBackAsTheSameRowsWrittenTheOrdinaryWay) {
  const std::size_t counters = GetParam();
  std::vector<std::string> names;
  for (std::size_t c = 0; c < counters; ++c) names.push_back(fmt::format("EV_{}", c));
  const testing::TempDir dir;
  const auto direct = dir.path() / "direct.h5";
  const auto ordinary = dir.path() / "ordinary.h5";
  const std::vector<SampleRow> a = rows_of(1, 0, 0, 3 * kChunk, counters);
  const std::vector<SampleRow> b = rows_of(2, 1, 0, 2 * kChunk, counters);
  std::vector<SampleRow> expected;
  {
    auto writer = store::ResultStoreInternals::create(direct, header_with(names), false, {}, layout_with(kChunk));
    auto plain = store::ResultStoreInternals::create(ordinary, header_with(names), false, {}, layout_with(kChunk));
    const SampleChunkFormat format = writer.sample_chunk_format();
    ASSERT_EQ(format, (SampleChunkFormat{static_cast<std::uint32_t>(counters), 1, true, kChunk}));
    for (std::size_t k = 0; k < 3; ++k) {
      for (const auto* rows : {&a, &b}) {
        if ((k + 1) * kChunk > rows->size()) continue;
        const auto chunk_rows = std::span(*rows).subspan(k * kChunk, kChunk);
        writer.append_compressed_samples(compress_sample_chunk(chunk_rows, format));
        plain.append_samples(chunk_rows);
        expected.insert(expected.end(), chunk_rows.begin(), chunk_rows.end());
      }
    }
    const store::SampleWriteCounts counts = store::ResultStoreInternals::sample_write_counts(writer);
    EXPECT_EQ(counts.rows_direct, 5 * kChunk);
    EXPECT_EQ(counts.rows_written, 0u) << "the writer compressed rows itself";
    writer.close();
    plain.close();
  }
  const std::vector<SampleRow> read = all_samples(direct);
  ASSERT_EQ(read.size(), expected.size());
  for (std::size_t i = 0; i < read.size(); ++i) testing::expect_same(expected[i], read[i], counters);

  // The chunks' bytes are the ones HDF5's own filters store.
  {
    const store::Hdf5Errors errors("test");
    const hid_t file_a = H5Fopen(direct.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t file_b = H5Fopen(ordinary.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t set_a = H5Dopen2(file_a, "samples", H5P_DEFAULT);
    const hid_t set_b = H5Dopen2(file_b, "samples", H5P_DEFAULT);
    for (hsize_t offset = 0; offset < expected.size(); offset += kChunk) {
      hsize_t size_a = 0;
      hsize_t size_b = 0;
      ASSERT_GE(H5Dget_chunk_storage_size(set_a, &offset, &size_a), 0);
      ASSERT_GE(H5Dget_chunk_storage_size(set_b, &offset, &size_b), 0);
      std::vector<char> bytes_a(size_a);
      std::vector<char> bytes_b(size_b);
      std::uint32_t mask = 1;
      ASSERT_GE(H5Dread_chunk(set_a, H5P_DEFAULT, &offset, &mask, bytes_a.data()), 0);
      EXPECT_EQ(mask, 0u);
      ASSERT_GE(H5Dread_chunk(set_b, H5P_DEFAULT, &offset, &mask, bytes_b.data()), 0);
      EXPECT_TRUE(bytes_a == bytes_b) << "chunk at row " << offset;
    }
    H5Dclose(set_a);
    H5Dclose(set_b);
    H5Fclose(file_a);
    H5Fclose(file_b);
  }

  // Other readers: h5py's arrays and h5dump's text of both files agree.
  const std::string script = fmt::format(
      "import h5py, numpy, sys\n"
      "a = h5py.File(sys.argv[1], 'r')['samples'][:]\n"
      "b = h5py.File(sys.argv[2], 'r')['samples'][:]\n"
      "assert len(a) == {} and a.dtype == b.dtype and (a == b).all(), 'differ'\n"
      "assert [c.decode() for c in a['trial_id'][{}::{}]] == {}\n",
      expected.size(), kChunk - 1, kChunk,
      "['" + example_id(1) + "', '" + example_id(2) + "', '" + example_id(1) + "', '" + example_id(2) + "', '" +
          example_id(1) + "']");
  const auto script_path = dir.path() / "compare.py";
  std::ofstream(script_path) << script;
  EXPECT_EQ(shell(fmt::format("/usr/bin/python3 {} {} {}", script_path.string(), direct.string(), ordinary.string())),
            0);
  EXPECT_EQ(shell(fmt::format("h5dump -d /samples {} | tail -n +2 > {}/a.txt && h5dump -d /samples {} | tail -n +2 > "
                              "{}/b.txt && cmp -s {}/a.txt {}/b.txt",
                              direct.string(), dir.path().string(), ordinary.string(), dir.path().string(),
                              dir.path().string(), dir.path().string())),
            0);
}

INSTANTIATE_TEST_SUITE_P(CounterColumns, DirectChunks, ::testing::Values(0u, 3u, kMaxCounters));

// Each attempt's rows, in file order.
std::map<std::pair<std::string, int>, std::vector<SampleRow>> by_attempt(const std::vector<SampleRow>& rows) {
  std::map<std::pair<std::string, int>, std::vector<SampleRow>> series;
  for (const SampleRow& row : rows) series[{get_fixed(row.trial_id), row.attempt}].push_back(row);
  return series;
}

void expect_series(const std::vector<SampleRow>& read, const std::vector<SampleRow>& expected_a,
                   const std::vector<SampleRow>& expected_b, std::size_t counters) {
  auto series = by_attempt(read);
  ASSERT_EQ(series.size(), 2u);
  const std::vector<SampleRow>& a = series[{example_id(1), 0}];
  const std::vector<SampleRow>& b = series[{example_id(2), 1}];
  ASSERT_EQ(a.size(), expected_a.size());
  ASSERT_EQ(b.size(), expected_b.size());
  for (std::size_t i = 0; i < a.size(); ++i) testing::expect_same(expected_a[i], a[i], counters);
  for (std::size_t i = 0; i < b.size(); ++i) testing::expect_same(expected_b[i], b[i], counters);
}

TEST(DirectChunkMix, TwoWorkersChunksTailsAndWritesForAgeKeepEveryAttemptInOrder) {
  const testing::TempDir dir;
  const auto path = dir.path() / "mix.h5";
  const std::size_t counters = testing::kCounterColumns.size();
  const std::vector<SampleRow> a = rows_of(1, 0, 0, 5 * kChunk + 37, counters);
  const std::vector<SampleRow> b = rows_of(2, 1, 0, 4 * kChunk + 90, counters);
  store::StoreLayout layout = layout_with(kChunk);
  layout.samples_max_age = std::chrono::milliseconds(0);  // rows that wait are written at once: partial chunks
  auto writer = store::ResultStoreInternals::create(path, example_header(), false, StoreOptions{true}, layout);
  const SampleChunkFormat format = writer.sample_chunk_format();
  const auto chunk = [&](const std::vector<SampleRow>& rows, std::size_t k) {
    writer.append_compressed_samples(compress_sample_chunk(std::span(rows).subspan(k * kChunk, kChunk), format));
  };
  // Worker A: two chunks; worker B: one; B's first tail rows (a flush, not a
  // chunk) are written for their age, leaving a partial last chunk.
  chunk(a, 0);
  chunk(b, 0);
  chunk(a, 1);
  writer.append_samples(std::span(b).subspan(kChunk, 50));
  EXPECT_NE(store::ResultStoreInternals::sample_write_counts(writer).rows_written, 0u);
  // Now chunks arrive while the table ends inside a chunk.
  chunk(a, 2);
  chunk(a, 3);
  writer.append_samples(std::span(b).subspan(kChunk + 50, kChunk - 50));  // B's chunk 1 was sent as rows
  chunk(b, 2);
  chunk(b, 3);
  chunk(a, 4);
  writer.append_samples(std::span(a).subspan(5 * kChunk, 37));  // A's tail, with its trial row
  writer.append_trial(testing::example_trial(1));
  writer.append_samples(std::span(b).subspan(4 * kChunk, 90));
  writer.flush();

  // A SWMR reader in another process (h5py) sees every row once flushed.
  EXPECT_EQ(shell(fmt::format("/usr/bin/python3 -c \"import h5py, sys; f = h5py.File(sys.argv[1], 'r', swmr=True); "
                              "n = len(f['samples']); sys.exit(0 if n == {} else 1)\" {}",
                              a.size() + b.size(), path.string())),
            0);
  const store::SampleWriteCounts counts = store::ResultStoreInternals::sample_write_counts(writer);
  EXPECT_GT(counts.rows_direct, 0u);
  EXPECT_EQ(counts.rows_direct + counts.rows_written, a.size() + b.size());
  writer.close();
  expect_series(all_samples(path), a, b, counters);
}

TEST(DirectChunkMix, AResumedFileWithAPartialLastChunkInflatesOneChunkThenTakesChunksAsTheyAre) {
  const testing::TempDir dir;
  const auto path = dir.path() / "resumed.h5";
  const std::size_t counters = testing::kCounterColumns.size();
  const std::vector<SampleRow> a = rows_of(1, 0, 0, 70 + kChunk, counters);
  const std::vector<SampleRow> b = rows_of(2, 1, 0, 5 * kChunk, counters);
  {
    auto writer = store::ResultStoreInternals::create(path, example_header(), false, {}, layout_with(kChunk));
    writer.append_samples(std::span(a).first(70));  // closes with a partial chunk of 70 rows
  }
  {
    ResultStore writer = ResultStore::open_for_resume(path, testing::example_run("resume"), {});
    const SampleChunkFormat format = writer.sample_chunk_format();
    ASSERT_EQ(format.chunk_rows, kChunk) << "the file's own chunk";
    // A's chunk completes the partial one (inflated: 58 rows written, 70 wait).
    writer.append_compressed_samples(compress_sample_chunk(std::span(a).subspan(70, kChunk), format));
    EXPECT_EQ(store::ResultStoreInternals::sample_write_counts(writer).rows_inflated, kChunk);
    // B's chunks, at chunk boundaries again, go as they are, ahead of A's
    // waiting rows (another attempt's).
    for (std::size_t k = 0; k < 5; ++k)
      writer.append_compressed_samples(compress_sample_chunk(std::span(b).subspan(k * kChunk, kChunk), format));
    const store::SampleWriteCounts counts = store::ResultStoreInternals::sample_write_counts(writer);
    EXPECT_EQ(counts.rows_inflated, kChunk);
    EXPECT_EQ(counts.rows_direct, 5 * kChunk);
    writer.close();
  }
  expect_series(all_samples(path), a, b, counters);
}

}  // namespace
}  // namespace memsweep
