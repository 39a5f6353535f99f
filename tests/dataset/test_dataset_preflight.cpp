// The dataset check before a sweep: which datasets the trials need, what a
// folder of files reports (counts and shape from headers and sizes), and
// every way a file can be missing or malformed, with the line that says so.

#include "memsweep/dataset_preflight.hpp"
#include "support/dataset_files.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using State = DatasetReport::State;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

enum class Reader { memsweep, program_with_data_dir, program_with_label };

TrialSpec trial_on(DatasetKind kind, Reader reader = Reader::memsweep) {
  TrialSpec trial;
  trial.dataset.kind = kind;
  if (reader != Reader::memsweep) {
    trial.program = ProgramSpec{};
    trial.program->name = "script";
    trial.program->command = {"/bin/true"};
    trial.program->place = "sweep.toml:3: trial[0].program";
    trial.program->uses_data_dir = reader == Reader::program_with_data_dir;
  }
  return trial;
}

TEST(DatasetsNeeded, EachRealDatasetOnceInFirstUseOrderProgramsWithDataDirIncluded) {
  const std::vector<TrialSpec> trials{trial_on(DatasetKind::synthetic),
                                      trial_on(DatasetKind::cifar10, Reader::program_with_data_dir),
                                      trial_on(DatasetKind::mnist), trial_on(DatasetKind::cifar10)};
  EXPECT_THAT(datasets_needed(trials), ElementsAre(DatasetKind::cifar10, DatasetKind::mnist));
  EXPECT_TRUE(datasets_needed({trial_on(DatasetKind::synthetic)}).empty());
}

TEST(DatasetsNeeded, AProgramsDatasetIsALabelUnlessItUsesDataDir) {
  EXPECT_TRUE(datasets_needed({trial_on(DatasetKind::mnist, Reader::program_with_label)}).empty());
  EXPECT_FALSE(reads_dataset_files(trial_on(DatasetKind::mnist, Reader::program_with_label)));
  EXPECT_TRUE(reads_dataset_files(trial_on(DatasetKind::mnist, Reader::program_with_data_dir)));
  EXPECT_FALSE(reads_dataset_files(trial_on(DatasetKind::synthetic, Reader::program_with_data_dir)));
  EXPECT_TRUE(reads_dataset_files(trial_on(DatasetKind::mnist)));
}

TEST(CheckDatasets, AMissingDatasetAProgramReadsNamesTheProgramsPlace) {
  const TempDir empty;
  const std::vector<DatasetReport> reports =
      check_datasets({trial_on(DatasetKind::mnist, Reader::program_with_data_dir)}, {empty.path()});
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_FALSE(reports[0].found());
  EXPECT_THAT(reports[0].problem,
              HasSubstr("needed by sweep.toml:3: trial[0].program (its command, env or workdir uses {data_dir})"));
  EXPECT_THAT(check_datasets({trial_on(DatasetKind::mnist)}, {empty.path()})[0].problem, Not(HasSubstr("needed by")))
      << "memsweep's own trainer always reads its dataset";
}

TEST(CheckDataset, RawIdxFilesReportTheirCountsShapeAndFiles) {
  const TempDir data;
  testing::write_tiny_datasets(data.path());
  testing::write_dataset_file(data.path() / "mnist" / "t10k-images-idx3-ubyte", testing::idx_images(3, 28, 28));
  testing::write_dataset_file(data.path() / "mnist" / "t10k-labels-idx1-ubyte", testing::idx_labels({0, 1, 2}));
  const DatasetReport report = check_dataset(DatasetKind::mnist, {data.path()});
  ASSERT_EQ(report.state, State::found) << report.problem;
  EXPECT_EQ(report.folder, data.path() / "mnist");
  EXPECT_EQ(report.train_records, 2U);
  EXPECT_EQ(report.test_records, 3U);
  EXPECT_EQ(report.shape, (ImageShape{1, 28, 28}));
  EXPECT_EQ(report.files.size(), 4U);
  EXPECT_EQ(report_line(report), "mnist: found in " + (data.path() / "mnist").string() + ": 2 train, 3 test, 1x28x28");
}

