// The CIFAR-10 binary parser on bytes, and loading a cifar-10/ folder written
// by the test: record counts from file sizes, consecutive training batches,
// raw and gzip files, malformed batches.

#include "dataset/cifar.hpp"
#include "memsweep/dataset.hpp"
#include "support/dataset_files.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using dataset::detail::count_cifar_records;
using dataset::detail::make_cifar_split;
using testing::as_bytes;
using testing::cifar_records;
using ::testing::ElementsAre;
using testing::gzip;
using ::testing::HasSubstr;
using testing::TempDir;
using testing::test_pixel;
using testing::thrown_message;

constexpr std::size_t kRecordBytes = 3073;
constexpr std::size_t kPlane = 32 * 32;
constexpr ImageShape kCifarShape{3, 32, 32};

std::vector<std::uint8_t> to_vector(const std::string& text) {
  const auto bytes = as_bytes(text);
  return {bytes.begin(), bytes.end()};
}

TEST(CifarParse, CountsRecordsFromTheSize) {
  EXPECT_EQ(count_cifar_records(as_bytes(cifar_records({3, 1, 4})), "batch"), 3U);
}

TEST(CifarParse, KeepsTheRedGreenBluePlanesAsChw) {
  std::vector<dataset::detail::CifarBatchBytes> batches;
  batches.push_back({"first", to_vector(cifar_records({6, 9}))});
  batches.push_back({"second", to_vector(cifar_records({4}))});
  const Split split = make_cifar_split(std::move(batches));
  EXPECT_EQ(split.shape, kCifarShape);
  EXPECT_EQ(split.classes, 10);
  EXPECT_THAT(split.labels, ElementsAre(6, 9, 4));
  ASSERT_EQ(split.images.size(), 3U * 3 * kPlane);
  // Record r of a batch holds test_pixel(r, p) at pixel byte p, R plane first.
  const auto byte_at = [&](std::size_t row, std::size_t channel, std::size_t y, std::size_t x) {
    return std::lround(split.image(row)[channel * kPlane + y * 32 + x] * 255.0F);
  };
  EXPECT_EQ(byte_at(0, 0, 0, 0), test_pixel(0, 0));
  EXPECT_EQ(byte_at(1, 1, 2, 3), test_pixel(1, kPlane + 2 * 32 + 3));  // green
  EXPECT_EQ(byte_at(1, 2, 31, 31), test_pixel(1, 3 * kPlane - 1));     // last blue
  EXPECT_EQ(byte_at(2, 0, 0, 5), test_pixel(0, 5));                    // the second batch's records count from 0
}

struct MalformedBatch {
  std::string name;
  std::string bytes;
  std::vector<std::string> message_parts;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const MalformedBatch& test_case, std::ostream* out) { *out << test_case.name; }

const MalformedBatch kMalformed[] = {
    {"one_byte_too_many",
     cifar_records({1, 2}) + "x",
     {"6147 bytes is not a whole number of CIFAR-10 records", "3073 bytes each", "2 records, then 1 byte left over"}},
    {"cut_inside_a_record",
     cifar_records({1, 2, 3}).substr(0, 2 * kRecordBytes + 100),
     {"2 records, then 100 bytes left over"}},
    {"no_label_bytes", std::string(3072, '\0'), {"0 records, then 3072 bytes left over"}},
    {"empty", "", {"empty file"}},
    {"label_out_of_range", cifar_records({1, 10, 2}), {"record 1: label 10 is out of range, allowed 0..9"}},
    {"label_far_out_of_range", cifar_records({255}), {"record 0: label 255 is out of range"}},
};

class MalformedCifarBatch : public ::testing::TestWithParam<MalformedBatch> {};

TEST_P(MalformedCifarBatch, IsAnErrorNamingTheFileAndTheProblem) {
  const std::string source = "cifar/" + GetParam().name + ".bin";
  const std::string message =
      thrown_message<DatasetError>([&] { count_cifar_records(as_bytes(GetParam().bytes), source); });
  EXPECT_THAT(message, HasSubstr(source));
  for (const std::string& part : GetParam().message_parts) EXPECT_THAT(message, HasSubstr(part));
}

INSTANTIATE_TEST_SUITE_P(Cases, MalformedCifarBatch, ::testing::ValuesIn(kMalformed),
                         [](const auto& test_case) { return test_case.param.name; });

// ---- loading a folder ---------------------------------------------------------

const DatasetSpec kCifarSpec{DatasetKind::cifar10, {}};

TEST(CifarLoad, LoadsConsecutiveBatchesAndSaysWhichAndHowMany) {
  const TempDir dir;
  dir.write("cifar-10/data_batch_1.bin.gz", gzip(cifar_records({6, 9, 9})));
  dir.write("cifar-10/data_batch_2.bin", cifar_records({4, 1}));
  dir.write("cifar-10/test_batch.bin.gz", gzip(cifar_records({3, 8})));
  dir.write("cifar-10/batches.meta.txt", "airplane\n");
  const Dataset dataset = load_dataset(kCifarSpec, {dir.path()});
  EXPECT_EQ(dataset.name, "cifar-10");
  EXPECT_THAT(dataset.train.labels, ElementsAre(6, 9, 9, 4, 1));
  EXPECT_THAT(dataset.test.labels, ElementsAre(3, 8));
  EXPECT_EQ(dataset.train.images.size(), 5U * 3 * kPlane);
  const auto folder = dir.path() / "cifar-10";
  EXPECT_THAT(dataset.files,
              ElementsAre(folder / "data_batch_1.bin.gz", folder / "data_batch_2.bin", folder / "test_batch.bin.gz"));
  ASSERT_FALSE(dataset.notes.empty());
  EXPECT_THAT(dataset.notes[0], HasSubstr("2 of 5 training batches (data_batch_1.bin.gz, data_batch_2.bin)"));
  EXPECT_THAT(dataset.notes, ::testing::Contains(HasSubstr("data_batch_1.bin.gz holds 3 records")));
  // Pixels of the second batch's first record land at train row 3.
  EXPECT_EQ(std::lround(dataset.train.image(3)[kPlane] * 255.0F), test_pixel(0, kPlane));
}

