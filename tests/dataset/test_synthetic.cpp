// The synthetic dataset: the requested shape, reproducible from its seed, and
// learnable (a classifier with no oneDNN in it beats chance by far).

#include "memsweep/dataset.hpp"
#include "memsweep/random.hpp"
#include "support/dataset_files.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {
namespace {

using ::testing::HasSubstr;
using testing::thrown_message;

SyntheticSpec small_spec() {
  SyntheticSpec spec;
  spec.shape = {3, 8, 6};
  spec.classes = 5;
  spec.train_size = 400;
  spec.test_size = 100;
  spec.noise = 0.5;
  spec.seed = 11;
  return spec;
}

std::string_view bytes_of(const std::vector<float>& values) {
  return {reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)};
}

TEST(Synthetic, HasTheRequestedShapeSizesAndRanges) {
  const SyntheticSpec spec = small_spec();
  const Dataset dataset = generate_synthetic(spec);
  EXPECT_EQ(dataset.name, "synthetic");
  EXPECT_EQ(dataset.spec.kind, DatasetKind::synthetic);
  EXPECT_EQ(dataset.spec.synthetic, spec);
  EXPECT_TRUE(dataset.files.empty());
  for (const Split* split : {&dataset.train, &dataset.test}) {
    EXPECT_EQ(split->shape, spec.shape);
    EXPECT_EQ(split->classes, spec.classes);
    EXPECT_EQ(split->images.size(), split->size() * spec.shape.pixels());
    EXPECT_TRUE(
        std::all_of(split->images.begin(), split->images.end(), [](float v) { return v >= 0.0F && v <= 1.0F; }));
    EXPECT_TRUE(std::all_of(split->labels.begin(), split->labels.end(),
                            [&](std::int32_t label) { return label >= 0 && label < spec.classes; }));
  }
  EXPECT_EQ(dataset.train.size(), 400U);
  EXPECT_EQ(dataset.test.size(), 100U);
  for (int label = 0; label < spec.classes; ++label)
    EXPECT_GT(std::count(dataset.train.labels.begin(), dataset.train.labels.end(), label), 40) << label;
}

TEST(Synthetic, TheSameSpecGivesTheSameBytes) {
  const Dataset first = generate_synthetic(small_spec());
  const Dataset second = generate_synthetic(small_spec());
  EXPECT_EQ(bytes_of(first.train.images), bytes_of(second.train.images));
  EXPECT_EQ(bytes_of(first.test.images), bytes_of(second.test.images));
  EXPECT_EQ(first.train.labels, second.train.labels);
  EXPECT_EQ(first.test.labels, second.test.labels);
}

TEST(Synthetic, ADifferentSeedGivesDifferentData) {
  SyntheticSpec other = small_spec();
  other.seed += 1;
  const Dataset first = generate_synthetic(small_spec());
  const Dataset second = generate_synthetic(other);
  EXPECT_NE(bytes_of(first.train.images), bytes_of(second.train.images));
  EXPECT_NE(bytes_of(first.test.images), bytes_of(second.test.images));
  EXPECT_NE(first.train.labels, second.train.labels);
}

TEST(Synthetic, TheTestSplitDoesNotDependOnTheTrainSize) {
  SyntheticSpec bigger = small_spec();
  bigger.train_size *= 2;
  EXPECT_EQ(bytes_of(generate_synthetic(small_spec()).test.images), bytes_of(generate_synthetic(bigger).test.images));
}

// A regression pin on the generator: noise-free images are the class
// prototypes, and labels and prototypes use only the integer output of
// mt19937_64 (fixed by the standard) and exact arithmetic, so these values
// must be the same on every compiler and standard library. A change here
// changes every synthetic trial's data: make it on purpose.
TEST(Synthetic, NoiseFreeDataIsPinned) {
  SyntheticSpec spec = small_spec();
  spec.noise = 0.0;
  const Dataset dataset = generate_synthetic(spec);
  std::string labels;
  for (const std::int32_t label : dataset.train.labels) labels.push_back(static_cast<char>(label));
  EXPECT_EQ(stable_hash(labels), 0x7c212a550a06beeeULL) << std::hex << stable_hash(labels);
  EXPECT_EQ(stable_hash(bytes_of(dataset.train.images)), 0x48b1dee55ed7684fULL)
      << std::hex << stable_hash(bytes_of(dataset.train.images));
}

