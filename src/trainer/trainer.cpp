#include "memsweep/trainer.hpp"

#include "trainer/aligned_buffer.hpp"
#include "trainer/dnnl_step.hpp"
#include "trainer/loss.hpp"
#include "trainer/optimizer.hpp"
#include "trainer/parameters.hpp"
#include "trainer/plan.hpp"
#include "trainer/thread_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace memsweep {

using namespace trainer::detail;

struct Trainer::Impl : LayerGradientsReady {
  explicit Impl(const TrainerConfig& c)
      : config(c),
        engine(dnnl_call("creating the CPU engine", [] { return dnnl::engine(dnnl::engine::kind::cpu, 0); })),
        stream(engine),
        optimizer(c.optimizer, c.learning_rate) {}

  // The threads a step of `p` runs with: those its primitives were made for.
  int threads_for(const Plan& p) const { return plan_threads(config, p.rows(), p.with_backward(), threads); }

  Plan& plan(std::size_t rows) {
    for (const auto& p : plans)
      if (p->rows() == rows) return *p;
    throw std::invalid_argument(fmt::format("no plan for a batch of {} rows", rows));
  }

  Plan& training_plan(std::size_t rows) {
    Plan& p = plan(rows);
    if (!p.with_backward()) throw std::invalid_argument(fmt::format("batches of {} rows are for evaluation", rows));
    return p;
  }

  // Updates one layer as soon as the backward pass is done with it.
  void gradients_ready(std::size_t weights, std::size_t bias) override {
    const auto [offset, count] = store.span_of(weights, bias);
    const int copies = optimizer.state_copies();
    optimizer.update(store.values().subspan(offset, count), store.gradients().subspan(offset, count),
                     copies > 0 ? store.state(0).subspan(offset, count) : std::span<float>{},
                     copies > 1 ? store.state(1).subspan(offset, count) : std::span<float>{});
  }

  double forward_loss(Plan& p, bool with_gradient) {
    p.forward(stream);
    return softmax_cross_entropy(p.probabilities(), p.labels().data(), p.rows(), config.model.classes,
                                 with_gradient ? p.logits_gradient() : nullptr);
  }

  TrainerConfig config;
  int threads = threads_given();  // the most a step may use (see step_threads)
  dnnl::engine engine;
  dnnl::stream stream;
  ParameterStore store;
  Optimizer optimizer;
  dnnl::memory scratchpad;
  std::size_t scratchpad_bytes = 0;
  std::vector<std::unique_ptr<Plan>> plans;
  AlignedBuffer arena;  // under reuse and recompute: every plan's transient buffers
};

namespace {

std::vector<PlanLayout> plan_layouts(const TrainerConfig& config, ParameterStore& store, const dnnl::engine& engine) {
  std::vector<PlanLayout> layouts;
  const auto sizes = prepared_batch_sizes(config);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    // Descriptors made under the plan's own thread count: some of oneDNN's
    // fix their threads and per-thread scratchpads here.
    const ScopedThreadCount threads(plan_threads(config, sizes[i].first, sizes[i].second, threads_given()));
    layouts.push_back(make_plan_layout(config.model, sizes[i].first, sizes[i].second, store, i == 0, engine));
  }
  return layouts;
}

// One scratchpad for every primitive: they run one after another.
std::size_t scratchpad_bytes(const std::vector<PlanLayout>& layouts) {
  std::size_t most = 0;
  for (const PlanLayout& layout : layouts) most = std::max(most, layout.scratchpad_bytes);
  return most;
}

dnnl::memory::desc scratchpad_desc(std::size_t bytes) {
  return dnnl::memory::desc({static_cast<dnnl::memory::dim>(std::max<std::size_t>(bytes, 1))},
                            dnnl::memory::data_type::u8, dnnl::memory::format_tag::x);
}

PlanMemory plan_memory(const TrainerConfig& config) { return {config.memory_plan, config.recompute_every}; }

