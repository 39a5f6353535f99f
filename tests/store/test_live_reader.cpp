// A reader follows a writer in another process: with SWMR it sees new rows
// after refresh(); a writer without SWMR locks the file, and the reader
// says so. Also: h5py alone reads what the store writes.

#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>

namespace memsweep {
namespace {

using testing::ChildProcess;
using testing::example_epoch;
using testing::example_header;
using testing::example_samples;
using testing::example_trial;
using testing::expect_same;
using ::testing::HasSubstr;
using testing::kCounterColumns;

TEST(LiveReader, SeesASwmrWritersNewRowsAfterRefresh) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{true});
    store.append_samples(example_samples(testing::example_id(0), 0, 1024));  // one whole chunk
    store.append_trial(example_trial(0));
    parent.send('1');
    parent.receive();
    store.append_samples(example_samples(testing::example_id(1), 0, 2048, 8'000'000));
    store.append_epoch(example_epoch(0));
    store.append_trial(example_trial(1));
    store.append_trial(example_trial(2));
    parent.send('2');
    parent.receive();
    store.close();
    parent.send('3');
  });
  ASSERT_EQ(writer.receive(), '1');
  ResultReader reader(path);
  EXPECT_EQ(reader.trials().size(), 1u);
  EXPECT_EQ(reader.sample_count(), 1024u);

  writer.send('n');
  ASSERT_EQ(writer.receive(), '2');
  EXPECT_EQ(reader.trials().size(), 1u) << "rows before refresh() should not move under the reader";
  reader.refresh();
  const std::vector<TrialRow> trials = reader.trials();
  ASSERT_EQ(trials.size(), 3u);
  expect_same(example_trial(2), trials[2]);
  ASSERT_EQ(reader.sample_count(), 3072u);
  expect_same(example_samples(testing::example_id(1), 0, 2048, 8'000'000)[2047], reader.samples(3071, 1).at(0),
              kCounterColumns.size());
  ASSERT_EQ(reader.epochs().size(), 1u);
  const std::vector<SeriesSummary> series = reader.scan_series();
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[1].samples, 2048u);

  writer.send('c');
  ASSERT_EQ(writer.receive(), '3');
  EXPECT_EQ(writer.wait(), 0);
  reader.refresh();
  EXPECT_EQ(reader.trials().size(), 3u);
}

TEST(LiveReader, AWriterWithoutSwmrLocksTheFileAndTheReaderSaysSo) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{false});
    store.append_trial(example_trial(0));
    parent.send('w');
    parent.receive();
    store.close();
  });
  ASSERT_EQ(writer.receive(), 'w');
  try {
    ResultReader reader(path);
    FAIL() << "read a file locked by its writer";
  } catch (const StoreError& error) {
    EXPECT_THAT(error.what(), HasSubstr(path.string()));
    EXPECT_THAT(error.what(), HasSubstr("without SWMR"));
  }
  writer.send('c');
  EXPECT_EQ(writer.wait(), 0);
  const ResultReader reader(path);
  EXPECT_EQ(reader.trials().size(), 1u);
  EXPECT_FALSE(reader.header().swmr);
}

// The file needs nothing but h5py: tables by name, units and root attributes.
TEST(ReadableByH5py, TablesUnitsAndAttributes) {
  ASSERT_EQ(std::system("/usr/bin/python3 -c 'import h5py' 2>/dev/null"), 0)
      << "no h5py at /usr/bin/python3: install python3-h5py (ci/install-deps.sh does)";
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, {});
    store.append_samples(example_samples(testing::example_id(0), 0, 10));
    store.append_trial(example_trial(0));
  }
  const auto script = dir.write("read.py", R"(import sys, h5py
f = h5py.File(sys.argv[1], 'r')
t = f['trials']
print(t['trial_id'][0].decode(), t['hidden'][0][2], t['rss_peak'][0], t['status'][0].decode())
print(t.attrs['unit:rss_peak'], t.attrs['unit:learning_rate'], t.attrs['unit:trial_id'], t.attrs['unit:start_time'])
s = f['samples']
print(len(s), s['perf::PAGE-FAULTS'][3], s.attrs['unit:perf::PAGE-FAULTS'], s.attrs['unit:t'])
print(f.attrs['format'], f.attrs['schema_version'], f.attrs['swmr'], list(f.attrs['counter_columns']))
print(f.attrs['hosts'][1], f.attrs['planned_trials'], len(f['runs']), len(f['epochs']))
)");
  const std::string command = "/usr/bin/python3 " + script.string() + " " + path.string();
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  ASSERT_NE(pipe, nullptr);
  std::string output;
  std::array<char, 512> buffer{};
  while (std::fgets(buffer.data(), static_cast<int>(buffer.size()), pipe.get()) != nullptr) output += buffer.data();
  EXPECT_EQ(output,
            "t00000000000 423 180000000 ok\n"
            "bytes 1 text s since 1970-01-01T00:00:00Z\n"
            "10 2003 events s\n"
            "memsweep " +
                std::to_string(kSchemaVersion) +
                " True ['PAPI_L1_DCM', 'perf::PAGE-FAULTS', 'PAPI_TLB_DM']\n"
                "node-b 1234567890123 1 0\n");
}

}  // namespace
}  // namespace memsweep
