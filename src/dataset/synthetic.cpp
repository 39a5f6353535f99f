#include "memsweep/dataset.hpp"
#include "memsweep/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <span>

namespace memsweep {
namespace {

// Independent random streams of one seed, so that e.g. a larger train split
// leaves the prototypes and the test split unchanged.
constexpr std::uint64_t kPrototypeStream = 0;
constexpr std::uint64_t kTrainStream = 1;
constexpr std::uint64_t kTestStream = 2;

constexpr int kMinClasses = 2;  // one class is not a classification task

void check_spec(const SyntheticSpec& spec) {
  const ImageShape& shape = spec.shape;
  const auto fail = [&](std::string_view what) {
    throw DatasetError(fmt::format("synthetic dataset: {} (shape {}x{}x{}, classes {}, train {}, test {}, noise {})",
                                   what, shape.channels, shape.height, shape.width, spec.classes, spec.train_size,
                                   spec.test_size, spec.noise));
  };
  if (shape.channels < 1 || shape.height < 1 || shape.width < 1) fail("every image dimension must be at least 1");
  if (spec.classes < kMinClasses) fail(fmt::format("needs at least {} classes", kMinClasses));
  if (spec.train_size < 1 || spec.test_size < 1) fail("train and test sizes must be at least 1");
  if (!std::isfinite(spec.noise) || spec.noise < 0.0) fail("noise must be a finite number >= 0");
}

// One pattern per class, every pixel uniform in [0, 1]: for any image of more
// than a few pixels, two classes' patterns are far apart compared with the
// noise along the line between them, so even a linear model separates them.
std::vector<float> make_prototypes(const SyntheticSpec& spec) {
  Rng rng(mix_seed(spec.seed, kPrototypeStream));
  std::vector<float> prototypes(static_cast<std::size_t>(spec.classes) * spec.shape.pixels());
  for (float& value : prototypes) value = static_cast<float>(rng.uniform01());
  return prototypes;
}

// Gaussian noise, both values of each Box-Muller draw used: Rng::normal()
// drops the second, and the transcendental calls dominate generation time.
class GaussianNoise {
 public:
  explicit GaussianNoise(std::uint64_t seed) : rng_(seed) {}

  std::int64_t uniform_int(std::int64_t low, std::int64_t high) { return rng_.uniform_int(low, high); }

  double standard_normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double radius = std::sqrt(-2.0 * std::log(1.0 - rng_.uniform01()));  // 1 - u is in (0, 1]
    const double angle = 2.0 * std::numbers::pi * rng_.uniform01();
    spare_ = radius * std::sin(angle);
    has_spare_ = true;
    return radius * std::cos(angle);
  }

 private:
  Rng rng_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

Split make_split(const SyntheticSpec& spec, std::span<const float> prototypes, int size, std::uint64_t stream) {
  GaussianNoise rng(mix_seed(spec.seed, stream));
  const std::size_t pixels = spec.shape.pixels();
  Split split;
  split.shape = spec.shape;
  split.classes = spec.classes;
  split.labels.resize(static_cast<std::size_t>(size));
  split.images.resize(split.labels.size() * pixels);
  for (std::size_t example = 0; example < split.labels.size(); ++example) {
    const auto label = static_cast<std::int32_t>(rng.uniform_int(0, spec.classes - 1));
    split.labels[example] = label;
    const auto prototype = prototypes.subspan(static_cast<std::size_t>(label) * pixels, pixels);
    float* image = split.images.data() + example * pixels;
    for (std::size_t p = 0; p < pixels; ++p) {
      const double noise = spec.noise > 0.0 ? spec.noise * rng.standard_normal() : 0.0;
      image[p] = static_cast<float>(std::clamp(prototype[p] + noise, 0.0, 1.0));
    }
  }
  return split;
}

}  // namespace

Dataset generate_synthetic(const SyntheticSpec& spec) {
  check_spec(spec);
  const std::vector<float> prototypes = make_prototypes(spec);
  Dataset dataset;
  dataset.spec.kind = DatasetKind::synthetic;
  dataset.spec.synthetic = spec;
  dataset.name = std::string(dataset_name(DatasetKind::synthetic));
  dataset.train = make_split(spec, prototypes, spec.train_size, kTrainStream);
  dataset.test = make_split(spec, prototypes, spec.test_size, kTestStream);
  return dataset;
}

}  // namespace memsweep
