// Trainer throughput: samples per second and ms per step of full training
// steps (forward, loss, backward, update) on one fixed synthetic batch, after
// warm-up, median of repeats; and the ceiling: the same step's matrix
// multiplies (forward, backward data, backward weights of every fully
// connected layer) as bare oneDNN matmuls. Flags and the JSON line match
// bench/torch_trainer_bench.py, so bench/run-trainer-bench.sh can interleave
// the two and bench/trainer_table.py can set them side by side.

#include "bench_numbers.hpp"
#include "memsweep/random.hpp"
#include "memsweep/trainer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <sstream>

namespace {

using Clock = std::chrono::steady_clock;
using namespace memsweep;

using memsweep::bench::int_list;
using memsweep::bench::median;

// Seconds per step of `run`, median over repeats of `steps` steps.
template <typename Run>
std::vector<double> time_steps(Run&& run, int warmup, int steps, int repeats) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> seconds;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) run();
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count() / steps);
  }
  return seconds;
}

// The three matmuls per fully connected layer of one training step, for the
// trainer's own layer sizes: {B×in}·{in×out}, {B×out}·{out×in}, {in×B}·{B×out}.
class MatmulCeiling {
 public:
  MatmulCeiling(const std::vector<std::pair<int, int>>& layers, int batch)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    for (const auto& [in, out] : layers) {
      add(batch, in, out);
      add(batch, out, in);
      add(in, batch, out);
    }
  }
  void run() {
    for (std::size_t i = 0; i < primitives_.size(); ++i) primitives_[i].execute(stream_, args_[i]);
    stream_.wait();
  }

 private:
  void add(int m, int k, int n) {
    using tag = dnnl::memory::format_tag;
    const dnnl::memory::desc a({m, k}, dnnl::memory::data_type::f32, tag::ab);
    const dnnl::memory::desc b({k, n}, dnnl::memory::data_type::f32, tag::ab);
    const dnnl::memory::desc c({m, n}, dnnl::memory::data_type::f32, tag::ab);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine_);
    primitives_.emplace_back(pd);
    args_.push_back(
        {{DNNL_ARG_SRC, filled(a)}, {DNNL_ARG_WEIGHTS, filled(b)}, {DNNL_ARG_DST, dnnl::memory(c, engine_)}});
  }
  dnnl::memory filled(const dnnl::memory::desc& desc) {
    dnnl::memory memory(desc, engine_);
    auto* data = static_cast<float*>(memory.get_data_handle());
    std::fill_n(data, desc.get_size() / sizeof(float), 0.01f);
    return memory;
  }
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<dnnl::primitive> primitives_;
  std::vector<std::unordered_map<int, dnnl::memory>> args_;
};