// Plans of different row counts never run at the same time: one arena,
// sized for the largest, serves them all.
std::size_t arena_bytes(const std::vector<std::unique_ptr<Plan>>& plans) {
  std::size_t most = 0;
  for (const auto& p : plans) most = std::max(most, p->arena_bytes());
  return most;
}

// MEMSWEEP_POISON_FREED_BUFFERS=1 (read when a Trainer is built): under
// reuse and recompute, each buffer's bytes are filled with NaN as soon as
// its last step has run, so a lifetime planned too short shows in the loss.
// For tests; it costs a pass over every buffer each step.
bool poison_freed_buffers() {
  const char* value = std::getenv("MEMSWEEP_POISON_FREED_BUFFERS");
  return value != nullptr && std::string_view(value) != "" && std::string_view(value) != "0";
}

TrainerMemory account(const ParameterStore& store, int state_copies, const std::vector<std::unique_ptr<Plan>>& plans,
                      std::size_t scratchpad, MemoryPlan memory_plan) {
  TrainerMemory m;
  m.parameters = store.buffer_bytes();
  m.gradients = store.buffer_bytes();
  m.optimizer_state = static_cast<std::size_t>(state_copies) * store.buffer_bytes();
  m.scratchpad = scratchpad;
  if (memory_plan != MemoryPlan::keep) {
    // The labels stay outside the arena: int32, read by the loss on the CPU.
    for (const auto& p : plans) m.input_batch += p->label_bytes();
    m.step_arena = arena_bytes(plans);
    return m;
  }
  for (const auto& p : plans) {
    m.activations += p->activation_bytes();
    m.activation_gradients += p->activation_gradient_bytes();
    m.input_batch += p->input_bytes();
    m.reordered_weights += p->reordered_weight_bytes();
    m.workspace += p->workspace_bytes();
  }
  return m;
}

}  // namespace

// Each distinct row count once, the first training size first (it fixes the
// parameters' layouts); a size used for training gets a backward pass too.
std::vector<std::pair<std::size_t, bool>> prepared_batch_sizes(const TrainerConfig& config) {
  std::vector<std::pair<std::size_t, bool>> sizes;
  const auto want = [&](std::size_t rows, bool train) {
    if (rows == 0) return;
    const auto it = std::find_if(sizes.begin(), sizes.end(), [&](const auto& s) { return s.first == rows; });
    if (it == sizes.end())
      sizes.emplace_back(rows, train);
    else
      it->second = it->second || train;
  };
  for (const std::size_t rows : config.train_batch_sizes) want(rows, true);
  for (const std::size_t rows : config.eval_batch_sizes) want(rows, false);
  if (sizes.empty()) throw std::invalid_argument("a trainer needs at least one batch size");
  return sizes;
}

Trainer::Trainer(const TrainerConfig& config) : impl_(std::make_unique<Impl>(config)) {
  const std::vector<PlanLayout> layouts = plan_layouts(config, impl_->store, impl_->engine);
  {
    // The weights' reorders too: nothing a trainer runs uses more threads than its main batch chose.
    const ScopedThreadCount threads(
        plan_threads(config, layouts.front().rows, layouts.front().with_backward, impl_->threads));
    impl_->store.allocate(impl_->optimizer.state_copies(), config.seed, impl_->engine, impl_->stream);
  }
  impl_->scratchpad_bytes = scratchpad_bytes(layouts);
  impl_->scratchpad = dnnl::memory(scratchpad_desc(impl_->scratchpad_bytes), impl_->engine);
  for (const PlanLayout& layout : layouts) {
    const ScopedThreadCount threads(plan_threads(config, layout.rows, layout.with_backward, impl_->threads));
    impl_->plans.push_back(std::make_unique<Plan>(layout, impl_->store, impl_->scratchpad, impl_->engine,
                                                  PlanPurpose::train, plan_memory(config)));
  }
  bind_arena();
}

