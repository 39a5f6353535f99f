// The loaders on the real files (../shared/datasets, or MEMSWEEP_TEST_DATASETS),
// checked against facts that do not come from our loader: the published
// label histograms and first labels, and pixel values from the datasets'
// well-known printouts, each confirmed with a separate reader (zcat | od).

#include "memsweep/dataset.hpp"
#include "support/real_datasets.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace memsweep {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Loading MNIST takes about a second: every test of a dataset shares one load.
const Dataset& real_dataset(DatasetKind kind, const std::filesystem::path& root) {
  static std::map<DatasetKind, Dataset> loaded;
  auto it = loaded.find(kind);
  if (it == loaded.end()) it = loaded.emplace(kind, load_dataset({kind, {}}, {root})).first;
  return it->second;
}

std::vector<int> histogram(const Split& split) {
  std::vector<int> counts(static_cast<std::size_t>(split.classes), 0);
  for (const std::int32_t label : split.labels) ++counts.at(static_cast<std::size_t>(label));
  return counts;
}

std::vector<std::int32_t> first_labels(const Split& split, std::size_t count) {
  return {split.labels.begin(), split.labels.begin() + static_cast<std::ptrdiff_t>(count)};
}

// The bytes behind `count` floats of `image` from `offset`: the loader stores pixel/255.
std::vector<long> pixel_bytes(const Split& split, std::size_t image, std::size_t offset, std::size_t count) {
  std::vector<long> bytes;
  for (const float value : split.image(image).subspan(offset, count)) bytes.push_back(std::lround(value * 255.0F));
  return bytes;
}

constexpr ImageShape kMnistShape{1, 28, 28};
constexpr ImageShape kCifarShape{3, 32, 32};
constexpr std::size_t kMnistWidth = 28;
constexpr std::size_t kCifarPlane = 32 * 32;

// ---- MNIST ------------------------------------------------------------------

TEST(RealMnist, HasTheCanonicalCountsAndShape) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const Dataset& mnist = real_dataset(DatasetKind::mnist, root);
  EXPECT_EQ(mnist.train.size(), 60000U);
  EXPECT_EQ(mnist.test.size(), 10000U);
  EXPECT_EQ(mnist.train.shape, kMnistShape);
  EXPECT_EQ(mnist.test.shape, kMnistShape);
  EXPECT_EQ(mnist.train.images.size(), 60000U * 784);
  EXPECT_EQ(mnist.files.size(), 4U);
}

TEST(RealMnist, LabelHistogramsMatchThePublishedOnes) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const Dataset& mnist = real_dataset(DatasetKind::mnist, root);
  EXPECT_THAT(histogram(mnist.train), ElementsAre(5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949));
  EXPECT_THAT(histogram(mnist.test), ElementsAre(980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009));
}

TEST(RealMnist, FirstLabels) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const Dataset& mnist = real_dataset(DatasetKind::mnist, root);
  EXPECT_THAT(first_labels(mnist.train, 10), ElementsAre(5, 0, 4, 1, 9, 2, 1, 3, 1, 4));
  EXPECT_THAT(first_labels(mnist.test, 10), ElementsAre(7, 2, 1, 0, 4, 1, 4, 9, 5, 9));
}

TEST(RealMnist, KnownPixelsOfTheFirstTrainingImage) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "mnist");
  const Dataset& mnist = real_dataset(DatasetKind::mnist, root);
  // Row 5, columns 12..23 of the first "5": the top stroke.
  EXPECT_THAT(pixel_bytes(mnist.train, 0, 5 * kMnistWidth + 12, 12),
              ElementsAre(3, 18, 18, 18, 126, 136, 175, 26, 166, 255, 247, 127));
  EXPECT_THAT(pixel_bytes(mnist.train, 0, 0, 5 * kMnistWidth), ::testing::Each(0));  // rows 0..4 are blank
}

// ---- Fashion-MNIST ------------------------------------------------------------

TEST(RealFashionMnist, HasTheCanonicalCountsShapeAndBalancedClasses) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "fashion-mnist");
  const Dataset& fashion = real_dataset(DatasetKind::fashion_mnist, root);
  EXPECT_EQ(fashion.train.size(), 60000U);
  EXPECT_EQ(fashion.test.size(), 10000U);
  EXPECT_EQ(fashion.train.shape, kMnistShape);
  EXPECT_THAT(histogram(fashion.train), ::testing::Each(6000));
  EXPECT_THAT(histogram(fashion.test), ::testing::Each(1000));
  EXPECT_EQ(histogram(fashion.train).size(), 10U);
}

