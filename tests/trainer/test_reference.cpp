// One training step of the oneDNN trainer against a plain implementation
// written with loops, in double precision: a 2-layer MLP, and the optimizers'
// update rules.

#include "trainer/trainer_fixtures.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace memsweep::testing {
namespace {

struct Mlp2 {
  int in, hidden, out;
  std::vector<double> w1, b1, w2, b2;  // w1: hidden × in, w2: out × hidden (row-major, "oi")
};

// Gradients of the mean softmax cross-entropy of a 2-layer ReLU MLP.
struct Mlp2Gradients {
  std::vector<double> w1, b1, w2, b2;
  double loss = 0.0;
};

Mlp2Gradients reference_gradients(const Mlp2& net, std::span<const float> x, std::span<const std::int32_t> labels) {
  const std::size_t rows = labels.size();
  Mlp2Gradients g{std::vector<double>(net.w1.size()), std::vector<double>(net.b1.size()),
                  std::vector<double>(net.w2.size()), std::vector<double>(net.b2.size()), 0.0};
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<double> h(static_cast<std::size_t>(net.hidden)), z(static_cast<std::size_t>(net.out));
    for (int j = 0; j < net.hidden; ++j) {
      double sum = net.b1[j];
      for (int i = 0; i < net.in; ++i) sum += net.w1[j * net.in + i] * x[r * net.in + i];
      h[j] = std::max(0.0, sum);
    }
    double largest = -1e300;
    for (int k = 0; k < net.out; ++k) {
      double sum = net.b2[k];
      for (int j = 0; j < net.hidden; ++j) sum += net.w2[k * net.hidden + j] * h[j];
      z[k] = sum;
      largest = std::max(largest, sum);
    }
    double norm = 0.0;
    for (double& v : z) norm += std::exp(v - largest);
    std::vector<double> dz(static_cast<std::size_t>(net.out));
    for (int k = 0; k < net.out; ++k) {
      const double p = std::exp(z[k] - largest) / norm;
      dz[k] = (p - (k == labels[r] ? 1.0 : 0.0)) / static_cast<double>(rows);
      if (k == labels[r]) g.loss -= std::log(p) / static_cast<double>(rows);
    }
    std::vector<double> dh(static_cast<std::size_t>(net.hidden), 0.0);
    for (int k = 0; k < net.out; ++k) {
      g.b2[k] += dz[k];
      for (int j = 0; j < net.hidden; ++j) {
        g.w2[k * net.hidden + j] += dz[k] * h[j];
        dh[j] += dz[k] * net.w2[k * net.hidden + j];
      }
    }
    for (int j = 0; j < net.hidden; ++j) {
      if (h[j] <= 0.0) continue;
      g.b1[j] += dh[j];
      for (int i = 0; i < net.in; ++i) g.w1[j * net.in + i] += dh[j] * x[r * net.in + i];
    }
  }
  return g;
}

std::vector<double> as_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

void expect_close(const std::vector<float>& actual, const std::vector<double>& expected, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (std::size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-5 + 1e-4 * std::abs(expected[i])) << what << "[" << i << "]";
}

constexpr int kIn = 12, kHidden = 9, kOut = 4;
constexpr std::size_t kRows = 6;

// Tensors in the order the trainer registers them: fc1.weights, fc1.bias,
// output.weights, output.bias.
Mlp2 read_network(const Trainer& trainer) {
  return Mlp2{kIn,
              kHidden,
              kOut,
              as_double(trainer.parameter(0)),
              as_double(trainer.parameter(1)),
              as_double(trainer.parameter(2)),
              as_double(trainer.parameter(3))};
}

