#include "estimate/measured_trial.hpp"

#include "memsweep/estimate.hpp"
#include "memsweep/trainer.hpp"

#include <stdexcept>

namespace memsweep::testing {

double MeasuredTrial::ratio() const {
  return static_cast<double>(region.footprint_bytes) / static_cast<double>(predicted_bytes);
}

MeasuredTrial measure_trial(const TrialSpec& trial, const Dataset& data, MemoryPlan plan) {
  MeasuredTrial result;
  TrainingSpec spec = training_spec(trial);
  spec.memory_plan = plan;
  const ExampleCounts counts = example_counts(data);
  result.predicted_bytes = estimate_trainer(trainer_config(spec, counts.train, counts.test)).total();
  Sampler sampler(SamplerOptions{}, make_proc_memory_probe(), nullptr);
  sampler.begin_region();
  const TrainingResult training = train_trial(spec, data);
  result.region = sampler.end_region();
  if (training.outcome != TrainingOutcome::completed)
    throw std::runtime_error("the measured trial did not complete: " + training.message);
  return result;
}

TrialSpec mlp_trial(const Dataset& data, std::vector<int> hidden, int batch) {
  TrialSpec trial;
  trial.id = "measured";
  trial.dataset = data.spec;
  trial.model = ModelKind::mlp;
  trial.hidden = std::move(hidden);
  trial.batch_size = batch;
  trial.epochs = 1;
  trial.learning_rate = 0.01;
  return trial;
}

void warm_up_trainer(const Dataset& data) {
  constexpr int kTinyWidth = 8;
  constexpr int kTinyBatch = 16;
  train_trial(training_spec(mlp_trial(data, {kTinyWidth}, kTinyBatch)), data);
}

}  // namespace memsweep::testing
