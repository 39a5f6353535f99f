#include "memsweep/trial_process_cost.hpp"

#include "memsweep/byte_size.hpp"
#include "memsweep/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace memsweep {
namespace {

constexpr std::size_t kTerms = 5;
using Terms = std::array<double, kTerms>;

// The cost's terms for one shape, in the order of the coefficients.
Terms terms(const TrialProcessShape& shape) {
  const double layers = shape.layers - 2;
  const double batch_sizes = shape.batch_sizes - 2;
  return {1.0, layers, batch_sizes, layers * batch_sizes, shape.convolutions ? 1.0 : 0.0};
}

// Solves the system `a` x = `b` by elimination with partial pivoting;
// false when it is singular (the measures do not determine every term).
bool solve(std::array<Terms, kTerms> a, Terms b, Terms& x) {
  for (std::size_t column = 0; column < kTerms; ++column) {
    std::size_t pivot = column;
    for (std::size_t row = column + 1; row < kTerms; ++row)
      if (std::abs(a[row][column]) > std::abs(a[pivot][column])) pivot = row;
    if (std::abs(a[pivot][column]) < 1e-9) return false;
    std::swap(a[pivot], a[column]);
    std::swap(b[pivot], b[column]);
    for (std::size_t row = column + 1; row < kTerms; ++row) {
      const double factor = a[row][column] / a[column][column];
      for (std::size_t k = column; k < kTerms; ++k) a[row][k] -= factor * a[column][k];
      b[row] -= factor * b[column];
    }
  }
  for (std::size_t row = kTerms; row-- > 0;) {
    double sum = b[row];
    for (std::size_t k = row + 1; k < kTerms; ++k) sum -= a[row][k] * x[k];
    x[row] = sum / a[row][row];
  }
  return true;
}

TrialSpec calibration_trial(ModelKind model, std::vector<int> hidden, std::vector<int> channels, int batch) {
  TrialSpec trial;
  trial.dataset.kind = DatasetKind::synthetic;
  // Small splits: the cost does not grow with the data. 256 and 64 are
  // multiples of 8 (one batch size each) and not of 7 (two each).
  trial.dataset.synthetic.train_size = 256;
  trial.dataset.synthetic.test_size = 64;
  trial.model = model;
  trial.hidden = std::move(hidden);
  trial.channels = std::move(channels);
  trial.batch_size = batch;
  trial.epochs = 1;
  trial.optimizer.kind = OptimizerKind::sgd;
  trial.learning_rate = 0.01;
  trial.origin = "calibration";
  trial.id = trial_id(trial);
  return trial;
}

}  // namespace

TrialProcessShape trial_process_shape(const TrialSpec& trial, ExampleCounts counts) {
  const ModelSpec model = model_spec(trial);
  const TrainerConfig config = trainer_config(training_spec(trial), counts.train, counts.test);
  TrialProcessShape shape;
  shape.layers = static_cast<int>(model.conv.size() + model.hidden.size()) + 1;
  // A split's last batch, when it is short, is a batch size of its own;
  // an empty one (0) is none.
  const auto prepared = [](const std::vector<std::size_t>& sizes) {
    return static_cast<int>(std::count_if(sizes.begin(), sizes.end(), [](std::size_t rows) { return rows > 0; }));
  };
  shape.batch_sizes = prepared(config.train_batch_sizes) + prepared(config.eval_batch_sizes);
  shape.convolutions = !model.conv.empty();
  return shape;
}

std::uint64_t trial_process_bytes(const TrialProcessCost& cost, const TrialProcessShape& shape) {
  const Terms t = terms(shape);
  const double bytes = cost.base_bytes * t[0] + cost.per_layer_bytes * t[1] + cost.per_batch_size_bytes * t[2] +
                       cost.per_layer_batch_size_bytes * t[3] + cost.convolution_bytes * t[4];
  return bytes > 0.0 ? static_cast<std::uint64_t>(std::llround(bytes)) : 0;
}

EstimatePart trial_process_part(const TrialProcessCost& cost, const TrialSpec& trial, ExampleCounts counts) {
  const TrialProcessShape shape = trial_process_shape(trial, counts);
  return {std::string(estimate_part::kTrialProcess), trial_process_bytes(cost, shape),
          fmt::format("kernels, threads, first-use pages of a fresh trial process ({} layers, {} batch sizes{}): {}",
                      shape.layers, shape.batch_sizes, shape.convolutions ? ", convolutions" : "", cost.source)};
}

std::string describe_trial_process_cost(const TrialProcessCost& cost) {
  const auto size = [](double bytes) { return format_byte_size(static_cast<std::uint64_t>(bytes)); };
  return fmt::format("{} + {} a layer + {} a batch size + {} a layer and batch size + {} with convolutions; {}",
                     size(cost.base_bytes), size(cost.per_layer_bytes), size(cost.per_batch_size_bytes),
                     size(cost.per_layer_batch_size_bytes), size(cost.convolution_bytes), cost.source);
}

TrialProcessCost builtin_trial_process_cost() {
  // memsweep estimate --calibrate --calibration-runs 9, one thread (docs/estimate.md).
  TrialProcessCost cost;
  cost.base_bytes = 4'776'608;
  cost.per_layer_bytes = 123'538;
  cost.per_batch_size_bytes = 353'052;
  cost.per_layer_batch_size_bytes = 83'657;
  cost.convolution_bytes = 8'534'894;
  cost.cpu = "AMD EPYC (Zen 5)";
  cost.threads = 1;
  cost.source = "built in, measured on a 2-vCPU AMD EPYC (Zen 5); memsweep estimate --calibrate measures this machine";
  return cost;
}

std::vector<TrialSpec> calibration_trials() {
  const std::vector<int> deep(8, 64);
  return {calibration_trial(ModelKind::mlp, {64}, {}, 8),    // base
          calibration_trial(ModelKind::mlp, deep, {}, 8),    // 7 layers more
          calibration_trial(ModelKind::mlp, {64}, {}, 7),    // 2 batch sizes more
          calibration_trial(ModelKind::mlp, deep, {}, 7),    // both: each layer's primitives per batch size
          calibration_trial(ModelKind::cnn, {32}, {8}, 8)};  // convolutions, 1 layer more
}

TrialProcessCost fit_trial_process_cost(const std::vector<CalibrationMeasure>& measures) {
  std::array<Terms, kTerms> normal{};
  Terms right{};
  for (const CalibrationMeasure& measure : measures) {
    const Terms t = terms(measure.shape);
    for (std::size_t i = 0; i < kTerms; ++i) {
      right[i] += t[i] * measure.beyond_estimate_bytes;
      for (std::size_t j = 0; j < kTerms; ++j) normal[i][j] += t[i] * t[j];
    }
  }
  Terms x{};
  if (!solve(normal, right, x))
    throw std::invalid_argument(fmt::format(
        "{} calibration measures do not determine the trial process's cost: they must vary the layers, the batch "
        "sizes, both at once, and the convolutions",
        measures.size()));
  TrialProcessCost cost;
  cost.base_bytes = std::max(0.0, x[0]);
  cost.per_layer_bytes = std::max(0.0, x[1]);
  cost.per_batch_size_bytes = std::max(0.0, x[2]);
  cost.per_layer_batch_size_bytes = std::max(0.0, x[3]);
  cost.convolution_bytes = std::max(0.0, x[4]);
  return cost;
}

}  // namespace memsweep
