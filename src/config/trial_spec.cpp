#include "memsweep/config.hpp"
#include "memsweep/random.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace memsweep {

std::string_view model_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::mlp: return "mlp";
    case ModelKind::cnn: return "cnn";
    case ModelKind::alexnet: return "alexnet";
  }
  return "unknown";
}

std::string_view optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::momentum: return "momentum";
    case OptimizerKind::adam: return "adam";
  }
  return "unknown";
}

std::string TrialSpec::summary_text() const {
  std::string text =
      fmt::format("{} {} {} lr={:g} batch={} epochs={} hidden=[{}]", dataset_name(dataset.kind), model_name(model),
                  optimizer_name(optimizer.kind), learning_rate, batch_size, epochs, fmt::join(hidden, ","));
  if (model == ModelKind::cnn) text += fmt::format(" channels=[{}]", fmt::join(channels, ","));
  if (repeat > 0) text += fmt::format(" repeat={}", repeat);
  return text;
}

std::string TrialSpec::canonical_text() const {
  // fmt's "{}" prints the shortest text that reads back as the same double,
  // so equal values always give equal text.
  std::string text = fmt::format("dataset={}", dataset_name(dataset.kind));
  if (dataset.kind == DatasetKind::synthetic) {
    const SyntheticSpec& s = dataset.synthetic;
    text += fmt::format(";synthetic={}x{}x{}/{}/{}/{}/{}/{}", s.shape.channels, s.shape.height, s.shape.width,
                        s.classes, s.train_size, s.test_size, s.noise, s.seed);
  }
  text += fmt::format(";model={}", model_name(model));
  if (model == ModelKind::cnn) text += fmt::format(";channels={}", fmt::join(channels, "-"));
  text += fmt::format(";optimizer={}", optimizer_name(optimizer.kind));
  if (optimizer.kind == OptimizerKind::momentum) text += fmt::format(";momentum={}", optimizer.momentum);
  if (optimizer.kind == OptimizerKind::adam)
    text += fmt::format(";beta1={};beta2={};epsilon={}", optimizer.beta1, optimizer.beta2, optimizer.epsilon);
  text += fmt::format(";learning_rate={};epochs={};batch_size={};hidden={};seed={};repeat={}", learning_rate, epochs,
                      batch_size, fmt::join(hidden, "-"), seed, repeat);
  return text;
}

std::uint64_t TrialSpec::training_seed() const {
  return repeat == 0 ? seed : mix_seed(seed, static_cast<std::uint64_t>(repeat));
}

std::string trial_id(const TrialSpec& trial) {
  constexpr int kIdHexDigits = 12;  // 48 bits: collisions stay improbable far past 10^5 trials
  const std::uint64_t hash = stable_hash(trial.canonical_text());
  return fmt::format("{:0{}x}", hash >> (64 - 4 * kIdHexDigits), kIdHexDigits);
}

ConfigError::ConfigError(std::string file, int line, std::string key, const std::string& message)
    : InputError(key.empty() ? fmt::format("{}:{}: {}", file, line, message)
                             : fmt::format("{}:{}: {}: {}", file, line, key, message)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)) {}

}  // namespace memsweep
