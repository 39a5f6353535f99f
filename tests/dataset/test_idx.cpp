// The IDX parser on bytes, and MNIST / Fashion-MNIST loading from small files
// written by the test (raw and gzip), including every malformed case.

#include "dataset/idx.hpp"
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

using dataset::detail::make_idx_split;
using dataset::detail::parse_idx_images;
using dataset::detail::parse_idx_labels;
using testing::as_bytes;
using testing::gzip;
using ::testing::HasSubstr;
using testing::idx_images;
using testing::idx_labels;
using testing::TempDir;
using testing::test_pixel;
using testing::thrown_message;

constexpr int kClasses = 10;
constexpr ImageShape kMnistShape{1, 28, 28};

TEST(IdxParse, ReadsTheImageHeaderAndPixels) {
  const std::string file = idx_images(3, 2, 4);
  const auto images = parse_idx_images(as_bytes(file), "images");
  EXPECT_EQ(images.count, 3U);
  EXPECT_EQ(images.rows, 2U);
  EXPECT_EQ(images.columns, 4U);
  ASSERT_EQ(images.pixels.size(), 3U * 2 * 4);
  EXPECT_EQ(images.pixels[0], test_pixel(0, 0));
  EXPECT_EQ(images.pixels[2 * 8 + 5], test_pixel(2, 5));
}

TEST(IdxParse, ReadsLabels) {
  const std::string file = idx_labels({7, 0, 9, 3});
  EXPECT_EQ(parse_idx_labels(as_bytes(file), "labels", kClasses), (std::vector<std::int32_t>{7, 0, 9, 3}));
}

TEST(IdxParse, ScalesPixelsToTheUnitRangeExactly) {
  std::string file = idx_images(1, 1, 3);
  constexpr std::size_t kHeader = 16;
  file[kHeader] = 0;
  file[kHeader + 1] = static_cast<char>(128);
  file[kHeader + 2] = static_cast<char>(255);
  const auto split =
      make_idx_split(parse_idx_images(as_bytes(file), "images"), "images", {4}, "labels", {1, 1, 3}, kClasses);
  ASSERT_EQ(split.images.size(), 3U);
  EXPECT_EQ(split.images[0], 0.0F);
  EXPECT_FLOAT_EQ(split.images[1], 128.0F / 255.0F);
  EXPECT_EQ(split.images[2], 1.0F);
  EXPECT_EQ(split.labels, std::vector<std::int32_t>{4});
  EXPECT_EQ(split.classes, kClasses);
}

struct MalformedIdx {
  std::string name;
  bool is_label_file;
  std::string bytes;
  std::vector<std::string> message_parts;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const MalformedIdx& test_case, std::ostream* out) { *out << test_case.name; }

std::string without_last(std::string bytes, std::size_t count) {
  bytes.resize(bytes.size() - count);
  return bytes;
}

const MalformedIdx kMalformed[] = {
    {"images_with_label_magic",
     false,
     idx_images(2, 28, 28, 0x00000801),
     {"wrong magic number", "expected 0x00000803", "found 0x00000801", "label file"}},
    {"labels_with_image_magic",
     true,
     idx_labels({1, 2}, 0x00000803),
     {"wrong magic number", "expected 0x00000801", "found 0x00000803"}},
    // What the parser sees of a file that was gzipped twice: gzip data after one decompression.
    {"images_still_gzip_compressed", false, gzip(idx_images(1, 28, 28)), {"wrong magic number", "compressed twice"}},
    {"images_truncated",
     false,
     without_last(idx_images(3, 28, 28), 10),
     {"truncated", "expected 2368 bytes", "3 images of 28x28", "found 2358"}},
    {"images_with_trailing_bytes",
     false,
     idx_images(3, 28, 28) + "extra",
     {"expected 2368 bytes", "found 2373", "5 unexpected bytes"}},
    {"images_header_cut",
     false,
     idx_images(0, 28, 28).substr(0, 7),
     {"too short for an IDX images header", "expected 16 bytes, found 7"}},
    {"images_with_zero_rows", false, idx_images(2, 0, 28), {"implausible image size 0x28"}},
    {"labels_truncated",
     true,
     without_last(idx_labels({1, 2, 3, 4, 5}), 2),
     {"truncated", "expected 13 bytes", "5 labels", "found 11"}},
    {"labels_header_cut",
     true,
     std::string("\x00\x00\x08", 3),
     {"too short for an IDX labels header", "expected 8 bytes, found 3"}},
    {"label_out_of_range", true, idx_labels({1, 2, 10, 3}), {"index 2", "label 10 is out of range", "allowed 0..9"}},
};