TEST(ReferenceMlp, OneSgdStepGivesTheSameWeights) {
  const double lr = 0.25;
  Trainer trainer(tiny_config(mlp({1, 3, 4}, {kHidden}, kOut), kRows, OptimizerKind::sgd, lr));
  ASSERT_EQ(trainer.tensor_count(), 4u);
  ASSERT_EQ(trainer.tensor_name(0), "fc1.weights");
  // Non-zero biases, so that the reference's bias path is exercised too.
  trainer.set_parameter(1, std::vector<float>{0.1f, -0.1f, 0.2f, 0.0f, 0.05f, -0.2f, 0.3f, 0.1f, -0.05f});
  fill_random_batch(trainer, kRows, 3);
  const Mlp2 before = read_network(trainer);
  const auto images = trainer.batch_images(kRows);
  const auto labels = trainer.batch_labels(kRows);
  const Mlp2Gradients g = reference_gradients(before, images, labels);

  const double loss = trainer.train_step(kRows);
  EXPECT_NEAR(loss, g.loss, 1e-5);
  const auto updated = [&](const std::vector<double>& w, const std::vector<double>& dw) {
    std::vector<double> out(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) out[i] = w[i] - lr * dw[i];
    return out;
  };
  expect_close(trainer.parameter(0), updated(before.w1, g.w1), "fc1.weights");
  expect_close(trainer.parameter(1), updated(before.b1, g.b1), "fc1.bias");
  expect_close(trainer.parameter(2), updated(before.w2, g.w2), "output.weights");
  expect_close(trainer.parameter(3), updated(before.b2, g.b2), "output.bias");
}

// The optimizers' update rules, step by step, from the trainer's own gradients.
class OptimizerRule : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(OptimizerRule, ThreeStepsFollowTheTextbookFormula) {
  const OptimizerKind kind = GetParam();
  TrainerConfig config = tiny_config(mlp({1, 3, 4}, {kHidden}, kOut), kRows, kind, 0.05);
  config.optimizer.momentum = 0.8;
  config.optimizer.beta1 = 0.85;
  config.optimizer.beta2 = 0.99;
  config.optimizer.epsilon = 1e-6;
  Trainer trainer(config);
  fill_random_batch(trainer, kRows, 5);
  const std::size_t tensors = trainer.tensor_count();
  std::vector<std::vector<double>> w(tensors), m(tensors), v(tensors);
  for (std::size_t t = 0; t < tensors; ++t) {
    w[t] = as_double(trainer.parameter(t));
    m[t].assign(w[t].size(), 0.0);
    v[t].assign(w[t].size(), 0.0);
  }
  const double lr = config.learning_rate, mu = config.optimizer.momentum, b1 = config.optimizer.beta1,
               b2 = config.optimizer.beta2, eps = config.optimizer.epsilon;
  for (int step = 1; step <= 3; ++step) {
    trainer.compute_gradients(kRows);
    for (std::size_t t = 0; t < tensors; ++t) {
      const std::vector<float> g = trainer.gradient(t);
      for (std::size_t i = 0; i < g.size(); ++i) {
        switch (kind) {
          case OptimizerKind::sgd: w[t][i] -= lr * g[i]; break;
          case OptimizerKind::momentum:
            m[t][i] = mu * m[t][i] + g[i];
            w[t][i] -= lr * m[t][i];
            break;
          case OptimizerKind::adam: {
            m[t][i] = b1 * m[t][i] + (1 - b1) * g[i];
            v[t][i] = b2 * v[t][i] + (1 - b2) * g[i] * g[i];
            const double m_hat = m[t][i] / (1 - std::pow(b1, step));
            const double v_hat = v[t][i] / (1 - std::pow(b2, step));
            w[t][i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
            break;
          }
        }
      }
    }
    trainer.train_step(kRows);
    for (std::size_t t = 0; t < tensors; ++t) expect_close(trainer.parameter(t), w[t], trainer.tensor_name(t).c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, OptimizerRule,
                         ::testing::Values(OptimizerKind::sgd, OptimizerKind::momentum, OptimizerKind::adam),
                         [](const auto& param_info) { return std::string(optimizer_name(param_info.param)); });

}  // namespace
}  // namespace memsweep::testing
