// The results file is never lost or clobbered: an existing file is refused
// (and left byte for byte as it was) unless replaced on purpose; a writer
// killed without closing leaves a file that reopens with every flushed row;
// files that are not ours, or damaged, give a StoreError naming the file,
// without HDF5's error stack on stderr.

#include "memsweep/store.hpp"
#include "store/file_access.hpp"
#include "store/hdf5_handles.hpp"
#include "store/result_store_internals.hpp"
#include "store/store_fixtures.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <ostream>
#include <thread>

namespace memsweep {
namespace {

using testing::ChildProcess;
using testing::example_epoch;
using testing::example_header;
using testing::example_run;
using testing::example_samples;
using testing::example_trial;
using testing::expect_same;
using ::testing::HasSubstr;
using testing::read_bytes;
using testing::store_error;

// Everything a reader can read, the way `memsweep summary` would.
void read_everything(const std::filesystem::path& path) {
  const ResultReader reader(path);
  (void)reader.runs();
  (void)reader.trials();
  (void)reader.epochs();
  (void)reader.samples(0, reader.sample_count());
  (void)reader.scan_series();
}

void write_store(const std::filesystem::path& path, int trials, std::size_t samples_per_trial) {
  ResultStore store = ResultStore::create(path, example_header(), false, {});
  for (int i = 0; i < trials; ++i) {
    store.append_samples(example_samples(testing::example_id(i), 0, samples_per_trial));
    store.append_trial(example_trial(i));
  }
  store.close();
}

std::vector<std::filesystem::path> files_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().filename());
  return files;
}

// ---- refusing to overwrite, and replacing on purpose -------------------------

TEST(StoreCreate, RefusesAnExistingResultsFileAndLeavesItAsItWas) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 3, 100);
  const std::string before = read_bytes(path);

  const std::string message = store_error([&] { ResultStore::create(path, example_header(), false, {}); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("--resume"));
  EXPECT_THAT(message, HasSubstr("--force"));
  EXPECT_TRUE(read_bytes(path) == before);
  EXPECT_THAT(files_in(dir.path()), ::testing::ElementsAre("results.h5"));
}

TEST(StoreCreate, RefusalIsAStoreExistsErrorForAnyExistingFile) {
  const testing::TempDir dir;
  const auto path = dir.write("notes.txt", "not results, but precious");
  EXPECT_THROW(ResultStore::create(path, example_header(), false, {}), StoreExistsError);
  EXPECT_EQ(read_bytes(path), "not results, but precious");
}

TEST(StoreCreate, ReplaceWritesANewFileOverTheOld) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 3, 100);
  FileHeader header = example_header();
  header.sweep_name = "the new one";
  {
    ResultStore store = ResultStore::create(path, header, true, {});
    store.append_trial(example_trial(7));
  }
  const ResultReader reader(path);
  EXPECT_EQ(reader.header().sweep_name, "the new one");
  ASSERT_EQ(reader.trials().size(), 1u);
  expect_same(example_trial(7), reader.trials()[0]);
  EXPECT_EQ(reader.sample_count(), 0u);
  EXPECT_THAT(files_in(dir.path()), ::testing::ElementsAre("results.h5"));
}

TEST(StoreCreate, AFailedReplacementKeepsTheOldFile) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 2, 10);
  const std::string before = read_bytes(path);
  FileHeader bad = example_header();
  bad.counter_columns = {"t"};  // clashes with the time column: fails after the new file was started
  EXPECT_THROW(ResultStore::create(path, bad, true, {}), StoreError);
  EXPECT_TRUE(read_bytes(path) == before);
  EXPECT_THAT(files_in(dir.path()), ::testing::ElementsAre("results.h5"));
}

