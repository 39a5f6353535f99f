// Schema versions: this memsweep writes version 10 and reads 1 to 10, by
// column name (a column a file's version lacks reads as its "not measured"
// value, a table it lacks as empty); it resumes only version 10, and leaves an
// older file as it was; versions it does not know are refused.

#include "memsweep/store.hpp"
#include "store/attributes.hpp"
#include "store/hdf5_handles.hpp"
#include "store/schema.hpp"
#include "store/store_fixtures.hpp"
#include "store/table.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <functional>

namespace memsweep {
namespace {

using ::testing::ElementsAre;
using testing::example_epoch;
using testing::example_header;
using testing::example_run;
using testing::example_samples;
using testing::example_search;
using testing::example_trial;
using testing::expect_same;
using ::testing::HasSubstr;
using testing::kCounterColumns;
using testing::read_bytes;
using testing::store_error;

constexpr int kTrials = 3;
constexpr std::size_t kSamples = 300;

// A file of the current version with every table filled.
void write_file(const std::filesystem::path& path) {
  ResultStore store = ResultStore::create(path, example_header(), false, {});
  store.append_samples(example_samples(testing::example_id(0), 0, kSamples));
  for (int i = 0; i < kTrials; ++i) {
    store.append_epoch(example_epoch(i));
    store.append_trial(example_trial(i));
  }
  store.append_search(example_search(0));
  store.close();
}

// A text attribute of a table, as the file holds it; `missing` where it has none.
std::string table_attribute(const std::filesystem::path& path, const char* table, const std::string& name,
                            const std::string& missing) {
  const store::Hdf5Errors errors(path);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, table, H5P_DEFAULT);
  const std::string value = store::read_string_attribute(dataset, name, errors).value_or(missing);
  H5Dclose(dataset);
  H5Fclose(file);
  return value;
}

// The unit attribute of one column of a table.
std::string unit_of(const std::filesystem::path& path, const char* table, const std::string& column) {
  return table_attribute(path, table, store::kUnitPrefix + column, "(none)");
}

// The label attribute of one column of a table; empty where it has none.
std::string label_of(const std::filesystem::path& path, const char* table, const std::string& column) {
  return table_attribute(path, table, store::kLabelPrefix + column, "");
}

// A numeric attribute of a table, as a double (HDF5 converts); nullopt where it has none.
std::optional<double> table_number(const std::filesystem::path& path, const char* table, const std::string& name) {
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, table, H5P_DEFAULT);
  std::optional<double> value;
  if (H5Aexists(dataset, name.c_str()) > 0) {
    const hid_t attribute = H5Aopen(dataset, name.c_str(), H5P_DEFAULT);
    double read = 0.0;
    EXPECT_GE(H5Aread(attribute, H5T_NATIVE_DOUBLE, &read), 0) << name;
    value = read;
    H5Aclose(attribute);
  }
  H5Dclose(dataset);
  H5Fclose(file);
  return value;
}

// A text-list attribute of the file's root group.
std::vector<std::string> root_strings(const std::filesystem::path& path, const std::string& name) {
  const store::Hdf5Errors errors(path);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  std::vector<std::string> values =
      store::read_strings_attribute(file, name, errors).value_or(std::vector<std::string>{});
  H5Fclose(file);
  return values;
}