// Nearest class mean: fit on train, score on test. No learning library, so
// the test shows the data carries its labels, not that a model works.
double nearest_class_mean_accuracy(const Dataset& dataset) {
  const std::size_t pixels = dataset.train.shape.pixels();
  const auto classes = static_cast<std::size_t>(dataset.train.classes);
  std::vector<double> means(classes * pixels, 0.0);
  std::vector<double> counts(classes, 0.0);
  for (std::size_t i = 0; i < dataset.train.size(); ++i) {
    const auto label = static_cast<std::size_t>(dataset.train.labels[i]);
    const auto image = dataset.train.image(i);
    for (std::size_t p = 0; p < pixels; ++p) means[label * pixels + p] += image[p];
    counts[label] += 1.0;
  }
  for (std::size_t c = 0; c < classes; ++c)
    for (std::size_t p = 0; p < pixels; ++p) means[c * pixels + p] /= std::max(counts[c], 1.0);
  std::size_t correct = 0;
  for (std::size_t i = 0; i < dataset.test.size(); ++i) {
    const auto image = dataset.test.image(i);
    std::size_t best = 0;
    double best_distance = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < classes; ++c) {
      double distance = 0.0;
      for (std::size_t p = 0; p < pixels; ++p) {
        const double d = image[p] - means[c * pixels + p];
        distance += d * d;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    if (static_cast<std::int32_t>(best) == dataset.test.labels[i]) ++correct;
  }
  return static_cast<double>(correct) / static_cast<double>(dataset.test.size());
}

struct Learnable {
  std::string name;
  SyntheticSpec spec;
  double min_accuracy;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const Learnable& test_case, std::ostream* out) { *out << test_case.name; }

SyntheticSpec with(ImageShape shape, int classes, double noise) {
  SyntheticSpec spec;
  spec.shape = shape;
  spec.classes = classes;
  spec.noise = noise;
  spec.train_size = 2000;
  spec.test_size = 500;
  return spec;
}

const Learnable kLearnable[] = {
    {"default_spec", SyntheticSpec{}, 0.95},  // chance: 0.1
    {"small_colour_images_loud_noise", with({3, 8, 8}, 10, 1.0), 0.8},
    {"many_classes", with({1, 16, 16}, 50, 0.5), 0.9},  // chance: 0.02
};

class SyntheticLearnability : public ::testing::TestWithParam<Learnable> {};

TEST_P(SyntheticLearnability, NearestClassMeanBeatsChanceByFar) {
  const Dataset dataset = generate_synthetic(GetParam().spec);
  const double accuracy = nearest_class_mean_accuracy(dataset);
  const double chance = 1.0 / GetParam().spec.classes;
  EXPECT_GT(accuracy, GetParam().min_accuracy) << "chance is " << chance;
}

INSTANTIATE_TEST_SUITE_P(Cases, SyntheticLearnability, ::testing::ValuesIn(kLearnable),
                         [](const auto& test_case) { return test_case.param.name; });

// What the trainer will do, in miniature: one epoch of minibatch SGD on a
// softmax regression (a network with no hidden layer), fed through
// BatchOrder::gather into preallocated buffers, then scored on the test split.
double softmax_regression_accuracy_after_one_epoch(const Dataset& dataset) {
  constexpr std::size_t kBatch = 32;
  constexpr float kLearningRate = 0.1F;
  const std::size_t pixels = dataset.train.shape.pixels();
  const auto classes = static_cast<std::size_t>(dataset.train.classes);
  std::vector<float> weights(classes * pixels, 0.0F);
  std::vector<float> bias(classes, 0.0F);
  const auto scores = [&](std::span<const float> image, std::vector<float>& out) {
    for (std::size_t c = 0; c < classes; ++c) {
      float sum = bias[c];
      for (std::size_t p = 0; p < pixels; ++p) sum += weights[c * pixels + p] * image[p];
      out[c] = sum;
    }
  };
  BatchOrder order(dataset.train.size(), kBatch, 3);
  std::vector<float> images(kBatch * pixels);
  std::vector<std::int32_t> labels(kBatch);
  std::vector<float> logits(classes);
  std::vector<float> weight_step(weights.size());
  std::vector<float> bias_step(classes);
  for (std::size_t b = 0; b < order.batch_count(); ++b) {
    const std::size_t rows = order.gather(b, dataset.train, images, labels);
    std::fill(weight_step.begin(), weight_step.end(), 0.0F);
    std::fill(bias_step.begin(), bias_step.end(), 0.0F);
    for (std::size_t row = 0; row < rows; ++row) {
      const auto image = std::span<const float>(images).subspan(row * pixels, pixels);
      scores(image, logits);
      const float top = *std::max_element(logits.begin(), logits.end());
      float total = 0.0F;
      for (float& value : logits) total += value = std::exp(value - top);
      for (std::size_t c = 0; c < classes; ++c) {
        // d(cross-entropy)/d(logit c) = softmax_c - [c == label]
        const float gradient = logits[c] / total - (static_cast<std::int32_t>(c) == labels[row] ? 1.0F : 0.0F);
        bias_step[c] += gradient;
        for (std::size_t p = 0; p < pixels; ++p) weight_step[c * pixels + p] += gradient * image[p];
      }
    }
    const float scale = kLearningRate / static_cast<float>(rows);
    for (std::size_t i = 0; i < weights.size(); ++i) weights[i] -= scale * weight_step[i];
    for (std::size_t c = 0; c < classes; ++c) bias[c] -= scale * bias_step[c];
  }
  std::size_t correct = 0;
  for (std::size_t i = 0; i < dataset.test.size(); ++i) {
    scores(dataset.test.image(i), logits);
    const auto best = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (best == dataset.test.labels[i]) ++correct;
  }
  return static_cast<double>(correct) / static_cast<double>(dataset.test.size());
}

TEST(SyntheticTraining, OneEpochOfSoftmaxRegressionBeatsChanceByFar) {
  SyntheticSpec spec;  // 1x28x28, 10 classes, noise 0.5: the default trial's data
  spec.train_size = 2000;
  spec.test_size = 500;
  EXPECT_GT(softmax_regression_accuracy_after_one_epoch(generate_synthetic(spec)), 0.9) << "chance is 0.1";
}

struct BadSpec {
  std::string name;
  void (*change)(SyntheticSpec&);
  std::string message;
};

// Names the case in test listings (gtest would print the struct as raw bytes).
void PrintTo(const BadSpec& test_case, std::ostream* out) { *out << test_case.name; }

const BadSpec kBadSpecs[] = {
    {"zero_channels", [](SyntheticSpec& s) { s.shape.channels = 0; }, "every image dimension must be at least 1"},
    {"negative_width", [](SyntheticSpec& s) { s.shape.width = -3; }, "every image dimension must be at least 1"},
    {"one_class", [](SyntheticSpec& s) { s.classes = 1; }, "needs at least 2 classes"},
    {"empty_train", [](SyntheticSpec& s) { s.train_size = 0; }, "train and test sizes must be at least 1"},
    {"empty_test", [](SyntheticSpec& s) { s.test_size = 0; }, "train and test sizes must be at least 1"},
    {"negative_noise", [](SyntheticSpec& s) { s.noise = -0.1; }, "noise must be a finite number >= 0"},
    {"nan_noise", [](SyntheticSpec& s) { s.noise = std::numeric_limits<double>::quiet_NaN(); },
     "noise must be a finite number >= 0"},
};

class SyntheticBadSpec : public ::testing::TestWithParam<BadSpec> {};

TEST_P(SyntheticBadSpec, IsAnInputErrorSayingWhatIsWrong) {
  SyntheticSpec spec = small_spec();
  GetParam().change(spec);
  const std::string message = thrown_message<DatasetError>([&] { generate_synthetic(spec); });
  EXPECT_THAT(message, HasSubstr("synthetic dataset"));
  EXPECT_THAT(message, HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(Cases, SyntheticBadSpec, ::testing::ValuesIn(kBadSpecs),
                         [](const auto& test_case) { return test_case.param.name; });

TEST(SyntheticLoad, NeedsNoFilesAndCanBeStandardised) {
  DatasetSpec spec{DatasetKind::synthetic, small_spec()};
  const Dataset plain = load_dataset(spec, {});
  const Dataset standard = load_dataset(spec, {}, {.standardize = true});
  ASSERT_EQ(standard.channel_mean.size(), 3U);
  const std::size_t plane = 8 * 6;
  for (std::size_t channel = 0; channel < 3; ++channel) {
    double sum = 0.0;
    double squares = 0.0;
    for (std::size_t row = 0; row < standard.train.size(); ++row) {
      for (std::size_t i = 0; i < plane; ++i) {
        const double value = standard.train.image(row)[channel * plane + i];
        sum += value;
        squares += value * value;
      }
    }
    const double count = static_cast<double>(standard.train.size() * plane);
    EXPECT_NEAR(sum / count, 0.0, 1e-5) << channel;
    EXPECT_NEAR(squares / count, 1.0, 1e-4) << channel;
  }
  const float value = plain.test.images[7];  // channel 0
  EXPECT_NEAR(standard.test.images[7], (value - standard.channel_mean[0]) / standard.channel_stddev[0], 1e-5);
}

}  // namespace
}  // namespace memsweep
