// The per-epoch batch order: a seeded permutation, every example once, the
// last batch partial, and gather() copying the right rows into buffers the
// caller owns.

#include "memsweep/dataset.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

namespace memsweep {
namespace {

using ::testing::ElementsAre;

constexpr std::size_t kExamples = 103;
constexpr std::size_t kBatchSize = 10;
constexpr std::uint64_t kSeed = 42;

std::vector<std::size_t> epoch_order(BatchOrder& order, int epoch) {
  order.start_epoch(epoch);
  std::vector<std::size_t> all;
  for (std::size_t b = 0; b < order.batch_count(); ++b) {
    const auto indices = order.batch_indices(b);
    all.insert(all.end(), indices.begin(), indices.end());
  }
  return all;
}

TEST(BatchOrder, CutsTheEpochIntoFullBatchesAndAPartialLastOne) {
  const BatchOrder order(kExamples, kBatchSize, kSeed);
  ASSERT_EQ(order.batch_count(), 11U);
  for (std::size_t b = 0; b + 1 < order.batch_count(); ++b) EXPECT_EQ(order.batch_rows(b), kBatchSize) << b;
  EXPECT_EQ(order.batch_rows(10), 3U);
  EXPECT_EQ(order.batch_indices(10).size(), 3U);
  EXPECT_THROW(order.batch_rows(11), std::invalid_argument);
}

TEST(BatchOrder, EdgeSizes) {
  EXPECT_EQ(BatchOrder(100, 100, kSeed).batch_count(), 1U);
  EXPECT_EQ(BatchOrder(5, 64, kSeed).batch_rows(0), 5U);
  EXPECT_EQ(BatchOrder(0, 64, kSeed).batch_count(), 0U);
  EXPECT_THROW(BatchOrder(10, 0, kSeed), std::invalid_argument);
}

TEST(BatchOrder, VisitsEveryExampleExactlyOncePerEpoch) {
  BatchOrder order(kExamples, kBatchSize, kSeed);
  std::vector<std::size_t> identity(kExamples);
  std::iota(identity.begin(), identity.end(), std::size_t{0});
  for (const int epoch : {0, 1, 2, 7}) {
    std::vector<std::size_t> seen = epoch_order(order, epoch);
    EXPECT_NE(seen, identity) << "epoch " << epoch << " is not shuffled";
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, identity) << "epoch " << epoch;
  }
}

TEST(BatchOrder, OrdersDifferBetweenEpochsAndSeedsAndRepeatForTheSameOnes) {
  BatchOrder order(kExamples, kBatchSize, kSeed);
  BatchOrder twin(kExamples, kBatchSize, kSeed);
  BatchOrder other_seed(kExamples, kBatchSize, kSeed + 1);
  const auto epoch0 = epoch_order(order, 0);
  const auto epoch1 = epoch_order(order, 1);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_NE(epoch0, epoch_order(other_seed, 0));
  EXPECT_EQ(epoch1, epoch_order(twin, 1));   // the twin never saw epoch 0
  EXPECT_EQ(epoch0, epoch_order(order, 0));  // going back gives epoch 0 again
}

// Fisher-Yates on mt19937_64 with our own integer mapping: the same order on
// every platform. A change here reshuffles every trial: make it on purpose.
TEST(BatchOrder, OrderIsPinned) {
  BatchOrder order(10, 4, 7);
  EXPECT_THAT(epoch_order(order, 0), ElementsAre(1, 8, 6, 0, 9, 2, 4, 5, 3, 7));
}

TEST(BatchOrder, StartingAnEpochReusesItsStorage) {
  BatchOrder order(kExamples, kBatchSize, kSeed);
  const std::size_t* storage = order.batch_indices(0).data();
  order.start_epoch(5);
  EXPECT_EQ(order.batch_indices(0).data(), storage);
  EXPECT_EQ(order.epoch(), 5);
}

// Image i holds the values i*1000 + p, so every copied value says where it came from.
Split numbered_split(std::size_t examples, ImageShape shape) {
  Split split;
  split.shape = shape;
  split.classes = 7;
  for (std::size_t i = 0; i < examples; ++i) {
    split.labels.push_back(static_cast<std::int32_t>(i % 7));
    for (std::size_t p = 0; p < shape.pixels(); ++p) split.images.push_back(static_cast<float>(i * 1000 + p));
  }
  return split;
}

TEST(BatchOrder, GatherCopiesTheBatchsRowsAndLabels) {
  const ImageShape shape{2, 3, 2};
  const Split split = numbered_split(kExamples, shape);
  BatchOrder order(kExamples, kBatchSize, kSeed);
  order.start_epoch(3);
  std::vector<float> images(kBatchSize * shape.pixels(), -1.0F);
  std::vector<std::int32_t> labels(kBatchSize, -1);
  for (const std::size_t b : {std::size_t{0}, std::size_t{4}, std::size_t{10}}) {
    const std::size_t rows = order.gather(b, split, images, labels);
    ASSERT_EQ(rows, order.batch_rows(b));
    const auto indices = order.batch_indices(b);
    for (std::size_t row = 0; row < rows; ++row) {
      const std::size_t example = indices[row];
      EXPECT_EQ(labels[row], static_cast<std::int32_t>(example % 7));
      for (std::size_t p = 0; p < shape.pixels(); ++p)
        ASSERT_EQ(images[row * shape.pixels() + p], static_cast<float>(example * 1000 + p)) << b << " " << row;
    }
  }
}

TEST(BatchOrder, GatherRejectsMisuse) {
  const ImageShape shape{1, 2, 2};
  const Split split = numbered_split(kExamples, shape);
  const BatchOrder order(kExamples, kBatchSize, kSeed);
  std::vector<float> images(kBatchSize * shape.pixels());
  std::vector<std::int32_t> labels(kBatchSize);
  std::vector<float> small_images(kBatchSize * shape.pixels() - 1);
  std::vector<std::int32_t> small_labels(kBatchSize - 1);
  EXPECT_THROW(order.gather(0, split, small_images, labels), std::invalid_argument);
  EXPECT_THROW(order.gather(0, split, images, small_labels), std::invalid_argument);
  EXPECT_THROW(order.gather(11, split, images, labels), std::invalid_argument);
  EXPECT_THROW(order.gather(0, numbered_split(kExamples - 1, shape), images, labels), std::invalid_argument);
  // The partial last batch fits in a smaller buffer.
  EXPECT_EQ(order.gather(10, split, std::span(images).first(3 * shape.pixels()), std::span(labels).first(3)), 3U);
}

}  // namespace
}  // namespace memsweep