TEST(StoreCreate, AMissingFolderIsAStoreErrorNamingTheFile) {
  const testing::TempDir dir;
  const auto path = dir.path() / "no-such-folder" / "results.h5";
  const std::string message = store_error([&] { ResultStore::create(path, example_header(), false, {}); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("No such file or directory"));
}

// ---- a writer killed without closing ----------------------------------------

class KilledWriter : public ::testing::TestWithParam<bool> {};

TEST_P(KilledWriter, ReopensWithEveryFlushedRow) {
  const bool swmr = GetParam();
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  constexpr int kTrials = 4;
  constexpr std::size_t kSamples = 512;  // 4 x 512 + 1024: whole chunks of /samples (512 rows here)
  {
    ChildProcess writer([&](const ChildProcess::Channel& parent) {
      store::StoreLayout layout;
      layout.samples.chunk_rows = 512;
      ResultStore store =
          store::ResultStoreInternals::create(path, example_header(), false, StoreOptions{swmr}, layout);
      for (int i = 0; i < kTrials; ++i) {
        store.append_samples(example_samples(testing::example_id(i), 0, kSamples));
        store.append_epoch(example_epoch(i));
        store.append_trial(example_trial(i));
      }
      // A trial whose rank is about to die: samples, no row.
      store.append_samples(example_samples(testing::example_id(9), 0, 1024, 50'000'000));
      // Rows that do not fill a chunk wait in the writer, and die with it.
      store.append_samples(example_samples(testing::example_id(8), 0, 100));
      store.flush();
      parent.send('f');
      parent.receive();  // killed while waiting here
    });
    ASSERT_EQ(writer.receive(), 'f');
    writer.kill_hard();
  }

  // The scenario is real: HDF5 refuses the file as it was left.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t plain = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_LT(plain, 0) << "the killed writer's status flag was not set";
  if (plain >= 0) H5Fclose(plain);

  // A reader can look at it without changing it.
  const std::string before = read_bytes(path);
  {
    const ResultReader reader(path);
    EXPECT_EQ(reader.trials().size(), static_cast<std::size_t>(kTrials));
    EXPECT_EQ(reader.epochs().size(), static_cast<std::size_t>(kTrials));
    EXPECT_EQ(reader.sample_count(), kTrials * kSamples + 1024);
  }
  EXPECT_TRUE(read_bytes(path) == before);

  {
    ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), StoreOptions{swmr});
    EXPECT_EQ(store.run_index(), 1);
    const std::vector<TrialRow> trials = store.read_trials();
    ASSERT_EQ(trials.size(), static_cast<std::size_t>(kTrials));
    for (int i = 0; i < kTrials; ++i) expect_same(example_trial(i), trials[static_cast<std::size_t>(i)]);
    const std::vector<SeriesSummary> series = store.scan_series();
    ASSERT_EQ(series.size(), static_cast<std::size_t>(kTrials + 1));
    EXPECT_EQ(series.back().trial_id, testing::example_id(9));
    EXPECT_EQ(series.back().samples, 1024u);
    EXPECT_EQ(series.back().peak_rss, 50'000'000 + 4096 * 1023);
    store.append_trial(example_trial(kTrials));
  }
  // Closed properly now: the flag is clear for every HDF5 program.
  const hid_t reopened = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  EXPECT_GE(reopened, 0);
  if (reopened >= 0) H5Fclose(reopened);
  EXPECT_EQ(ResultReader(path).trials().size(), static_cast<std::size_t>(kTrials + 1));
}

// Killed at an arbitrary moment of a steady stream of appends and flushes:
// what reopens is a prefix of what was appended, every row intact. (A
// partial chunk of /samples written again moves; without SWMR, HDF5 used to
// put the new copy where the old one was, over the bytes that the flushed
// index points at, and a kill before the next flush left "inflate() failed":
// about 1 run in 80 under load. The test below looks at those bytes.)
TEST_P(KilledWriter, WhileAppendingLeavesAnIntactPrefix) {
  const bool swmr = GetParam();
  for (const int milliseconds : {150, 400, 900}) {
    const testing::TempDir dir;
    const auto path = dir.path() / "results.h5";
    {
      ChildProcess writer([&](const ChildProcess::Channel& parent) {
        ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{swmr});
        parent.send('s');
        std::vector<SampleRow> rows = example_samples(testing::example_id(0), 0, 256);
        for (std::int64_t message = 0;; ++message) {
          for (std::size_t i = 0; i < rows.size(); ++i)
            rows[i].counters[0] = message * 256 + static_cast<std::int64_t>(i);  // the row's own number
          store.append_samples(rows);
          if (message % 20 == 19) {
            store.append_epoch(example_epoch(static_cast<int>(message / 20)));
            store.append_trial(example_trial(static_cast<int>(message / 20)));
          }
        }
      });
      ASSERT_EQ(writer.receive(), 's');
      std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
      writer.kill_hard();
    }
    SCOPED_TRACE(::testing::Message() << "killed after " << milliseconds << " ms");
    ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), StoreOptions{swmr});
    const std::vector<TrialRow> trials = store.read_trials();
    for (std::size_t i = 0; i < trials.size(); ++i) expect_same(example_trial(static_cast<int>(i)), trials[i]);
    store.close();
    const ResultReader reader(path);
    const std::vector<SampleRow> samples = reader.samples(0, reader.sample_count());
    for (std::size_t i = 0; i < samples.size(); ++i) {
      ASSERT_EQ(samples[i].counters[0], static_cast<std::int64_t>(i)) << "row " << i;
    }
    // An epoch's row can reach the file before its trial's row, not after.
    EXPECT_GE(reader.epochs().size(), trials.size());
    EXPECT_LE(reader.epochs().size(), trials.size() + 1);
  }
}

