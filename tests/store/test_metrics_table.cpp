// /metrics (schema 11): a program's own figures, written with the trial's
// rows, read back as written, their units and description in the file,
// appended to by a resume; absent from an older file.

#include "memsweep/store.hpp"
#include "store/attributes.hpp"
#include "store/hdf5_handles.hpp"
#include "store/schema.hpp"
#include "store/store_fixtures.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>

#include <string>
#include <vector>

namespace memsweep {
namespace {

using ::testing::HasSubstr;

MetricRow metric(int trial, int epoch, const char* name, double value) {
  MetricRow row;
  set_fixed(row.trial_id, testing::example_id(trial));
  row.attempt = 1;
  row.epoch = epoch;
  set_fixed(row.name, name);
  row.value = value;
  row.seconds = 0.25 * epoch;
  row.matches = epoch + 2;
  return row;
}

void expect_rows(const std::vector<MetricRow>& expected, const std::vector<MetricRow>& read) {
  ASSERT_EQ(read.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(get_fixed(read[i].trial_id), get_fixed(expected[i].trial_id)) << i;
    EXPECT_EQ(read[i].attempt, expected[i].attempt) << i;
    EXPECT_EQ(read[i].epoch, expected[i].epoch) << i;
    EXPECT_EQ(get_fixed(read[i].name), get_fixed(expected[i].name)) << i;
    EXPECT_EQ(read[i].value, expected[i].value) << i;
    EXPECT_EQ(read[i].seconds, expected[i].seconds) << i;
    EXPECT_EQ(read[i].matches, expected[i].matches) << i;
  }
}

std::string attribute_of_metrics(const std::filesystem::path& path, const std::string& name) {
  const store::Hdf5Errors errors(path);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(file, 0);
  const hid_t dataset = H5Dopen2(file, store::kMetricsTable, H5P_DEFAULT);
  const std::string value = store::read_string_attribute(dataset, name, errors).value_or("(none)");
  H5Dclose(dataset);
  H5Fclose(file);
  return value;
}

TEST(MetricsTable, ReadsBackWhatWasWrittenWithUnitsAndAResumeAppends) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  // A name of the full 32 bytes keeps them all.
  const std::vector<MetricRow> first{metric(0, 1, "valid_ppl", 250.03), metric(0, 2, "valid_ppl", 200.34),
                                     metric(0, 2, "a_metric_name_of_32_characters__", -1.5e-7)};
  {
    ResultStore store = ResultStore::create(path, testing::example_header(), false, {});
    for (const MetricRow& row : first) store.append_metric(row);
    store.append_trial(testing::example_trial(0));
    store.close();
  }
  expect_rows(first, ResultReader(path).metrics());
  EXPECT_EQ(attribute_of_metrics(path, "unit:value"), "1");
  EXPECT_EQ(attribute_of_metrics(path, "unit:seconds"), "s");
  EXPECT_THAT(attribute_of_metrics(path, "description"), HasSubstr("[programs] metrics patterns"));

  std::vector<MetricRow> all = first;
  {
    ResultStore resumed = ResultStore::open_for_resume(path, testing::example_run("memsweep run --resume"), {});
    all.push_back(metric(1, 0, "test_ppl", 190.57));
    resumed.append_metric(all.back());
    resumed.append_trial(testing::example_trial(1));
    resumed.close();
  }
  expect_rows(all, ResultReader(path).metrics());
}

TEST(MetricsTable, AnOlderFileHasNoneAndReadsAsNone) {
  const testing::TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, testing::example_header(), false, {});
    store.append_metric(metric(0, 1, "valid_ppl", 250.0));
    store.append_trial(testing::example_trial(0));
    store.close();
  }
  testing::rewrite_as_schema_version(path, 10);
  const ResultReader reader(path);
  EXPECT_EQ(reader.header().schema_version, 10);
  EXPECT_TRUE(reader.metrics().empty());
  EXPECT_EQ(reader.trials().size(), 1u);
}

}  // namespace
}  // namespace memsweep