TEST(CurrentSchemaVersion, WritesHowEachTrialProcessEndedAndWhatTrainedItWithUnits) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_file(path);

  {
    const ResultReader reader(path);
    EXPECT_EQ(reader.header().schema_version, kSchemaVersion);
    const std::vector<TrialRow> trials = reader.trials();
    ASSERT_EQ(trials.size(), static_cast<std::size_t>(kTrials));
    for (int i = 0; i < kTrials; ++i) expect_same(example_trial(i), trials[static_cast<std::size_t>(i)]);
    const TrialRow& last = trials.back();
    EXPECT_EQ(last.pid, 31337 + 2);
    EXPECT_EQ(last.end_signal, 9);
    EXPECT_EQ(last.oom_killed, 1);
    EXPECT_EQ(get_fixed(last.end_cause), "oom");
    EXPECT_EQ(get_fixed(last.isolation), "cgroup2");
    EXPECT_EQ(last.start_seconds, 0.0625);
    EXPECT_EQ(last.cgroup_peak, 200'000'002);
    EXPECT_EQ(get_fixed(last.trainer), "memsweep");
    EXPECT_EQ(get_fixed(last.params), R"({"dropout":0.2,"note":"é"})");
    EXPECT_EQ(last.processes, 3);
    EXPECT_EQ(last.process_peak_max, 170'000'002);
    EXPECT_EQ(get_fixed(trials[1].trainer), "pytorch");
    // Schema 5: the plan's numbering and the samples' phases.
    EXPECT_EQ(trials[1].plan_index, 41);
    const std::vector<SampleRow> samples = reader.samples(0, kSamples);
    ASSERT_EQ(samples.size(), kSamples);
    EXPECT_EQ(samples[0].phase, 0);
    EXPECT_EQ(samples[1].phase, 1);
    EXPECT_EQ(samples[5].phase, 2);
    // Schema 6: searches, and the trials' place in them.
    EXPECT_EQ(trials[1].search, 6);
    EXPECT_EQ(trials[1].axis_value, 129);
    EXPECT_EQ(trials[1].reported_oom, 1);
    const std::vector<SearchRow> searches = reader.searches();
    ASSERT_EQ(searches.size(), 1u);
    expect_same(example_search(0), searches[0]);
    // Schema 7: GPU memory.
    EXPECT_EQ(trials[1].gpu_peak, 3'000'000'001);
    EXPECT_EQ(get_fixed(trials[1].gpu_devices), "0,3");
    EXPECT_EQ(get_fixed(trials[1].gpu_peak_source), "tree");
    EXPECT_EQ(trials[1].torch_reserved_peak, 2'500'000'000);
    EXPECT_EQ(samples[5].gpu_used, 40'000'000'005);
    EXPECT_EQ(samples[5].gpu_tree_used, 30'000'000'000);
    // Schema 10: what the analysis reads instead of working it out.
    EXPECT_EQ(trials[1].parameters, 123'457);
    EXPECT_EQ(trials[1].estimate_parts[*estimate_part_slot(estimate_part::kParameters)], 493'825);
    EXPECT_EQ(trials[1].estimate_parts[*estimate_part_slot(estimate_part::kStepArena)], -1);
  }
  const std::vector<std::pair<std::string, std::string>> units{
      {"pid", "1"},
      {"end_signal", "1"},
      {"oom_killed", "1"},
      {"end_cause", "text"},
      {"isolation", "text"},
      {"start_seconds", "s"},
      {"cgroup_peak", "bytes"},
      // Schema 4: programs as trials.
      {"trainer", "text"},
      {"params", "text"},
      {"processes", "1"},
      {"rss_peak_hwm_sum", "bytes"},
      {"process_peak_max", "bytes"},
      {"bad_event_lines", "1"},
      // Schema 5: the plan's numbering.
      {"plan_index", "1"},
      // Schema 6: searches.
      {"search", "1"},
      {"probe", "1"},
      {"axis_value", "1"},
      {"search_limit", "bytes"},
      {"full_run", "1"},
      {"reported_oom", "1"},
      // Schema 7: GPU memory.
      {"gpu_peak", "bytes"},
      {"gpu_devices", "text"},
      {"gpu_peak_source", "text"},
      {"torch_allocated_peak", "bytes"},
      {"torch_reserved_peak", "bytes"},
  };
  for (const auto& [column, unit] : units) EXPECT_EQ(unit_of(path, "trials", column), unit) << column;
  // Each estimate part's column is in bytes, and labelled with the part's own name.
  for (const EstimatePartColumn& part : kEstimatePartColumns) {
    EXPECT_EQ(unit_of(path, "trials", std::string(part.column)), "bytes") << part.column;
    EXPECT_EQ(label_of(path, "trials", std::string(part.column)), part.part) << part.column;
  }
  EXPECT_EQ(label_of(path, "trials", "parameters"), "") << "a column whose name says it has no label";
  EXPECT_THAT(root_strings(path, "final_statuses"), ElementsAre("ok", "failed", "diverged", "over_budget", "timeout"));
  EXPECT_EQ(unit_of(path, "samples", "phase"), "1");
  EXPECT_EQ(unit_of(path, "samples", "gpu_used"), "bytes");
  EXPECT_EQ(unit_of(path, "samples", "gpu_tree_used"), "bytes");
  // Schema 5: messages whole.
  for (const char* column : {"attempt", "run", "piece"}) EXPECT_EQ(unit_of(path, "messages", column), "1") << column;
  EXPECT_EQ(unit_of(path, "messages", "text"), "text");
  // Schema 6: /searches.
  const std::vector<std::pair<std::string, std::string>> search_units{
      {"search", "1"},      {"limit", "bytes"},    {"fits", "1"},
      {"fit_a_mib", "MiB"}, {"seconds", "s"},      {"fit_b_mib", "MiB per unit of the axis"},
      {"axis", "text"},     {"does_not_fit", "1"}, {"range_low", "1"},
  };
  for (const auto& [column, unit] : search_units) EXPECT_EQ(unit_of(path, "searches", column), unit) << column;
}

// Schema 12: each column says which version added it, and each figure
// whose -1 means "not measured" says so, so that a reader needs no table of
// its own; and /trials records the examples each trial trained on.
TEST(CurrentSchemaVersion, EachColumnSaysWhenItCameAndWhatNotMeasuredIs) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, {});
    store.append_trial(example_trial(0), {});
    store.close();
  }
  EXPECT_EQ(ResultReader(path).trials().at(0).train_examples, example_trial(0).train_examples);
  EXPECT_EQ(table_number(path, "trials", "since:trial_id"), 1);
  EXPECT_EQ(table_number(path, "trials", "since:pid"), 3);
  EXPECT_EQ(table_number(path, "trials", "since:gpu_peak"), 7);
  EXPECT_EQ(table_number(path, "trials", "since:estimate_step_arena"), 10);
  EXPECT_EQ(table_number(path, "trials", "since:train_examples"), 12);
  EXPECT_EQ(unit_of(path, "trials", "train_examples"), "1");
  EXPECT_EQ(table_number(path, "samples", "since:sys_total"), 2);
  EXPECT_EQ(table_number(path, "runs", "since:trial_process_cost"), 9);
  EXPECT_EQ(table_number(path, "samples", std::string("since:") + example_header().counter_columns.at(0)), 1);
  for (const char* figure : {"rss_peak", "test_accuracy", "start_seconds", "cgroup_peak", "parameters",
                             "estimate_onednn_scratchpad", "train_examples"})
    EXPECT_EQ(table_number(path, "trials", std::string("missing:") + figure), -1) << figure;
  // -1 there is a value: no search, no process; and a count is never missing.
  for (const char* value : {"attempt", "search", "pid", "epochs_done", "status"})
    EXPECT_EQ(table_number(path, "trials", std::string("missing:") + value), std::nullopt) << value;
  EXPECT_EQ(table_number(path, "samples", "missing:rss"), -1);
  EXPECT_EQ(table_number(path, "samples", std::string("missing:") + example_header().counter_columns.at(0)), -1);
  EXPECT_EQ(table_number(path, "epochs", "missing:sys_used"), -1);
  EXPECT_EQ(table_number(path, "searches", "missing:fits"), std::nullopt);
}

TEST(CurrentSchemaVersion, SearchesAreReadByTheWriterAndAResume) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, {});
    EXPECT_TRUE(store.read_searches().empty());
    store.append_search(example_search(0, "below_range"));
    ASSERT_EQ(store.read_searches().size(), 1u);
    expect_same(example_search(0, "below_range"), store.read_searches()[0]);
    store.close();
  }
  ResultStore resumed = ResultStore::open_for_resume(path, example_run("memsweep run --resume"), {});
  resumed.append_search(example_search(1, "stopped"));
  const std::vector<SearchRow> searches = resumed.read_searches();
  ASSERT_EQ(searches.size(), 2u);
  expect_same(example_search(0, "below_range"), searches[0]);
  expect_same(example_search(1, "stopped"), searches[1]);
  resumed.close();
  EXPECT_EQ(ResultReader(path).searches().size(), 2u);
}