// Once, before the first step: the arena's bytes (zeroed, so touched now,
// not during a step) and every plan's buffers pointed into them.
void Trainer::bind_arena() {
  if (impl_->config.memory_plan == MemoryPlan::keep) return;
  impl_->arena = AlignedBuffer((arena_bytes(impl_->plans) + sizeof(float) - 1) / sizeof(float));
  const bool poison = poison_freed_buffers();
  for (const auto& p : impl_->plans) p->bind_arena(reinterpret_cast<std::byte*>(impl_->arena.data()), poison);
}

TrainerMemory predict_trainer_memory(const TrainerConfig& config) {
  const dnnl::engine engine =
      dnnl_call("creating the CPU engine", [] { return dnnl::engine(dnnl::engine::kind::cpu, 0); });
  ParameterStore store;
  const std::vector<PlanLayout> layouts = plan_layouts(config, store, engine);
  const std::size_t scratchpad = scratchpad_bytes(layouts);
  const dnnl::memory no_scratchpad(scratchpad_desc(scratchpad), engine, DNNL_MEMORY_NONE);
  std::vector<std::unique_ptr<Plan>> plans;
  for (const PlanLayout& layout : layouts)
    plans.push_back(
        std::make_unique<Plan>(layout, store, no_scratchpad, engine, PlanPurpose::predict, plan_memory(config)));
  return account(store, Optimizer(config.optimizer, config.learning_rate).state_copies(), plans, scratchpad,
                 config.memory_plan);
}

Trainer::~Trainer() = default;

std::span<float> Trainer::batch_images(std::size_t rows) { return impl_->plan(rows).images(); }
std::span<std::int32_t> Trainer::batch_labels(std::size_t rows) { return impl_->plan(rows).labels(); }

double Trainer::train_step(std::size_t rows) {
  Plan& p = impl_->training_plan(rows);
  const ScopedThreadCount threads(impl_->threads_for(p));
  const double loss = impl_->forward_loss(p, true);
  impl_->optimizer.begin_step();
  p.backward(impl_->stream, impl_.get());
  return loss;
}

std::size_t Trainer::evaluate_step(std::size_t rows) {
  Plan& p = impl_->plan(rows);
  const ScopedThreadCount threads(impl_->threads_for(p));
  p.forward(impl_->stream);
  return count_correct(p.probabilities(), p.labels().data(), rows, impl_->config.model.classes);
}

double Trainer::compute_gradients(std::size_t rows) {
  Plan& p = impl_->training_plan(rows);
  const ScopedThreadCount threads(impl_->threads_for(p));
  const double loss = impl_->forward_loss(p, true);
  p.backward(impl_->stream);
  return loss;
}

double Trainer::loss(std::size_t rows) {
  Plan& p = impl_->plan(rows);
  const ScopedThreadCount threads(impl_->threads_for(p));
  return impl_->forward_loss(p, false);
}

int Trainer::step_threads(std::size_t rows) const { return impl_->threads_for(impl_->plan(rows)); }

TrainerMemory Trainer::memory() const {
  return account(impl_->store, impl_->optimizer.state_copies(), impl_->plans, impl_->scratchpad_bytes,
                 impl_->config.memory_plan);
}

const TrainerConfig& Trainer::config() const { return impl_->config; }

std::vector<std::string> Trainer::implementations() const {
  std::vector<std::string> all;
  for (const auto& p : impl_->plans) {
    for (const std::string& line : p->implementations()) all.push_back(fmt::format("[{}] {}", p->rows(), line));
  }
  return all;
}

std::size_t Trainer::tensor_count() const { return impl_->store.size(); }
std::string Trainer::tensor_name(std::size_t tensor) const { return impl_->store.tensor(tensor).name; }

std::vector<float> Trainer::parameter(std::size_t tensor) const {
  return impl_->store.read_plain(tensor, false, impl_->engine, impl_->stream);
}

void Trainer::set_parameter(std::size_t tensor, std::span<const float> values) {
  impl_->store.write_plain(tensor, values, impl_->engine, impl_->stream);
}

std::vector<float> Trainer::gradient(std::size_t tensor) const {
  return impl_->store.read_plain(tensor, true, impl_->engine, impl_->stream);
}

}  // namespace memsweep
