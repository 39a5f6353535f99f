#pragma once
// Small networks and batches for the trainer's tests.

#include "memsweep/random.hpp"
#include "memsweep/trainer.hpp"

#include <cstdint>
#include <vector>

namespace memsweep::testing {

inline TrainerConfig tiny_config(const ModelSpec& model, std::size_t rows, OptimizerKind optimizer = OptimizerKind::sgd,
                                 double learning_rate = 0.1) {
  TrainerConfig config;
  config.model = model;
  config.optimizer.kind = optimizer;
  config.learning_rate = learning_rate;
  config.seed = 42;
  config.train_batch_sizes = {rows};
  return config;
}

// Uniform [0, 1) pixels and labels cycling through the classes, seeded.
inline void fill_random_batch(Trainer& trainer, std::size_t rows, std::uint64_t seed) {
  Rng rng(seed);
  for (float& pixel : trainer.batch_images(rows)) pixel = static_cast<float>(rng.uniform01());
  const int classes = trainer.config().model.classes;
  auto labels = trainer.batch_labels(rows);
  for (std::size_t row = 0; row < rows; ++row) labels[row] = static_cast<std::int32_t>(rng.uniform_int(0, classes - 1));
}

inline ModelSpec mlp(ImageShape input, std::vector<int> hidden, int classes) {
  return ModelSpec{input, classes, {}, std::move(hidden)};
}

inline ModelSpec cnn(ImageShape input, std::vector<ConvBlock> conv, std::vector<int> hidden, int classes) {
  return ModelSpec{input, classes, std::move(conv), std::move(hidden)};
}

}  // namespace memsweep::testing