TEST(CurrentSchemaVersion, AHeaderAskingForAnotherVersionIsWrittenAsTheCurrentOne) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  FileHeader header = example_header();
  header.schema_version = 2;  // the tables are the current version's whatever the caller says
  ResultStore::create(path, header, false, {}).close();
  EXPECT_EQ(ResultReader(path).header().schema_version, kSchemaVersion);
}

// ---- files of older versions ---------------------------------------------------

class OlderVersion : public ::testing::TestWithParam<int> {
 protected:
  int version() const { return GetParam(); }
  // The file: written, then turned into one of version(). Checked to be so.
  std::filesystem::path older_file() {
    const auto path = dir_.path() / fmt::format("v{}.h5", version());
    write_file(path);
    testing::rewrite_as_schema_version(path, version());
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t trials = H5Dopen2(file, "trials", H5P_DEFAULT);
    const hid_t samples = H5Dopen2(file, "samples", H5P_DEFAULT);
    const hid_t trial_type = H5Dget_type(trials);
    const hid_t sample_type = H5Dget_type(samples);
    EXPECT_EQ(H5Tget_member_index(trial_type, "pid") >= 0, version() >= 3);
    EXPECT_EQ(H5Tget_member_index(trial_type, "cgroup_peak") >= 0, version() >= 3);
    EXPECT_EQ(H5Tget_member_index(trial_type, "trainer") >= 0, version() >= 4);
    EXPECT_EQ(H5Tget_member_index(trial_type, "plan_index") >= 0, version() >= 5);
    EXPECT_EQ(H5Tget_member_index(sample_type, "phase") >= 0, version() >= 5);
    EXPECT_EQ(H5Lexists(file, "messages", H5P_DEFAULT) > 0, version() >= 5);
    EXPECT_EQ(H5Tget_member_index(trial_type, "search") >= 0, version() >= 6);
    EXPECT_EQ(H5Lexists(file, "searches", H5P_DEFAULT) > 0, version() >= 6);
    EXPECT_EQ(H5Tget_member_index(trial_type, "gpu_peak") >= 0, version() >= 7);
    EXPECT_EQ(H5Tget_member_index(trial_type, "torch_reserved_peak") >= 0, version() >= 7);
    EXPECT_EQ(H5Tget_member_index(sample_type, "gpu_used") >= 0, version() >= 7);
    EXPECT_EQ(H5Tget_member_index(trial_type, "memory_plan") >= 0, version() >= 8);
    EXPECT_EQ(H5Tget_member_index(trial_type, "recompute_every") >= 0, version() >= 8);
    EXPECT_EQ(H5Tget_member_index(trial_type, "parameters") >= 0, version() >= 10);
    EXPECT_EQ(H5Tget_member_index(trial_type, "estimate_onednn_scratchpad") >= 0, version() >= 10);
    EXPECT_EQ(H5Aexists(file, "final_statuses") > 0, version() >= 10);
    EXPECT_EQ(H5Lexists(file, "metrics", H5P_DEFAULT) > 0, version() >= 11);
    // Schema 12's: /trials' train_examples, and each column's since: and missing: attributes.
    EXPECT_LT(H5Tget_member_index(trial_type, "train_examples"), 0);
    EXPECT_EQ(H5Aexists(trials, "since:pid"), 0);
    EXPECT_EQ(H5Aexists(samples, "missing:rss"), 0);
    EXPECT_EQ(H5Tget_member_index(sample_type, "sys_total") >= 0, version() >= 2);
    H5Tclose(sample_type);
    H5Tclose(trial_type);
    H5Dclose(samples);
    H5Dclose(trials);
    H5Fclose(file);
    return path;
  }
  testing::TempDir dir_;
};