TEST(CifarLoad, AcceptsTheOfficialTarballsFolderName) {
  const TempDir dir;
  dir.write("cifar-10-batches-bin/data_batch_1.bin", cifar_records({1}));
  dir.write("cifar-10-batches-bin/test_batch.bin", cifar_records({2}));
  const Dataset dataset = load_dataset(kCifarSpec, {dir.path()});
  EXPECT_THAT(dataset.files, ElementsAre(dir.path() / "cifar-10-batches-bin/data_batch_1.bin",
                                         dir.path() / "cifar-10-batches-bin/test_batch.bin"));
  EXPECT_THAT(dataset.notes[0], HasSubstr("1 of 5 training batches"));
}

TEST(CifarLoad, APreferredRawFileWinsOverItsGzipTwin) {
  const TempDir dir;
  dir.write("cifar-10/data_batch_1.bin", cifar_records({1, 2}));
  dir.write("cifar-10/data_batch_1.bin.gz", gzip(cifar_records({3})));
  dir.write("cifar-10/test_batch.bin", cifar_records({2}));
  EXPECT_THAT(load_dataset(kCifarSpec, {dir.path()}).train.labels, ElementsAre(1, 2));
}

TEST(CifarLoad, AGapInTheTrainingBatchesIsAnError) {
  const TempDir dir;
  for (const char* name : {"data_batch_1.bin", "data_batch_2.bin", "data_batch_4.bin.gz", "test_batch.bin"})
    dir.write(std::string("cifar-10/") + name, cifar_records({1}));
  const std::string message = thrown_message<DatasetError>([&] { load_dataset(kCifarSpec, {dir.path()}); });
  EXPECT_THAT(message, HasSubstr((dir.path() / "cifar-10").string()));
  EXPECT_THAT(message, HasSubstr("consecutive"));
  EXPECT_THAT(message, HasSubstr("found data_batch_4.bin.gz but not data_batch_3.bin[.gz]"));
}

TEST(CifarLoad, TheFirstTrainingBatchIsRequired) {
  const TempDir dir;
  dir.write("cifar-10/data_batch_2.bin", cifar_records({1}));
  dir.write("cifar-10/test_batch.bin", cifar_records({1}));
  const std::string message = thrown_message<DatasetNotFoundError>([&] { load_dataset(kCifarSpec, {dir.path()}); });
  EXPECT_THAT(message, HasSubstr((dir.path() / "cifar-10").string() + ": missing data_batch_1.bin[.gz]"));
  EXPECT_THAT(message, HasSubstr("data_batch_1.bin or data_batch_1.bin.gz"));
  EXPECT_THAT(message, HasSubstr("test_batch.bin or test_batch.bin.gz"));
}

TEST(CifarLoad, AMalformedBatchIsNamedByItsPath) {
  const TempDir dir;
  dir.write("cifar-10/data_batch_1.bin", cifar_records({1}));
  const auto test_batch = dir.write("cifar-10/test_batch.bin.gz", gzip(cifar_records({1}) + "zz"));
  const std::string message = thrown_message<DatasetError>([&] { load_dataset(kCifarSpec, {dir.path()}); });
  EXPECT_THAT(message, HasSubstr(test_batch.string()));
  EXPECT_THAT(message, HasSubstr("1 record, then 2 bytes left over"));
}

TEST(CifarLoad, StandardisesEachChannelSeparately) {
  const TempDir dir;
  // Blue planes nearly constant (200 + record), so the channels' statistics differ.
  std::string train = cifar_records({1, 2, 3, 4});
  for (std::size_t record = 0; record < 4; ++record)
    for (std::size_t i = 0; i < kPlane; ++i)
      train[record * kRecordBytes + 1 + 2 * kPlane + i] = static_cast<char>(200 + record);
  dir.write("cifar-10/data_batch_1.bin", train);
  dir.write("cifar-10/test_batch.bin", cifar_records({1}));
  const Dataset plain = load_dataset(kCifarSpec, {dir.path()});
  const Dataset standard = load_dataset(kCifarSpec, {dir.path()}, {.standardize = true});
  ASSERT_EQ(standard.channel_mean.size(), 3U);
  EXPECT_NEAR(standard.channel_mean[2], 201.5 / 255.0, 1e-6);
  EXPECT_NEAR(standard.channel_stddev[2], std::sqrt(1.25) / 255.0, 1e-6);  // values 200..203
  for (std::size_t channel = 0; channel < 3; ++channel) {
    double sum = 0.0;
    double squares = 0.0;
    for (std::size_t row = 0; row < standard.train.size(); ++row) {
      for (const float value : standard.train.image(row).subspan(channel * kPlane, kPlane)) {
        sum += value;
        squares += static_cast<double>(value) * value;
      }
    }
    const double count = static_cast<double>(standard.train.size() * kPlane);
    EXPECT_NEAR(sum / count, 0.0, 1e-4) << channel;
    EXPECT_NEAR(squares / count, 1.0, 1e-3) << channel;
  }
  // The test split's blue plane is scaled with the train split's blue statistics.
  const std::size_t blue = 2 * kPlane + 17;
  EXPECT_NEAR(standard.test.images[blue],
              (plain.test.images[blue] - standard.channel_mean[2]) / standard.channel_stddev[2], 1e-3);
}

}  // namespace
}  // namespace memsweep