std::vector<std::pair<int, int>> fully_connected_layers(const ModelSpec& model) {
  const ImageShape after_conv = conv_output_shape(model);
  int in = static_cast<int>(after_conv.pixels());
  std::vector<std::pair<int, int>> layers;
  for (const int width : model.hidden) {
    layers.emplace_back(in, width);
    in = width;
  }
  layers.emplace_back(in, model.classes);
  return layers;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memsweep trainer benchmark (flags as bench/torch_trainer_bench.py)"};
  std::string arch = "mlp", input_text, hidden_text, channels_text = "32,64", optimizer = "sgd", tag;
  std::string step_threads = "fit";
  int input_size = 0, classes = 10, batch = 64, threads = 1, warmup = 20, steps = 200, repeats = 5;
  double lr = -1.0, momentum = 0.9;
  std::uint64_t seed = 1;
  app.add_option("--arch", arch)->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--input", input_text, "C,H,W or N");
  app.add_option("--input-size", input_size);
  app.add_option("--hidden", hidden_text);
  app.add_option("--channels", channels_text);
  app.add_option("--classes", classes);
  app.add_option("--batch", batch);
  app.add_option("--optimizer", optimizer)->check(CLI::IsMember({"sgd", "momentum", "adam"}));
  app.add_option("--lr", lr);
  app.add_option("--momentum", momentum);
  app.add_option("--threads", threads);
  app.add_option("--step-threads", step_threads,
                 "fit: the trainer's choice per batch size (its default); all: every thread at every batch (the "
                 "baseline)")
      ->check(CLI::IsMember({"fit", "all"}));
  app.add_option("--warmup-steps", warmup);
  app.add_option("--steps", steps);
  app.add_option("--repeats", repeats);
  app.add_option("--seed", seed);
  app.add_option("--tag", tag);
  CLI11_PARSE(app, argc, argv);

  std::vector<int> input = input_size > 0 ? std::vector<int>{input_size} : int_list(input_text);
  if (input.empty()) input = arch == "mlp" ? std::vector<int>{784} : std::vector<int>{3, 32, 32};
  std::vector<int> hidden = hidden_text.empty() ? (arch == "mlp" ? std::vector<int>{512, 256} : std::vector<int>{128})
                                                : int_list(hidden_text);
  ModelSpec model;
  model.input = input.size() == 3 ? ImageShape{input[0], input[1], input[2]} : ImageShape{1, 1, input[0]};
  model.classes = classes;
  model.hidden = hidden;
  if (arch == "cnn")
    for (const int c : int_list(channels_text)) model.conv.push_back({c, true});

  TrainerConfig config;
  config.model = model;
  config.optimizer.kind = optimizer == "sgd"        ? OptimizerKind::sgd
                          : optimizer == "momentum" ? OptimizerKind::momentum
                                                    : OptimizerKind::adam;
  config.optimizer.momentum = momentum;
  config.learning_rate = lr > 0 ? lr : (optimizer == "adam" ? 1e-3 : 0.01);
  config.seed = seed;
  config.train_batch_sizes = {static_cast<std::size_t>(batch)};
  config.step_threads = step_threads == "all" ? StepThreads::all : StepThreads::fit_to_work;

  set_thread_count(threads);
  Trainer trainer(config);
  const auto rows = static_cast<std::size_t>(batch);
  Rng rng(seed);
  for (float& x : trainer.batch_images(rows)) x = static_cast<float>(rng.normal());
  for (std::int32_t& y : trainer.batch_labels(rows)) y = static_cast<std::int32_t>(rng.uniform_int(0, classes - 1));

  double loadavg_start[1] = {0.0}, loadavg_end[1] = {0.0};
  getloadavg(loadavg_start, 1);
  double last_loss = 0.0;
  const std::vector<double> trainer_seconds =
      time_steps([&] { last_loss = trainer.train_step(rows); }, warmup, steps, repeats);
  MatmulCeiling ceiling(fully_connected_layers(model), batch);
  const std::vector<double> ceiling_seconds = time_steps([&] { ceiling.run(); }, warmup, steps, repeats);
  getloadavg(loadavg_end, 1);

  const double step = median(trainer_seconds);
  const double matmuls = median(ceiling_seconds);
  std::vector<double> per_repeat;
  for (const double s : trainer_seconds) per_repeat.push_back(batch / s);
  const std::string arch_name =
      arch == "mlp"
          ? fmt::format("{}-{}-{}", model.input.pixels(), fmt::join(hidden, "-"), classes)
          : fmt::format("cnn {}x{}x{} c{} h{}", input[0], input[1], input[2], fmt::join(int_list(channels_text), "-"),
                        hidden.empty() ? std::string("none") : fmt::format("{}", fmt::join(hidden, "-")));
  const dnnl_version_t* version = dnnl_version();
  fmt::print(
      "{{\"framework\": \"memsweep\", \"version\": \"oneDNN {}.{}.{}\", \"threads\": {}, \"arch\": \"{}\", "
      "\"arch_kind\": \"{}\", \"input\": [{}], \"classes\": {}, \"batch\": {}, \"optimizer\": \"{}\", \"lr\": {}, "
      "\"warmup_steps\": {}, \"steps\": {}, \"samples_per_sec\": {:.1f}, \"ms_per_step\": {:.4f}, "
      "\"repeats\": [{:.1f}], \"final_loss\": {:.6g}, \"matmul_ms_per_step\": {:.4f}, "
      "\"matmul_samples_per_sec\": {:.1f}, \"fraction_of_matmul_ceiling\": {:.3f}, \"loadavg\": [{:.2f}, {:.2f}], "
      "\"step_threads\": \"{}\", \"threads_used\": {}{}}}\n",
      version->major, version->minor, version->patch, threads, arch_name, arch, fmt::join(input, ", "), classes, batch,
      optimizer, config.learning_rate, warmup, steps, batch / step, step * 1e3, fmt::join(per_repeat, ", "), last_loss,
      matmuls * 1e3, batch / matmuls, matmuls / step, loadavg_start[0], loadavg_end[0], step_threads,
      trainer.step_threads(rows), tag.empty() ? std::string() : fmt::format(", \"tag\": \"{}\"", tag));
  return 0;
}