// What an old file's trial row reads as: its own columns, and "not
// measured" for those added after its version.
TrialRow as_read_from_an_older_file(TrialRow row, int version) {
  row.train_examples = -1;  // schema 12's: every older file lacks it
  if (version >= 10) return row;
  row.parameters = -1;
  row.estimate_parts = kNoEstimateParts;
  if (version >= 8) return row;
  // Every trial before schema 8 kept its buffers for the trial's life.
  set_fixed(row.memory_plan, "keep");
  row.recompute_every = 0;
  if (version >= 7) return row;
  row = testing::without_gpu_memory(row);
  if (version >= 6) return row;
  row.search = -1;
  row.probe = -1;
  row.axis_value = -1;
  row.search_limit = -1;
  row.full_run = -1;
  row.reported_oom = 0;
  if (version >= 5) return row;
  row.plan_index = -1;
  if (version >= 4) return row;
  set_fixed(row.trainer, "");
  set_fixed(row.params, "");
  row.processes = -1;
  row.rss_peak_hwm_sum = -1;
  row.process_peak_max = -1;
  row.bad_event_lines = 0;
  if (version >= 3) return row;
  row.pid = -1;
  row.end_signal = 0;
  row.oom_killed = 0;
  set_fixed(row.end_cause, "");
  set_fixed(row.isolation, "");
  row.start_seconds = -1.0;
  row.cgroup_peak = -1;
  return row;
}