class MalformedIdxFile : public ::testing::TestWithParam<MalformedIdx> {};

TEST_P(MalformedIdxFile, IsAnErrorNamingTheFileAndTheProblem) {
  const MalformedIdx& c = GetParam();
  const std::string source = "some/folder/" + c.name + ".idx";
  const std::string message = thrown_message<DatasetError>([&] {
    if (c.is_label_file)
      parse_idx_labels(as_bytes(c.bytes), source, kClasses);
    else
      parse_idx_images(as_bytes(c.bytes), source);
  });
  EXPECT_THAT(message, HasSubstr(source));
  for (const std::string& part : c.message_parts) EXPECT_THAT(message, HasSubstr(part));
}

INSTANTIATE_TEST_SUITE_P(Cases, MalformedIdxFile, ::testing::ValuesIn(kMalformed),
                         [](const auto& test_case) { return test_case.param.name; });

TEST(IdxSplit, ImageAndLabelCountsMustMatch) {
  const std::string images = idx_images(3, 28, 28);
  const std::string message = thrown_message<DatasetError>([&] {
    make_idx_split(parse_idx_images(as_bytes(images), "a/train-images"), "a/train-images", {1, 2}, "a/train-labels",
                   kMnistShape, kClasses);
  });
  EXPECT_THAT(message, HasSubstr("a/train-images holds 3 images"));
  EXPECT_THAT(message, HasSubstr("a/train-labels holds 2 labels"));
}

TEST(IdxSplit, ImagesMustHaveTheDatasetsShape) {
  const std::string images = idx_images(1, 32, 28);
  const std::string message = thrown_message<DatasetError>([&] {
    make_idx_split(parse_idx_images(as_bytes(images), "imgs"), "imgs", {1}, "labels", kMnistShape, kClasses);
  });
  EXPECT_THAT(message, HasSubstr("imgs: images are 32x28, expected 28x28"));
}

// ---- loading from a data folder ---------------------------------------------

struct IdxFolder {
  std::vector<std::uint8_t> train_labels{5, 0, 4};
  std::vector<std::uint8_t> test_labels{7, 2};
  bool gzipped = true;
};

// Writes the four files under dir/subfolder; gzipped or raw.
void write_idx_folder(const TempDir& dir, std::string_view subfolder, const IdxFolder& folder) {
  const auto write = [&](std::string_view name, const std::string& raw) {
    const std::string path = std::string(subfolder) + "/" + std::string(name);
    if (folder.gzipped)
      dir.write(path + ".gz", gzip(raw));
    else
      dir.write(path, raw);
  };
  write("train-images-idx3-ubyte", idx_images(static_cast<std::uint32_t>(folder.train_labels.size()), 28, 28));
  write("train-labels-idx1-ubyte", idx_labels(folder.train_labels));
  write("t10k-images-idx3-ubyte", idx_images(static_cast<std::uint32_t>(folder.test_labels.size()), 28, 28));
  write("t10k-labels-idx1-ubyte", idx_labels(folder.test_labels));
}

class IdxLoad : public ::testing::TestWithParam<bool> {};  // gzipped?