// Where a chunk's last flushed copy lies in a snapshot of the file.
struct ChunkPlace {
  haddr_t address = HADDR_UNDEF;
  hsize_t size = 0;
};

ChunkPlace place_of_samples_chunk(const std::filesystem::path& snapshot, hsize_t first_row) {
  const store::Hdf5Errors errors(snapshot);
  const store::FileHandle file = store::open_file_to_inspect(snapshot, errors);
  const store::DatasetHandle samples(H5Dopen2(file.get(), "/samples", H5P_DEFAULT));
  ChunkPlace place;
  unsigned filter_mask = 0;
  EXPECT_GE(H5Dget_chunk_info_by_coord(samples.get(), &first_row, &filter_mask, &place.address, &place.size), 0);
  return place;
}

// What the kill test above catches by chance, deterministically: a partial
// chunk written again (its trial's row came, then more rows) leaves the
// copy that the last flush's index points at as it was, so that a writer
// killed before the next flush leaves those rows readable.
TEST_P(KilledWriter, APartialChunkWrittenAgainLeavesItsFlushedCopyAsItWas) {
  const bool swmr = GetParam();
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  const auto snapshot = dir.path() / "as-flushed.h5";
  store::StoreLayout layout;
  layout.samples.chunk_rows = 256;
  ResultStore store = store::ResultStoreInternals::create(path, example_header(), false, StoreOptions{swmr}, layout);
  std::size_t rows = 0;
  ChunkPlace last;  // of the partial chunk that the last flush left
  std::string last_bytes;
  // 100 rows a trial: chunk 0 written with 100 rows, again with 200 and with
  // 256; chunk 1 with 44, again with 144, 244.
  for (int trial = 0; trial < 6; ++trial) {
    store.append_samples(example_samples(testing::example_id(trial), 0, 100));
    store.append_trial(example_trial(trial));  // writes the partial chunk, flushes
    rows += 100;
    const std::string file = read_bytes(path);
    if (trial > 0) {
      SCOPED_TRACE(::testing::Message() << "the copy flushed before trial " << trial << "'s rows");
      ASSERT_LE(last.address + last.size, file.size());
      EXPECT_TRUE(file.substr(last.address, last.size) == last_bytes);
    }
    std::ofstream(snapshot, std::ios::binary) << file;
    last = place_of_samples_chunk(snapshot, rows / 256 * 256);
    ASSERT_NE(last.address, HADDR_UNDEF);
    last_bytes = file.substr(last.address, last.size);
  }
  store.close();
  EXPECT_EQ(ResultReader(path).sample_count(), rows);
}

INSTANTIATE_TEST_SUITE_P(SwmrAndNot, KilledWriter, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& case_info) {
                           return case_info.param ? "Swmr" : "NoSwmr";
                         });

// ---- one writer at a time -----------------------------------------------------

class LiveWriter : public ::testing::TestWithParam<bool> {};

TEST_P(LiveWriter, ASecondWriterOrAReplacementIsRefusedAndTheFileKept) {
  const bool swmr = GetParam();
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  ChildProcess writer([&](const ChildProcess::Channel& parent) {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{swmr});
    store.append_trial(example_trial(0));
    parent.send('r');
    parent.receive();
    store.append_trial(example_trial(1));
    store.close();
  });
  ASSERT_EQ(writer.receive(), 'r');
  for (const bool resume_swmr : {true, false}) {
    const std::string message =
        store_error([&] { ResultStore::open_for_resume(path, example_run("second"), StoreOptions{resume_swmr}); });
    EXPECT_THAT(message, HasSubstr(path.string()));
    EXPECT_THAT(message, HasSubstr("is writing this file"));
  }
  // Nor does --force replace a file that a live run is writing.
  const std::string replace_message =
      store_error([&] { ResultStore::create(path, example_header(), true, StoreOptions{swmr}); });
  EXPECT_THAT(replace_message, HasSubstr(path.string()));
  EXPECT_THAT(replace_message, HasSubstr("is writing this file"));
  writer.send('c');
  EXPECT_EQ(writer.wait(), 0);
  const ResultReader reader(path);
  EXPECT_EQ(reader.runs().size(), 1u);
  EXPECT_EQ(reader.trials().size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(SwmrAndNot, LiveWriter, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& case_info) {
                           return case_info.param ? "Swmr" : "NoSwmr";
                         });