TEST(RealFashionMnist, FirstLabels) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "fashion-mnist");
  const Dataset& fashion = real_dataset(DatasetKind::fashion_mnist, root);
  EXPECT_THAT(first_labels(fashion.train, 10), ElementsAre(9, 0, 0, 3, 0, 2, 7, 2, 5, 5));
  EXPECT_THAT(first_labels(fashion.test, 10), ElementsAre(9, 2, 1, 1, 6, 1, 4, 6, 5, 7));
}

// ---- CIFAR-10 (our copy is a subset: 4000 training and 1000 test records) -------

TEST(RealCifar10Subset, CountsFollowFromTheFileSizes) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "cifar-10");
  const Dataset& cifar = real_dataset(DatasetKind::cifar10, root);
  EXPECT_EQ(cifar.train.size(), 4000U);
  EXPECT_EQ(cifar.test.size(), 1000U);
  EXPECT_EQ(cifar.train.shape, kCifarShape);
  EXPECT_EQ(cifar.test.shape, kCifarShape);
  EXPECT_THAT(cifar.files, ElementsAre(root / "cifar-10/data_batch_1.bin.gz", root / "cifar-10/test_batch.bin.gz"));
  EXPECT_THAT(cifar.notes, ::testing::Contains(HasSubstr("1 of 5 training batches (data_batch_1.bin.gz)")));
  EXPECT_THAT(cifar.notes, ::testing::Contains(HasSubstr("data_batch_1.bin.gz holds 4000 records")));
}

TEST(RealCifar10Subset, LabelHistograms) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "cifar-10");
  const Dataset& cifar = real_dataset(DatasetKind::cifar10, root);
  EXPECT_THAT(histogram(cifar.train), ElementsAre(396, 366, 420, 384, 422, 393, 414, 385, 407, 413));
  EXPECT_THAT(histogram(cifar.test), ElementsAre(103, 89, 100, 103, 90, 86, 112, 102, 106, 109));
}

TEST(RealCifar10Subset, FirstLabelsAndKnownPixels) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "cifar-10");
  const Dataset& cifar = real_dataset(DatasetKind::cifar10, root);
  EXPECT_THAT(first_labels(cifar.train, 10), ElementsAre(6, 9, 9, 4, 1, 1, 2, 7, 8, 3));
  EXPECT_THAT(first_labels(cifar.test, 10), ElementsAre(3, 8, 8, 0, 6, 6, 1, 6, 3, 1));
  // The R plane comes first, the B plane last.
  EXPECT_THAT(pixel_bytes(cifar.train, 0, 0, 10), ElementsAre(59, 43, 50, 68, 98, 119, 139, 145, 149, 149));
  EXPECT_THAT(pixel_bytes(cifar.test, 0, 0, 5), ElementsAre(158, 159, 165, 166, 160));
  EXPECT_THAT(pixel_bytes(cifar.test, 0, 3 * kCifarPlane - 3, 3), ElementsAre(124, 129, 110));
}

TEST(RealCifar10Subset, StandardisedWithTheTrainStatistics) {
  MEMSWEEP_REAL_DATASETS_OR_SKIP(root, "cifar-10");
  const Dataset standard = load_dataset({DatasetKind::cifar10, {}}, {root}, {.standardize = true});
  ASSERT_EQ(standard.channel_mean.size(), 3U);
  for (std::size_t channel = 0; channel < 3; ++channel) {
    double sum = 0.0;
    double squares = 0.0;
    for (std::size_t row = 0; row < standard.train.size(); ++row) {
      for (const float value : standard.train.image(row).subspan(channel * kCifarPlane, kCifarPlane)) {
        sum += value;
        squares += static_cast<double>(value) * value;
      }
    }
    const double count = static_cast<double>(standard.train.size() * kCifarPlane);
    EXPECT_NEAR(sum / count, 0.0, 1e-4) << channel;
    EXPECT_NEAR(squares / count, 1.0, 1e-3) << channel;
    // Natural images: every channel's mean is mid-range and its spread wide.
    EXPECT_GT(standard.channel_mean[channel], 0.3F);
    EXPECT_LT(standard.channel_mean[channel], 0.7F);
    EXPECT_GT(standard.channel_stddev[channel], 0.15F);
  }
}

}  // namespace
}  // namespace memsweep
