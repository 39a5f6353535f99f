// keep, reuse and recompute side by side for one shape: the estimate's
// total, the measured peak - baseline of a Trainer built and stepped (its
// kernels generated beforehand, as a sweep's later trials find them cached),
// and the median step time; ratios against keep measured in the same run.
//   memsweep_bench_memory_plans --model alexnet --input 3,32,32 --hidden 1024,1024 --batch 64 --steps 5
// Each plan trains the same batches, so their losses must be equal.

#include "bench_numbers.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/random.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/trainer.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>

namespace {

using namespace memsweep;
using Clock = std::chrono::steady_clock;

using memsweep::bench::int_list;
using memsweep::bench::median;

void fill(Trainer& trainer, std::size_t rows, std::uint64_t seed) {
  Rng rng(seed);
  for (float& pixel : trainer.batch_images(rows)) pixel = static_cast<float>(rng.uniform01());
  for (std::int32_t& label : trainer.batch_labels(rows))
    label = static_cast<std::int32_t>(rng.uniform_int(0, trainer.config().model.classes - 1));
}

struct Figures {
  double estimate_mib = 0, measured_mib = 0;
  std::vector<double> step_ms;
  std::vector<double> losses;
};

// The trainer built and stepped twice inside a sampler region: its
// peak - baseline. The trainer stays alive for the timed rounds.
std::unique_ptr<Trainer> build_and_measure(const TrainerConfig& config, Figures& f) {
  f.estimate_mib = static_cast<double>(estimate_trainer(config).total()) / (1024.0 * 1024.0);
  Sampler sampler(SamplerOptions{}, make_proc_memory_probe(), nullptr);
  sampler.begin_region();
  auto trainer = std::make_unique<Trainer>(config);
  const std::size_t rows = config.train_batch_sizes.front();
  for (int i = 0; i < 2; ++i) {
    fill(*trainer, rows, static_cast<std::uint64_t>(i));
    f.losses.push_back(trainer->train_step(rows));
  }
  const RegionSummary region = sampler.end_region();
  f.measured_mib = static_cast<double>(region.footprint_bytes) / (1024.0 * 1024.0);
  return trainer;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memory plans: estimate, measured peak - baseline and step time"};
  std::string model = "mlp", input = "1,28,28", hidden = "512,256", channels;
  int batch = 64, steps = 5, every = kRecomputeEveryDefault;
  app.add_option("--model", model, "mlp, cnn or alexnet");
  app.add_option("--input", input, "channels,height,width");
  app.add_option("--hidden", hidden, "hidden widths");
  app.add_option("--channels", channels, "cnn: conv channels (each pooled)");
  app.add_option("--batch", batch);
  app.add_option("--steps", steps, "timed rounds (one step of each plan per round)");
  app.add_option("--recompute-every", every);
  CLI11_PARSE(app, argc, argv);

  const std::vector<int> shape = int_list(input);
  TrainerConfig config;
  config.model.input = {shape.at(0), shape.at(1), shape.at(2)};
  config.model.hidden = int_list(hidden);
  if (model == "alexnet") config.model.conv = alexnet_conv_blocks();
  if (model == "cnn")
    for (const int c : int_list(channels)) config.model.conv.push_back({c, true});
  config.optimizer.kind = OptimizerKind::sgd;
  config.learning_rate = 0.01;
  config.seed = 1;
  config.recompute_every = every;
  config.train_batch_sizes = {static_cast<std::size_t>(batch)};
  {
    // Generates and caches the kernels every plan uses, so no plan pays for them.
    Trainer warm(config);
    fill(warm, static_cast<std::size_t>(batch), 0);
    warm.train_step(static_cast<std::size_t>(batch));
  }
  constexpr MemoryPlan kPlans[] = {MemoryPlan::keep, MemoryPlan::reuse, MemoryPlan::recompute};
  Figures figures[3];
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (int p = 0; p < 3; ++p) {
    config.memory_plan = kPlans[p];
    trainers.push_back(build_and_measure(config, figures[p]));
  }
  // Timed in rounds, one step of each plan per round, so a change in the
  // machine's load touches every plan alike.
  const auto rows = static_cast<std::size_t>(batch);
  for (int round = 0; round < steps; ++round) {
    for (int p = 0; p < 3; ++p) {
      fill(*trainers[p], rows, static_cast<std::uint64_t>(2 + round));
      const auto start = Clock::now();
      figures[p].losses.push_back(trainers[p]->train_step(rows));
      figures[p].step_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
  }
  fmt::print("{} {} hidden {} batch {}: peak - baseline of building and 2 steps; step time median of {} rounds\n",
             model, input, hidden, batch, steps);
  fmt::print(
      "| plan | estimate MiB | measured MiB | measured/estimate | vs keep | step ms | vs keep | losses equal keep |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  const Figures& keep = figures[0];
  for (int p = 0; p < 3; ++p) {
    const Figures& f = figures[p];
    fmt::print("| {} | {:.1f} | {:.1f} | {:.3f} | {:.2f} | {:.1f} | {:.2f} | {} |\n", memory_plan_name(kPlans[p]),
               f.estimate_mib, f.measured_mib, f.measured_mib / f.estimate_mib, f.measured_mib / keep.measured_mib,
               median(f.step_ms), median(f.step_ms) / median(keep.step_ms), f.losses == keep.losses ? "yes" : "no");
  }
  return 0;
}