TEST_P(OlderVersion, ReadsItsColumnsAndDefaultsForTheNewOnes) {
  const auto path = older_file();
  const std::string before = read_bytes(path);
  {
    const ResultReader reader(path);
    FileHeader expected_header = example_header();
    expected_header.schema_version = version();
    expect_same(expected_header, reader.header());

    const std::vector<TrialRow> trials = reader.trials();
    ASSERT_EQ(trials.size(), static_cast<std::size_t>(kTrials));
    for (int i = 0; i < kTrials; ++i)
      expect_same(as_read_from_an_older_file(example_trial(i), version()), trials[static_cast<std::size_t>(i)]);
    // In blocks too, as watch reads them.
    ASSERT_EQ(reader.trials(1, 5).size(), 2u);
    expect_same(as_read_from_an_older_file(example_trial(2), version()), reader.trials(1, 5)[1]);

    std::vector<SampleRow> expected_samples = example_samples(testing::example_id(0), 0, kSamples);
    if (version() < 7)
      for (SampleRow& row : expected_samples) row.gpu_used = row.gpu_tree_used = -1;  // schema 7's: not measured
    if (version() < 5)
      for (SampleRow& row : expected_samples) row.phase = -1;  // schema 5's: unknown
    if (version() < 2)
      for (SampleRow& row : expected_samples) row.sys_total = -1;  // not in version 1
    ASSERT_EQ(reader.sample_count(), kSamples);
    const std::vector<SampleRow> samples = reader.samples(0, kSamples);
    for (std::size_t i = 0; i < kSamples; ++i) expect_same(expected_samples[i], samples[i], kCounterColumns.size());
    EXPECT_EQ(samples[7].sys_total, version() >= 2 ? 16'000'000'000 : -1);
    EXPECT_EQ(samples[7].phase, version() >= 5 ? 1 : -1);
    EXPECT_EQ(trials[1].plan_index, version() >= 5 ? 41 : -1);
    if (version() < 7) {
      EXPECT_EQ(trials[1].gpu_peak, -1);
      EXPECT_EQ(samples[7].gpu_used, -1);
    }
    EXPECT_EQ(get_fixed(trials[0].memory_plan), version() >= 8 ? "recompute" : "keep");
    EXPECT_EQ(trials[0].recompute_every, version() >= 8 ? 3 : 0);
    if (version() < 10) {
      EXPECT_EQ(trials[1].parameters, -1);
      EXPECT_EQ(trials[1].estimate_parts[*estimate_part_slot(estimate_part::kScratchpad)], -1);
    }
    // Before schema 11, no /metrics: no program metrics to read (and none written in this file's).
    EXPECT_TRUE(reader.metrics().empty());
    EXPECT_EQ(trials[1].train_examples, -1);  // schema 12's
    if (version() < 6) {
      EXPECT_EQ(trials[1].search, -1);
      EXPECT_EQ(trials[1].reported_oom, 0);
      // No /searches: none to read.
      EXPECT_TRUE(reader.searches().empty());
    } else {
      // Before schema 8 every search kept its buffers: the plan reads keep.
      const std::vector<SearchRow> searches = reader.searches();
      ASSERT_EQ(searches.size(), 1u);
      SearchRow expected = example_search(0);
      if (version() < 8) {
        set_fixed(expected.memory_plan, "keep");
        expected.recompute_every = 0;
      }
      expect_same(expected, searches[0]);
    }

    ASSERT_EQ(reader.epochs().size(), static_cast<std::size_t>(kTrials));
    expect_same(example_epoch(1), reader.epochs()[1]);
    // Before schema 5, no /messages: a row's message is its own message column.
    const TrialMessages messages = reader.messages();
    EXPECT_EQ(messages.empty(), version() < 5);
    EXPECT_EQ(whole_message(trials[1], messages), get_fixed(example_trial(1).message));
    ASSERT_EQ(reader.runs().size(), 1u);
    EXPECT_EQ(get_fixed(reader.runs()[0].command_line), example_header().command_line);
    const std::vector<SeriesSummary> series = reader.scan_series();
    ASSERT_EQ(series.size(), 1u);
    EXPECT_EQ(series[0].samples, kSamples);
    EXPECT_EQ(series[0].peak_rss, 1'000'000 + 4096 * static_cast<std::int64_t>(kSamples - 1));
  }
  EXPECT_TRUE(read_bytes(path) == before) << "a reader changed the file";
}

TEST_P(OlderVersion, ResumeIsRefusedBeforeAnythingIsWritten) {
  const auto path = older_file();
  const std::string before = read_bytes(path);
  for (const bool swmr : {true, false}) {
    bool accept_called = false;
    const std::string message = store_error([&] {
      ResultStore::open_for_resume(path, example_run("memsweep run --resume"), StoreOptions{swmr},
                                   [&](const FileHeader&) { accept_called = true; });
    });
    EXPECT_THAT(message, HasSubstr(path.string()));
    EXPECT_THAT(message, HasSubstr(fmt::format("schema version {}", version())));
    EXPECT_THAT(message, HasSubstr(fmt::format("this memsweep writes version {}", kSchemaVersion)));
    EXPECT_THAT(message, HasSubstr(fmt::format("resume it with a memsweep that writes version {} (memsweep 0.1.0 "
                                               "wrote it)",
                                               version())));
    EXPECT_THAT(message, HasSubstr("or write to a new file"));
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line";
    EXPECT_FALSE(accept_called) << "refused only after the caller's own checks";
  }
  EXPECT_TRUE(read_bytes(path) == before) << "a refused file was changed";
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()), std::filesystem::directory_iterator{}), 1)
      << "something was left beside the file";
  // Still readable, as it was.
  EXPECT_EQ(ResultReader(path).trials().size(), static_cast<std::size_t>(kTrials));
}

