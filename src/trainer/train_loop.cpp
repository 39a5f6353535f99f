// A trial's epochs: shuffled batches through train_step, then the test split
// through evaluate_step; phases reported to the caller.

#include "memsweep/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace memsweep {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t limited(std::size_t size, std::size_t limit) { return limit == 0 ? size : std::min(size, limit); }

double test_accuracy(Trainer& trainer, const SplitView& test, std::size_t batch) {
  const std::size_t pixels = test.shape.pixels();
  std::size_t correct = 0;
  for (std::size_t start = 0; start < test.size(); start += batch) {
    const std::size_t rows = std::min(batch, test.size() - start);
    std::memcpy(trainer.batch_images(rows).data(), test.images.data() + start * pixels, rows * pixels * sizeof(float));
    std::memcpy(trainer.batch_labels(rows).data(), test.labels.data() + start, rows * sizeof(std::int32_t));
    correct += trainer.evaluate_step(rows);
  }
  return static_cast<double>(correct) / static_cast<double>(test.size());
}

}  // namespace

TrainerConfig trainer_config(const TrainingSpec& spec, std::size_t train_examples, std::size_t test_examples) {
  const std::size_t batch = std::min<std::size_t>(static_cast<std::size_t>(spec.batch_size), train_examples);
  return TrainerConfig{.model = spec.model,
                       .optimizer = spec.optimizer,
                       .learning_rate = spec.learning_rate,
                       .seed = spec.seed,
                       .memory_plan = spec.memory_plan,
                       .recompute_every = spec.recompute_every,
                       .train_batch_sizes = {batch, train_examples % batch},
                       .eval_batch_sizes = {std::min(batch, test_examples), test_examples % batch}};
}

TrainingResult train_trial(const TrainingSpec& spec, const DatasetView& data, const TrainingOptions& options) {
  const ImageShape shape = spec.model.input;
  if (data.train.shape != shape || data.test.shape != shape || data.train.classes != spec.model.classes)
    throw std::invalid_argument(
        fmt::format("the trial expects {}x{}x{} images of {} classes, the dataset {} has {}x{}x{} of {}",
                    shape.channels, shape.height, shape.width, spec.model.classes, data.name, data.train.shape.channels,
                    data.train.shape.height, data.train.shape.width, data.train.classes));
  // The limits take the head of each split as a view: no copy inside the trial.
  const SplitView train = data.train.head(limited(data.train.size(), options.max_train_examples));
  const SplitView test = data.test.head(limited(data.test.size(), options.max_test_examples));

  const TrainerConfig config = trainer_config(spec, train.size(), test.size());
  Trainer trainer(config);
  const std::size_t batch = config.train_batch_sizes.front();
  BatchOrder order(train.size(), batch, spec.seed);

  TrainingResult result;
  result.memory = trainer.memory();
  const auto phase = [&](TrainingPhase p, int epoch) {
    if (options.on_phase) options.on_phase(p, epoch);
  };
  for (int epoch = 1; epoch <= spec.epochs; ++epoch) {
    const auto start = Clock::now();
    phase(TrainingPhase::train, epoch);
    order.start_epoch(epoch - 1);
    double loss_sum = 0.0;
    for (std::size_t b = 0; b < order.batch_count(); ++b) {
      if (options.stop != nullptr && options.stop->load(std::memory_order_relaxed)) {
        result.outcome = TrainingOutcome::stopped;
        result.message = fmt::format("stopped at epoch {}, step {} of {}", epoch, b + 1, order.batch_count());
        return result;
      }
      const std::size_t rows = order.batch_rows(b);
      order.gather(b, train, trainer.batch_images(rows), trainer.batch_labels(rows));
      const double loss = trainer.train_step(rows);
      if (!std::isfinite(loss)) {
        result.outcome = TrainingOutcome::diverged;
        result.message = fmt::format("the training loss became {} at epoch {}, step {} of {} (learning rate {})", loss,
                                     epoch, b + 1, order.batch_count(), spec.learning_rate);
        return result;
      }
      loss_sum += loss * static_cast<double>(rows);
    }
    phase(TrainingPhase::evaluate, epoch);
    EpochResult epoch_result{epoch, loss_sum / static_cast<double>(train.size()), test_accuracy(trainer, test, batch),
                             std::chrono::duration<double>(Clock::now() - start).count()};
    result.epochs.push_back(epoch_result);
    if (options.on_epoch_end) options.on_epoch_end(epoch_result);
  }
  return result;
}

}  // namespace memsweep