TEST(CheckDataset, GzipFilesAreCheckedFromTheirHeaders) {
  const TempDir data;
  const fs::path folder = data.path() / "fashion-mnist";
  testing::write_dataset_file(folder / "train-images-idx3-ubyte.gz", testing::gzip(testing::idx_images(5, 28, 28)));
  testing::write_dataset_file(folder / "train-labels-idx1-ubyte.gz",
                              testing::gzip(testing::idx_labels({0, 1, 2, 3, 4})));
  testing::write_dataset_file(folder / "t10k-images-idx3-ubyte.gz", testing::gzip(testing::idx_images(1, 28, 28)));
  testing::write_dataset_file(folder / "t10k-labels-idx1-ubyte.gz", testing::gzip(testing::idx_labels({9})));
  const DatasetReport report = check_dataset(DatasetKind::fashion_mnist, {data.path()});
  ASSERT_EQ(report.state, State::found) << report.problem;
  EXPECT_EQ(report.train_records, 5U);
  EXPECT_EQ(report.test_records, 1U);
}

TEST(CheckDataset, CifarBatchesAreCountedFromTheirSizesRawOrGzip) {
  const TempDir data;
  const fs::path folder = data.path() / "cifar-10";
  testing::write_dataset_file(folder / "data_batch_1.bin", testing::cifar_records({0, 1, 2}));
  testing::write_dataset_file(folder / "data_batch_2.bin.gz", testing::gzip(testing::cifar_records({3, 4})));
  testing::write_dataset_file(folder / "test_batch.bin.gz", testing::gzip(testing::cifar_records({5})));
  const DatasetReport report = check_dataset(DatasetKind::cifar10, {data.path()});
  ASSERT_EQ(report.state, State::found) << report.problem;
  EXPECT_EQ(report.train_records, 5U);
  EXPECT_EQ(report.test_records, 1U);
  EXPECT_EQ(report.shape, (ImageShape{3, 32, 32}));
  EXPECT_EQ(report.files.size(), 3U);
}

TEST(CheckDataset, MissingNamesEveryFolderLookedInAndWhatEachLacked) {
  const TempDir first;
  const TempDir second;
  fs::create_directories(second.path() / "mnist");
  testing::write_dataset_file(second.path() / "mnist" / "train-images-idx3-ubyte", testing::idx_images(1, 28, 28));
  const DatasetReport report = check_dataset(DatasetKind::mnist, {first.path(), second.path()});
  EXPECT_EQ(report.state, State::missing);
  EXPECT_EQ(report.problem,
            "not found: needs train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, "
            "t10k-labels-idx1-ubyte (each raw or .gz) in one folder; looked in " +
                (first.path() / "mnist").string() + ": no such folder; " + (second.path() / "mnist").string() +
                ": missing train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], "
                "t10k-labels-idx1-ubyte[.gz]");
  EXPECT_THAT(report.problem, Not(HasSubstr("\n")));
}

struct Malformed {
  const char* name;
  DatasetKind kind;
  const char* file;  // replaced (or added) in the tiny dataset's folder
  std::string contents;
  const char* expected;  // the message after "FILE: ", or the whole of it when it starts with '*'
};

void PrintTo(const Malformed& test_case, std::ostream* out) { *out << test_case.name; }

class MalformedDataset : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedDataset, IsReportedOnOneLineNamingTheFile) {
  const Malformed& param = GetParam();
  const TempDir data;
  testing::write_tiny_datasets(data.path());
  const fs::path folder = data.path() / (param.kind == DatasetKind::cifar10 ? "cifar-10" : "mnist");
  const fs::path file = folder / param.file;
  testing::write_dataset_file(file, param.contents);
  const DatasetReport report = check_dataset(param.kind, {data.path()});
  EXPECT_EQ(report.state, State::malformed);
  const std::string expected = param.expected;
  if (expected.front() == '*')
    EXPECT_THAT(report.problem, HasSubstr(expected.substr(1)));
  else
    EXPECT_EQ(report.problem, file.string() + ": " + expected);
  EXPECT_THAT(report.problem, Not(HasSubstr("\n")));
  EXPECT_TRUE(report.files.empty());
}

std::string with_extra_byte(std::string contents) { return contents + '\0'; }