TEST_P(OlderVersion, ATableReadsTheDefaultsWhateverTheBufferHeld) {
  // The rows a table reads do not depend on what the caller's buffer held
  // before (HDF5 keeps the bytes of columns outside the row type as they
  // were): a reused buffer must not show the previous rows' values.
  const auto path = older_file();
  const store::Hdf5Errors errors(path);
  const store::FileHandle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  ASSERT_TRUE(file.valid());
  const store::Table trials = store::Table::open(file.get(), store::trials_schema(), version(), errors);
  std::vector<TrialRow> rows(trials.rows(), example_trial(7));  // every field set, pid 31344 among them
  trials.read(0, rows.size(), rows.data());
  for (int i = 0; i < kTrials; ++i)
    expect_same(as_read_from_an_older_file(example_trial(i), version()), rows[static_cast<std::size_t>(i)]);
}

INSTANTIATE_TEST_SUITE_P(Versions1To11, OlderVersion, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11),
                         [](const ::testing::TestParamInfo<int>& case_info) {
                           return fmt::format("Version{}", case_info.param);
                         });

TEST(SchemaVersion, AVersion3FileWithoutAVersion3ColumnIsDamaged) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_file(path);
  testing::rewrite_as_schema_version(path, 2);  // drops the version 3 columns...
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attribute = H5Aopen(file, "schema_version", H5P_DEFAULT);
    const std::int32_t three = 3;  // ...but still says version 3
    EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT32, &three), 0);
    H5Aclose(attribute);
    H5Fclose(file);
  }
  const std::string message = store_error([&] { ResultReader reader(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("damaged memsweep results file: table /trials has no column pid"));
}

TEST(SchemaVersion, AVersion5FileWithoutMessagesIsDamaged) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_file(path);
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    EXPECT_GE(H5Ldelete(file, "messages", H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  const std::string message = store_error([&] { ResultReader reader(path); });
  EXPECT_THAT(message, HasSubstr(path.string()));
  EXPECT_THAT(message, HasSubstr("damaged memsweep results file: table /messages is missing"));
}

TEST(SchemaVersion, AVersion6FileWithoutSearchesIsDamaged) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_file(path);
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    EXPECT_GE(H5Ldelete(file, "searches", H5P_DEFAULT), 0);
    H5Fclose(file);
  }
  EXPECT_THAT(store_error([&] { ResultReader reader(path); }),
              HasSubstr("damaged memsweep results file: table /searches is missing"));
}