// ---- a resume's file held between the decision and the writing ---------------

// What a resume decides from is read while nothing is written; the lock is
// held from then on (no second writer can come between), and a hold given
// up leaves the file byte for byte as it was.
TEST(HeldForResume, ReadsTheRunsHoldsTheLockAndWritesNothingUntilResumed) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 2, 50);
  const std::string before = read_bytes(path);
  {
    const ResultStore::HeldForResume held = ResultStore::hold_for_resume(path, StoreOptions{true});
    ASSERT_EQ(held.runs().size(), 1u);
    EXPECT_EQ(held.header().sweep_name, example_header().sweep_name);
    EXPECT_THAT(store_error([&] { ResultStore::open_for_resume(path, example_run("second"), StoreOptions{true}); }),
                HasSubstr("is writing this file"));
  }
  EXPECT_TRUE(read_bytes(path) == before) << "a hold given up changed the file";

  ResultStore::HeldForResume held = ResultStore::hold_for_resume(path, StoreOptions{true});
  ResultStore store = std::move(held).resume(example_run("resume"));
  EXPECT_EQ(store.run_index(), 1);
  store.close();
  const ResultReader reader(path);
  ASSERT_EQ(reader.runs().size(), 2u);
  EXPECT_EQ(get_fixed(reader.runs()[1].command_line), get_fixed(example_run("resume").command_line));
  EXPECT_EQ(reader.trials().size(), 2u);
}

// ---- files that are not memsweep's, or damaged -------------------------------

// Both ways in: a reader, and a resume.
// `unchanged`: refused before anything was written. Damage inside a table
// is found only when the table is read, after a resume opened the file for
// writing.
void expect_refused(const std::filesystem::path& path, const std::string& what, bool unchanged = true) {
  const std::string before = read_bytes(path);
  ::testing::internal::CaptureStderr();
  const std::string read_message = store_error([&] { read_everything(path); });
  const std::string resume_message = store_error([&] {
    ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), {});
    (void)store.read_trials();
    (void)store.scan_series();
  });
  const std::string printed = ::testing::internal::GetCapturedStderr();
  for (const std::string& message : {read_message, resume_message}) {
    EXPECT_THAT(message, HasSubstr(path.string()));
    EXPECT_THAT(message, HasSubstr(what));
  }
  EXPECT_EQ(printed, "") << "HDF5 printed its error stack";
  if (unchanged) {
    EXPECT_TRUE(read_bytes(path) == before) << "a refused file was changed";
  }
}

TEST(StoreOpen, AReaderStillOpenInThisProcessIsNamedAsTheReason) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 1, 10);
  const ResultReader reader(path);
  const std::string message = store_error([&] { ResultStore::open_for_resume(path, example_run("resume"), {}); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("this process already has the file open"));
}

TEST(StoreOpen, MissingFile) {
  const testing::TempDir dir;
  const auto path = dir.path() / "absent.h5";
  EXPECT_THAT(store_error([&] { ResultReader reader(path); }), HasSubstr("no such file"));
  EXPECT_THAT(store_error([&] { ResultStore::open_for_resume(path, {}, {}); }), HasSubstr("no such file"));
}

TEST(StoreOpen, NotAnHdf5File) {
  const testing::TempDir dir;
  expect_refused(dir.write("results.h5", "[sweep]\nname = \"a sweep file, not results\"\n"), "not an HDF5 file");
  expect_refused(dir.write("empty.h5", ""), "not an HDF5 file");
}