INSTANTIATE_TEST_SUITE_P(
    Files, MalformedDataset,
    ::testing::Values(
        Malformed{"idx_bad_magic", DatasetKind::mnist, "train-images-idx3-ubyte",
                  testing::idx_images(2, 28, 28, 0x12345678),
                  "wrong magic number for IDX images: expected 0x00000803, found 0x12345678"},
        Malformed{"idx_short_header", DatasetKind::mnist, "train-images-idx3-ubyte",
                  testing::idx_images(2, 28, 28).substr(0, 12),
                  "too short for an IDX images header: expected 16 bytes, found 12"},
        Malformed{"idx_wrong_image_size", DatasetKind::mnist, "t10k-images-idx3-ubyte", testing::idx_images(2, 27, 28),
                  "images are 27x28, expected 28x28"},
        Malformed{"idx_raw_data_cut_short", DatasetKind::mnist, "train-images-idx3-ubyte",
                  testing::idx_images(2, 28, 28).substr(0, 16 + 784 + 10),
                  "truncated: its header announces 2 images of 28x28 (1584 bytes in all), found 810 bytes"},
        Malformed{"idx_raw_bytes_after_the_data", DatasetKind::mnist, "train-labels-idx1-ubyte",
                  with_extra_byte(testing::idx_labels({0, 1})),
                  "its header announces 2 labels (10 bytes in all), found 11 bytes: 1 unexpected bytes after the "
                  "data"},
        Malformed{"idx_no_images", DatasetKind::mnist, "train-images-idx3-ubyte", testing::idx_images(0, 28, 28),
                  "*train-images-idx3-ubyte holds no images"},
        Malformed{"idx_counts_differ", DatasetKind::mnist, "t10k-labels-idx1-ubyte", testing::idx_labels({0, 1, 2}),
                  "*holds 3 labels: they must match one to one"},
        Malformed{"cifar_not_whole_records", DatasetKind::cifar10, "test_batch.bin",
                  testing::cifar_records({0, 1}).substr(0, 3073 + 100),
                  "3173 bytes is not a whole number of CIFAR-10 records (3073 bytes each: 1 label + 3072 pixels): 1 "
                  "record, then 100 bytes left over (truncated, or not a CIFAR-10 binary batch?)"},
        Malformed{"cifar_empty", DatasetKind::cifar10, "data_batch_1.bin", "", "empty file, expected CIFAR-10 records"},
        Malformed{"cifar_first_label_out_of_range", DatasetKind::cifar10, "data_batch_1.bin",
                  testing::cifar_records({10}), "record 0: label 10 is out of range, allowed 0..9"},
        Malformed{"cifar_batches_with_a_gap", DatasetKind::cifar10, "data_batch_3.bin", testing::cifar_records({1}),
                  "*CIFAR-10 training batches must be consecutive from data_batch_1.bin: found data_batch_3.bin but "
                  "not data_batch_2.bin[.gz]"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(RequireDatasets, PassesWhenEveryDatasetIsFoundAndListsEveryOneThatIsNot) {
  const TempDir data;
  testing::write_tiny_datasets(data.path());
  EXPECT_NO_THROW(
      require_datasets(check_datasets({trial_on(DatasetKind::mnist), trial_on(DatasetKind::cifar10)}, {data.path()})));
  fs::remove_all(data.path() / "mnist");
  testing::write_dataset_file(data.path() / "cifar-10" / "test_batch.bin", "x");
  const std::string message = testing::thrown_message<InputError>([&] {
    require_datasets(check_datasets(
        {trial_on(DatasetKind::mnist), trial_on(DatasetKind::fashion_mnist), trial_on(DatasetKind::cifar10)},
        {data.path()}));
  });
  std::vector<std::string> lines;
  for (std::size_t start = 0; start <= message.size();) {
    const std::size_t end = std::min(message.find('\n', start), message.size());
    lines.push_back(message.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 3U) << message;
  EXPECT_THAT(lines[0], ::testing::StartsWith("mnist: not found: "));
  EXPECT_THAT(lines[1], ::testing::StartsWith("cifar-10: " + (data.path() / "cifar-10" / "test_batch.bin").string()));
  EXPECT_EQ(lines[2],
            "Pass --data-dir DIR or set MEMSWEEP_DATA to a folder holding mnist/ (ci/fetch-datasets.sh "
            "DIR downloads the datasets).");
}

}  // namespace
}  // namespace memsweep