TEST(SchemaVersion, AVersion2FileWithoutSysTotalIsDamaged) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  write_file(path);
  testing::rewrite_as_schema_version(path, 1);
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hid_t attribute = H5Aopen(file, "schema_version", H5P_DEFAULT);
    const std::int32_t two = 2;
    EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT32, &two), 0);
    H5Aclose(attribute);
    H5Fclose(file);
  }
  EXPECT_THAT(store_error([&] { ResultReader reader(path); }), HasSubstr("table /samples has no column sys_total"));
}

#ifdef MEMSWEEP_SOURCE_DIR
TEST(SchemaVersion, AVersion2FileTheOldMemsweepWroteReads) {
  // Written by memsweep at schema 2 (kept in the fuzz corpus): the real
  // layout, not one rebuilt by the test.
  const std::filesystem::path path =
      std::filesystem::path(MEMSWEEP_SOURCE_DIR) / "tests/fuzz/corpus/fuzz_results_file/one-trial-swmr.h5";
  const std::string before = read_bytes(path);
  ASSERT_FALSE(before.empty()) << path;
  {
    const ResultReader reader(path);
    EXPECT_EQ(reader.header().schema_version, 2);
    // Its counters came from PAPI, and it says nothing of their sources.
    EXPECT_FALSE(reader.header().counter_columns.empty());
    EXPECT_TRUE(reader.header().counter_sources.empty());
    EXPECT_TRUE(reader.header().counter_encodings.empty());
    const std::vector<TrialRow> trials = reader.trials();
    ASSERT_EQ(trials.size(), 1u);
    EXPECT_EQ(get_fixed(trials[0].status), "ok");
    EXPECT_GT(trials[0].rss_peak, 0);
    expect_same(as_read_from_an_older_file(trials[0], 2), trials[0]);
    const std::vector<SampleRow> samples = reader.samples(0, reader.sample_count());
    ASSERT_FALSE(samples.empty());
    EXPECT_GT(samples[0].sys_total, 0);
    EXPECT_GT(samples[0].rss, 0);
  }
  EXPECT_TRUE(read_bytes(path) == before);
}
#endif

}  // namespace
}  // namespace memsweep