TEST(StoreOpen, AnHdf5FileThatIsNotMemsweeps) {
  const testing::TempDir dir;
  const auto path = dir.path() / "other.h5";
  {
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    const hsize_t size = 4;
    const hid_t space = H5Screate_simple(1, &size, nullptr);
    const hid_t dataset = H5Dcreate2(file, "trials", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int values[4] = {1, 2, 3, 4};
    H5Dwrite(dataset, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
    H5Dclose(dataset);
    H5Sclose(space);
    H5Fclose(file);
  }
  expect_refused(path, "not a memsweep results file (no format attribute)");
}

TEST(StoreOpen, AnHdf5FileWrittenByH5py) {
  const testing::TempDir dir;
  const auto path = dir.path() / "h5py.h5";
  const std::string command = "/usr/bin/python3 -c \"import h5py, numpy; f = h5py.File('" + path.string() +
                              "', 'w'); f.attrs['format'] = 'netcdf'; f['samples'] = numpy.arange(10)\" 2>/dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0)
      << "h5py could not write a file with /usr/bin/python3: install python3-h5py (ci/install-deps.sh does)";
  expect_refused(path, "not a memsweep results file (its format attribute is \"netcdf\")");
}

// Rewrites one root attribute of a closed results file, as another version
// of memsweep (or a user) might have.
void set_root_attribute(const std::filesystem::path& path, const char* name, hid_t type, const void* value) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Adelete(file, name);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(attribute, 0);
  EXPECT_GE(H5Awrite(attribute, type, value), 0);
  H5Aclose(attribute);
  H5Sclose(space);
  H5Fclose(file);
}

TEST(StoreOpen, ASchemaVersionNewerOrOlderThanTheOnesRead) {
  // Readable versions (1 to 4) and resume's refusal of older ones:
  // test_schema_versions.cpp.
  for (const int version : {kSchemaVersion + 1, kOldestReadableSchemaVersion - 1}) {
    const testing::TempDir dir;
    const auto path = dir.path() / "results.h5";
    write_store(path, 1, 10);
    set_root_attribute(path, "schema_version", H5T_NATIVE_INT, &version);
    expect_refused(path,
                   fmt::format("schema version {}, this memsweep reads versions 1 to {}", version, kSchemaVersion));
  }
}

TEST(StoreOpen, AnotherFormatName) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 1, 10);
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, 8);
  set_root_attribute(path, "format", type, "memswep\0");
  H5Tclose(type);
  expect_refused(path, "not a memsweep results file (its format attribute is \"memswep\")");
}

TEST(StoreOpen, AFileWithoutAPartAttributeHoldsTheWholeSweep) {
  // Files written before sweeps could be split have no `part`: they read,
  // and resume, as the whole sweep.
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 1, 10);
  EXPECT_EQ(ResultReader(path).header().part, "dataset=fashion-mnist");
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(file, 0);
    EXPECT_GE(H5Adelete(file, "part"), 0);
    H5Fclose(file);
  }
  EXPECT_EQ(ResultReader(path).header().part, "");
  ResultStore store = ResultStore::open_for_resume(path, example_run("resume"), {});
  EXPECT_EQ(store.header().part, "");
  EXPECT_EQ(store.read_trials().size(), 1u);
}

TEST(StoreOpen, AMissingTable) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 1, 10);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  H5Ldelete(file, "epochs", H5P_DEFAULT);
  H5Fclose(file);
  expect_refused(path, "table /epochs is missing");
}

TEST(StoreOpen, ATruncatedFile) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 20, 2000);
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  expect_refused(path, "truncated");
}

struct Damage {
  const char* name;
  double from;  // fraction of the file
  double to;
};

void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

class DamagedFile : public ::testing::TestWithParam<Damage> {};

TEST_P(DamagedFile, GivesAStoreErrorNamingTheFile) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_store(path, 20, 2000);
  const auto size = static_cast<double>(std::filesystem::file_size(path));
  const auto from = static_cast<std::streamoff>(size * GetParam().from);
  const auto to = static_cast<std::streamoff>(size * GetParam().to);
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(from);
    std::uint32_t noise = 12345;
    for (std::streamoff i = from; i < to; ++i) {
      noise = noise * 1664525U + 1013904223U;
      file.put(static_cast<char>(noise >> 24));
    }
  }
  expect_refused(path, path.string(), false);
}

INSTANTIATE_TEST_SUITE_P(Places, DamagedFile,
                         ::testing::Values(Damage{"Superblock", 0.0, 0.002}, Damage{"MiddleThird", 1.0 / 3, 2.0 / 3},
                                           Damage{"SecondHalf", 0.5, 1.0}),
                         [](const ::testing::TestParamInfo<Damage>& case_info) { return case_info.param.name; });

TEST(StoreErrors, AFullDiskIsSaidInOneLineWithWhatToDo) {
  // What HDF5's file driver reports when a write fails (several lines).
  const std::string hdf5 =
      "file write failed: time = Sat Nov 21 09:38:26 2026\n, filename = '/tmp/full/.fill.h5.1-0.tmp', file "
      "descriptor = 19, errno = 28, error message = 'No space left on device', buf = 0x55f3b62ff6a6, total write "
      "size = 9195, bytes this sub-write = 9195, bytes actually written = 18446744073709551615, offset = 0";
  const std::string said = store::readable_cause(hdf5);
  EXPECT_EQ(said.find('\n'), std::string::npos);
  EXPECT_THAT(said, HasSubstr("No space left on device (errno 28)"));
  EXPECT_THAT(said, HasSubstr("--resume"));
  EXPECT_THAT(store::readable_cause("bad symbol table\nnode"), ::testing::Eq("bad symbol table node"));
}

}  // namespace
}  // namespace memsweep