TEST_P(IdxLoad, LoadsMnistFromItsFolder) {
  const TempDir dir;
  IdxFolder folder;
  folder.gzipped = GetParam();
  write_idx_folder(dir, "mnist", folder);
  const Dataset dataset = load_dataset({DatasetKind::mnist, {}}, {dir.path()});
  EXPECT_EQ(dataset.name, "mnist");
  EXPECT_EQ(dataset.train.labels, (std::vector<std::int32_t>{5, 0, 4}));
  EXPECT_EQ(dataset.test.labels, (std::vector<std::int32_t>{7, 2}));
  EXPECT_EQ(dataset.train.shape, kMnistShape);
  EXPECT_EQ(dataset.train.classes, kClasses);
  ASSERT_EQ(dataset.train.images.size(), 3U * 784);
  ASSERT_EQ(dataset.test.images.size(), 2U * 784);
  for (const std::size_t pixel : {0U, 100U, 783U})
    EXPECT_EQ(std::lround(dataset.test.image(1)[pixel] * 255.0F), test_pixel(1, pixel)) << pixel;
  const std::string suffix = GetParam() ? ".gz" : "";
  ASSERT_EQ(dataset.files.size(), 4U);
  EXPECT_EQ(dataset.files[0], dir.path() / "mnist" / ("train-images-idx3-ubyte" + suffix));
  EXPECT_EQ(dataset.files[3], dir.path() / "mnist" / ("t10k-labels-idx1-ubyte" + suffix));
  EXPECT_TRUE(dataset.channel_mean.empty());
}

INSTANTIATE_TEST_SUITE_P(RawAndGzip, IdxLoad, ::testing::Values(false, true),
                         [](const auto& test_case) { return test_case.param ? "gzip" : "raw"; });

TEST(IdxLoadFolder, FashionMnistLivesInItsOwnFolder) {
  const TempDir dir;
  write_idx_folder(dir, "fashion-mnist", {});
  const Dataset dataset = load_dataset({DatasetKind::fashion_mnist, {}}, {dir.path()});
  EXPECT_EQ(dataset.name, "fashion-mnist");
  EXPECT_EQ(dataset.train.size(), 3U);
  EXPECT_THROW(load_dataset({DatasetKind::mnist, {}}, {dir.path()}), DatasetNotFoundError);
}

TEST(IdxLoadFolder, CountMismatchBetweenFilesNamesBoth) {
  const TempDir dir;
  write_idx_folder(dir, "mnist", {});
  const auto labels = dir.write("mnist/train-labels-idx1-ubyte.gz", gzip(idx_labels({1, 2})));
  const std::string message = thrown_message<DatasetError>([&] {
    load_dataset({DatasetKind::mnist, {}}, {dir.path()});
  });
  EXPECT_THAT(message, HasSubstr((dir.path() / "mnist/train-images-idx3-ubyte.gz").string() + " holds 3 images"));
  EXPECT_THAT(message, HasSubstr(labels.string() + " holds 2 labels"));
}

TEST(IdxLoadFolder, ACorruptFileInTheFolderIsNamed) {
  const TempDir dir;
  write_idx_folder(dir, "mnist", {});
  const auto labels = dir.write("mnist/t10k-labels-idx1-ubyte.gz", gzip(idx_labels({1, 12})));
  const std::string message = thrown_message<DatasetError>([&] {
    load_dataset({DatasetKind::mnist, {}}, {dir.path()});
  });
  EXPECT_THAT(message, HasSubstr(labels.string()));
  EXPECT_THAT(message, HasSubstr("index 1: label 12 is out of range, allowed 0..9"));
}

TEST(IdxLoadFolder, StandardisesWithTheTrainStatistics) {
  const TempDir dir;
  write_idx_folder(dir, "mnist", {});
  const Dataset plain = load_dataset({DatasetKind::mnist, {}}, {dir.path()});
  const Dataset standard = load_dataset({DatasetKind::mnist, {}}, {dir.path()}, {.standardize = true});
  ASSERT_EQ(standard.channel_mean.size(), 1U);
  ASSERT_EQ(standard.channel_stddev.size(), 1U);
  double sum = 0.0;
  double squares = 0.0;
  for (const float value : standard.train.images) {
    sum += value;
    squares += static_cast<double>(value) * value;
  }
  const double count = static_cast<double>(standard.train.images.size());
  EXPECT_NEAR(sum / count, 0.0, 1e-5);
  EXPECT_NEAR(squares / count, 1.0, 1e-4);
  // The test split uses the train split's statistics, not its own.
  const float mean = standard.channel_mean[0];
  const float stddev = standard.channel_stddev[0];
  for (const std::size_t i : {0U, 500U, 1567U})
    EXPECT_NEAR(standard.test.images[i], (plain.test.images[i] - mean) / stddev, 1e-5);
}

}  // namespace
}  // namespace memsweep
