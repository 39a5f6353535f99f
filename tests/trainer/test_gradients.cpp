// The backward pass against central finite differences of the loss, for
// every layer type: inner product (with and without ReLU), convolution (first
// and later, with and without pooling), max-pooling, softmax cross-entropy.

#include "trainer/trainer_fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

namespace memsweep::testing {
namespace {

struct GradientCase {
  const char* name;
  ModelSpec model;
  std::size_t rows;
};

void PrintTo(const GradientCase& c, std::ostream* os) { *os << c.name; }

class GradientCheck : public ::testing::TestWithParam<GradientCase> {};

// Float32 networks: a difference quotient of a loss near 1 has a rounding
// error of about ε·|loss|/h ≈ 1e-4 for h = 1e-3, so compare with an absolute
// floor plus a relative part.
constexpr double kStep = 1e-3;
constexpr double kAbsoluteTolerance = 5e-4;
constexpr double kRelativeTolerance = 2e-2;
// One-sided quotients carry an O(h) truncation error as well.
constexpr double kOneSidedTolerance = 2e-3;
constexpr std::size_t kChecksPerTensor = 12;

struct Differences {
  double forward, backward, central;
};

Differences differences(Trainer& trainer, std::size_t tensor, std::size_t index, std::size_t rows) {
  std::vector<float> values = trainer.parameter(tensor);
  const float original = values[index];
  const double at = trainer.loss(rows);
  const auto loss_with = [&](float value) {
    values[index] = value;
    trainer.set_parameter(tensor, values);
    return trainer.loss(rows);
  };
  // The steps actually taken, after rounding to float.
  const float up = original + static_cast<float>(kStep), down = original - static_cast<float>(kStep);
  const double plus = loss_with(up), minus = loss_with(down);
  loss_with(original);
  return {(plus - at) / (static_cast<double>(up) - original), (at - minus) / (original - static_cast<double>(down)),
          (plus - minus) / (static_cast<double>(up) - down)};
}

bool close(double numeric, double analytic) {
  return std::abs(numeric - analytic) <= kAbsoluteTolerance + kRelativeTolerance * std::abs(analytic);
}

// Where the loss is smooth the central difference must match. At a kink of
// ReLU or max-pooling (a pre-activation exactly 0, as when a zero bias meets
// an input that ReLU zeroed), the one-sided slopes differ and the backward
// pass must give a subgradient: a value between them.
bool matches(const Differences& d, double analytic) {
  if (close(d.central, analytic)) return true;
  const double low = std::min(d.forward, d.backward), high = std::max(d.forward, d.backward);
  const bool kink = !close(d.forward, d.backward);
  return kink && analytic >= low - kOneSidedTolerance && analytic <= high + kOneSidedTolerance;
}

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradientCase& c = GetParam();
  Trainer trainer(tiny_config(c.model, c.rows));
  fill_random_batch(trainer, c.rows, 7);
  const double loss = trainer.compute_gradients(c.rows);
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(trainer.loss(c.rows), loss, 1e-6) << "forward is deterministic";

  int checked = 0, nonzero = 0;
  for (std::size_t tensor = 0; tensor < trainer.tensor_count(); ++tensor) {
    const std::vector<float> analytic = trainer.gradient(tensor);
    const std::size_t stride = std::max<std::size_t>(1, analytic.size() / kChecksPerTensor);
    for (std::size_t index = 0; index < analytic.size(); index += stride) {
      const Differences d = differences(trainer, tensor, index, c.rows);
      EXPECT_TRUE(matches(d, analytic[index]))
          << fmt::format("{}[{}]: analytic {:.6g}, central {:.6g} (forward {:.6g}, backward {:.6g})",
                         trainer.tensor_name(tensor), index, analytic[index], d.central, d.forward, d.backward);
      ++checked;
      if (std::abs(analytic[index]) > 1e-3) ++nonzero;
    }
  }
  EXPECT_GE(checked, 10);
  EXPECT_GT(nonzero, checked / 3) << "most checked gradients should be non-trivial";
}

INSTANTIATE_TEST_SUITE_P(
    Layers, GradientCheck,
    ::testing::Values(GradientCase{"softmax_only", mlp({1, 2, 3}, {}, 4), 5},
                      GradientCase{"mlp_two_hidden", mlp({1, 3, 3}, {7, 5}, 3), 4},
                      GradientCase{"mlp_one_row", mlp({1, 2, 2}, {6}, 3), 1},
                      GradientCase{"conv_pool", cnn({2, 6, 6}, {{3, true}}, {5}, 3), 3},
                      GradientCase{"conv_conv_pool", cnn({1, 8, 8}, {{3, false}, {4, true}}, {}, 3), 2},
                      GradientCase{"two_blocks", cnn({3, 8, 8}, {{4, true}, {5, true}}, {6}, 4), 2},
                      // 8 and 16 channels: the layers choose different layouts, joined by reorders.
                      GradientCase{"reordered_layouts", cnn({3, 8, 8}, {{8, false}, {16, true}}, {6}, 4), 2}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
