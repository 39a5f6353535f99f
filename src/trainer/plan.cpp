#include "trainer/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace memsweep::trainer::detail {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

constexpr memory::dim kKernel = 3;  // 3x3 convolutions, stride 1, padding 1: same size out
const memory::dims kConvStrides{1, 1};
const memory::dims kConvPadding{1, 1};
const memory::dims kPoolWindow{2, 2};
const memory::dims kPoolPadding{0, 0};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::primitive_attr fused_relu() {
  dnnl::primitive_attr attr = user_scratchpad();
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

// ReLU's backward from its output (what the fused forward leaves behind).
dnnl::primitive_desc relu_backward(const memory::desc& data, const dnnl::engine& engine) {
  const auto algorithm = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
  const dnnl::eltwise_forward::primitive_desc hint(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, algorithm, data, 0.0f, 0.0f), engine);
  return dnnl::eltwise_backward::primitive_desc(dnnl::eltwise_backward::desc(algorithm, data, data, 0.0f, 0.0f),
                                                user_scratchpad(), engine, hint);
}

// Builds the layouts layer by layer; the current activation's descriptor is
// the next layer's source.
class LayoutBuilder {
 public:
  LayoutBuilder(std::size_t rows, bool with_backward, ParameterStore& store, bool define, const dnnl::engine& engine)
      : rows_(static_cast<memory::dim>(rows)), store_(store), define_(define), engine_(engine) {
    layout_.rows = rows;
    layout_.with_backward = with_backward;
  }

  void input(const ImageShape& shape, bool images) {
    layout_.user_input = images ? memory::desc({rows_, shape.channels, shape.height, shape.width}, dt::f32, tag::nchw)
                                : memory::desc({rows_, static_cast<memory::dim>(shape.pixels())}, dt::f32, tag::nc);
    current_ = layout_.user_input;
  }

  // Every convolution primitive picks its own layouts (format any): handed a
  // layout it did not choose, oneDNN 2.6 often falls back to its reference
  // code (e.g. for 8 channels, forward wants nchw sources and backward
  // nChw16c). The Plan reorders between layers where the choices differ.
  void conv(int index, int out_channels, const ImageShape& in) {
    LayerLayout layer{LayerLayout::Kind::conv, fmt::format("conv{}", index)};
    layer.relu = true;
    layer.first = layout_.layers.empty();
    // {batch, C, H, W} (x) {O, C, 3, 3} + {O} -> {batch, O, H, W}: stride 1,
    // padding 1, ReLU fused.
    const memory::dims weight_dims{out_channels, in.channels, kKernel, kKernel};
    const memory::desc src({rows_, in.channels, in.height, in.width}, dt::f32, tag::any);
    const memory::desc any_weights(weight_dims, dt::f32, tag::any);
    const memory::desc bias({out_channels}, dt::f32, tag::x);
    const memory::desc dst({rows_, out_channels, in.height, in.width}, dt::f32, tag::any);
    const auto forward = dnnl_call(layer.name + ": choosing the forward convolution", [&] {
      return dnnl::convolution_forward::primitive_desc(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src,
                                          weights_desc(weight_dims), bias, dst, kConvStrides, kConvPadding,
                                          kConvPadding),
          fused_relu(), engine_);
    });
    layer.forward = forward;
    add_parameters(layer, forward.weights_desc(), memory::desc(weight_dims, dt::f32, tag::oihw), bias,
                   std::sqrt(2.0f / static_cast<float>(in.channels * kKernel * kKernel)));
    if (layout_.with_backward) {
      dnnl_call(layer.name + ": choosing the backward convolutions", [&] {
        layer.relu_backward = relu_backward(forward.dst_desc(), engine_);
        layer.backward_weights = dnnl::convolution_backward_weights::primitive_desc(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, src, any_weights, bias, dst,
                                                     kConvStrides, kConvPadding, kConvPadding),
            user_scratchpad(), engine_, forward);
        if (!layer.first)
          layer.backward_data = dnnl::convolution_backward_data::primitive_desc(
              dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                                    kConvStrides, kConvPadding, kConvPadding),
              user_scratchpad(), engine_, forward);
        return 0;
      });
    }
    current_ = forward.dst_desc();
    layout_.layers.push_back(std::move(layer));
  }

  void pool(int index, int channels, const ImageShape& in) {
    LayerLayout layer{LayerLayout::Kind::pool, fmt::format("pool{}", index)};
    // {batch, C, H, W} -> {batch, C, H/2, W/2}: 2x2 windows, stride 2.
    const memory::desc dst({rows_, channels, in.height / 2, in.width / 2}, dt::f32, tag::any);
    const auto forward = dnnl_call(layer.name + ": choosing the max-pooling", [&] {
      return dnnl::pooling_forward::primitive_desc(
          dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max, current_, dst,
                                      kPoolWindow, kPoolWindow, kPoolPadding, kPoolPadding),
          user_scratchpad(), engine_);
    });
    layer.forward = forward;
    if (layout_.with_backward)
      layer.backward_data = dnnl_call(layer.name + ": choosing the max-pooling backward", [&] {
        return dnnl::pooling_backward::primitive_desc(
            dnnl::pooling_backward::desc(dnnl::algorithm::pooling_max, current_, forward.dst_desc(), kPoolWindow,
                                         kPoolWindow, kPoolPadding, kPoolPadding),
            user_scratchpad(), engine_, forward);
      });
    current_ = forward.dst_desc();
    layout_.layers.push_back(std::move(layer));
  }

  void fully_connected(const std::string& name, int outputs, bool relu) {
    LayerLayout layer{relu ? LayerLayout::Kind::fc : LayerLayout::Kind::output, name};
    layer.relu = relu;
    layer.first = layout_.layers.empty();
    // {batch, N} (x) {O, N} + {O} -> {batch, O}. After convolutions the source
    // is 4-D and so are the weights: {batch, C, H, W} (x) {O, C, H, W}.
    memory::dims weight_dims = current_.dims();
    weight_dims[0] = outputs;
    const memory::desc plain(weight_dims, dt::f32, weight_dims.size() == 4 ? tag::oihw : tag::oi);
    const memory::desc bias({outputs}, dt::f32, tag::x);
    const memory::desc dst({rows_, outputs}, dt::f32, tag::nc);
    const auto forward = dnnl_call(layer.name + ": choosing the inner product", [&] {
      return dnnl::inner_product_forward::primitive_desc(
          dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, current_, weights_desc(weight_dims),
                                            bias, dst),
          relu ? fused_relu() : user_scratchpad(), engine_);
    });
    layer.forward = forward;
    memory::dim fan_in = 1;
    for (std::size_t d = 1; d < weight_dims.size(); ++d) fan_in *= weight_dims[d];
    // He for ReLU layers; LeCun (variance 1/fan_in) for the output, which feeds softmax.
    add_parameters(layer, forward.weights_desc(), plain, bias,
                   std::sqrt((relu ? 2.0f : 1.0f) / static_cast<float>(fan_in)));
    if (layout_.with_backward) {
      dnnl_call(layer.name + ": choosing the backward inner products", [&] {
        if (relu) layer.relu_backward = relu_backward(forward.dst_desc(), engine_);
        layer.backward_weights = dnnl::inner_product_backward_weights::primitive_desc(
            dnnl::inner_product_backward_weights::desc(forward.src_desc(), forward.weights_desc(), bias,
                                                       forward.dst_desc()),
            user_scratchpad(), engine_, forward);
        if (!layer.first)
          layer.backward_data = dnnl::inner_product_backward_data::primitive_desc(
              dnnl::inner_product_backward_data::desc(forward.src_desc(), forward.weights_desc(), forward.dst_desc()),
              user_scratchpad(), engine_, forward);
        return 0;
      });
    }
    current_ = forward.dst_desc();
    layout_.layers.push_back(std::move(layer));
  }

  PlanLayout finish() {
    // {batch, classes} -> {batch, classes}, along axis 1.
    layout_.softmax = dnnl_call("choosing the softmax", [&] {
      return dnnl::softmax_forward::primitive_desc(
          dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, current_, 1), user_scratchpad(), engine_);
    });
    std::size_t most = layout_.softmax.scratchpad_desc().get_size();
    for (const LayerLayout& layer : layout_.layers) {
      for (const dnnl::primitive_desc* pd :
           {&layer.forward, &layer.relu_backward, &layer.backward_data, &layer.backward_weights})
        if (*pd) most = std::max(most, pd->scratchpad_desc().get_size());
    }
    layout_.scratchpad_bytes = most;
    return std::move(layout_);
  }

 private:
  // The first plan lets oneDNN choose the weights' layout; later plans (other
  // batch sizes) must use the same one, since the parameters exist once.
  memory::desc weights_desc(const memory::dims& dims) const {
    if (define_) return memory::desc(dims, dt::f32, tag::any);
    return store_.tensor(next_tensor_).desc;
  }

  void add_parameters(LayerLayout& layer, const memory::desc& chosen, const memory::desc& plain,
                      const memory::desc& bias, float init_stddev) {
    if (define_) {
      store_.add(layer.name + ".weights", chosen, plain, init_stddev);
      store_.add(layer.name + ".bias", bias, bias, 0.0f);
    }
    layer.weights = next_tensor_++;
    layer.bias = next_tensor_++;
  }

  memory::dim rows_;
  ParameterStore& store_;
  bool define_;
  const dnnl::engine& engine_;
  PlanLayout layout_;
  memory::desc current_;
  std::size_t next_tensor_ = 0;
};

std::string implementation(const std::string& what, const dnnl::primitive_desc& pd) {
  return fmt::format("{}: {}", what, pd.impl_info_str());
}

}  // namespace

PlanLayout make_plan_layout(const ModelSpec& model, std::size_t rows, bool with_backward, ParameterStore& store,
                            bool define_parameters, const dnnl::engine& engine) {
  LayoutBuilder builder(rows, with_backward, store, define_parameters, engine);
  builder.input(model.input, !model.conv.empty());
  ImageShape shape = model.input;
  int index = 1;
  for (const ConvBlock& block : model.conv) {
    builder.conv(index, block.out_channels, shape);
    shape.channels = block.out_channels;
    if (block.pool) {
      builder.pool(index, block.out_channels, shape);
      shape.height /= 2;
      shape.width /= 2;
    }
    ++index;
  }
  for (std::size_t layer = 0; layer < model.hidden.size(); ++layer)
    builder.fully_connected(fmt::format("fc{}", layer + 1), model.hidden[layer], true);
  builder.fully_connected("output", model.classes, false);
  return builder.finish();
}

// How a plan makes its memories and steps, by its purpose: for training,
// memories with buffers and the primitives that run on them; for a
// prediction, memories without buffers and no primitives (generating their
// code is the slow part of building a plan): only the sizes are counted.
// Under reuse and recompute a transient memory gets no buffer of its own
// either way: it is listed for the arena, which the Plan places once wired.
class PlanMaker {
 public:
  PlanMaker(const dnnl::engine& engine, const memory& scratchpad, PlanPurpose purpose,
            std::vector<memory>* arena_memories)
      : engine_(engine), scratchpad_(scratchpad), purpose_(purpose), arena_(arena_memories) {}

  const dnnl::engine& engine() const { return engine_; }
  std::pair<int, memory> scratch() const { return {DNNL_ARG_SCRATCHPAD, scratchpad_}; }

  // A transient memory of `desc`, its size counted in `counter`.
  memory allocate(const memory::desc& desc, std::size_t& counter) const {
    counter += desc.get_size();
    if (arena_ != nullptr) {
      arena_->push_back(memory(desc, engine_, DNNL_MEMORY_NONE));
      return arena_->back();
    }
    return allocates_buffers() ? memory(desc, engine_) : memory(desc, engine_, DNNL_MEMORY_NONE);
  }

  // Every purpose records which arena memories the step touches (the
  // arena's lifetimes come from them); only training creates the primitive.
  // Recorded as indices while the memories are alive: a prediction keeps no
  // step, so a parameter's temporary memory handle is freed at once and its
  // address may come back as a later arena memory's.
  void add(Schedule& schedule, std::string what, const dnnl::primitive_desc_base& pd,
           const std::vector<std::pair<int, memory>>& args) const {
    std::vector<std::size_t> uses;
    for (const auto& arg : args)
      if (const auto index = arena_index(arg.second)) uses.push_back(*index);
    schedule.uses.push_back(std::move(uses));
    if (creates_primitives()) schedule.steps.emplace_back(std::move(what), pd.get(), args);
  }

  void add_reorder(Schedule& schedule, const std::string& what, const memory& from, const memory& to) const {
    const dnnl::reorder::primitive_desc pd(engine_, from.get_desc(), engine_, to.get_desc(), user_scratchpad());
    if (pd.scratchpad_desc().get_size() > scratchpad_.get_desc().get_size())
      throw TrainerError(what + ": the reorder needs more scratchpad than any primitive");
    add(schedule, what, pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, scratch()});
  }

  // Where `m` is in the arena's list; nullopt for a memory outside it
  // (parameters, their gradients, the scratchpad) or under keep.
  std::optional<std::size_t> arena_index(const memory& m) const {
    if (arena_ == nullptr) return std::nullopt;
    for (std::size_t i = 0; i < arena_->size(); ++i)
      if ((*arena_)[i].get() == m.get()) return i;
    return std::nullopt;
  }

  // `from` as the layout a primitive wants: itself, or a copy that
  // `schedule` reorders into just before the primitive runs.
  memory as_layout(const memory& from, const memory::desc& want, Schedule& schedule, const std::string& what,
                   std::size_t& counter) const {
    if (from.get_desc() == want) return from;
    memory copy = allocate(want, counter);
    add_reorder(schedule, what, from, copy);
    return copy;
  }

 private:
  bool allocates_buffers() const { return purpose_ == PlanPurpose::train; }
  bool creates_primitives() const { return purpose_ == PlanPurpose::train; }

  const dnnl::engine& engine_;
  const memory& scratchpad_;
  PlanPurpose purpose_;
  std::vector<memory>* arena_;
};

// A primitive's step, its implementation noted for implementations().
void Plan::add_step(Schedule& schedule, const std::string& what, const dnnl::primitive_desc& pd,
                    const std::vector<std::pair<int, memory>>& args, const PlanMaker& make) {
  implementations_.push_back(implementation(what, pd));
  make.add(schedule, what, pd, args);
}

// A layer's memories: its input, the gradient of that input (none for the
// first layer), its output and the output's gradient, and max-pooling's
// argmax.
struct Plan::LayerWiring {
  memory in, in_gradient, out, out_gradient, workspace;
};

std::size_t recompute_segment_length(std::size_t layers, int recompute_every) {
  if (recompute_every > 0) return static_cast<std::size_t>(recompute_every);
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(layers)))));
}

Plan::Plan(const PlanLayout& layout, ParameterStore& store, const memory& scratchpad, const dnnl::engine& engine,
           PlanPurpose purpose, const PlanMemory& memory_plan)
    : rows_(layout.rows),
      with_backward_(layout.with_backward),
      memory_plan_(memory_plan.plan),
      input_floats_(floats_in(layout.user_input)),
      labels_(purpose == PlanPurpose::train ? layout.rows : 0) {
  const bool arena = memory_plan_ != MemoryPlan::keep;
  const PlanMaker make(engine, scratchpad, purpose, arena ? &arena_memories_ : nullptr);
  std::size_t input_counter = 0;
  input_ = arena ? make.allocate(layout.user_input, input_counter)
                 : (purpose == PlanPurpose::train ? memory(layout.user_input, engine)
                                                  : memory(layout.user_input, engine, DNNL_MEMORY_NONE));
  const std::vector<LayerWiring> wiring = wire_forward(layout, store, make);
  if (with_backward_) {
    logits_gradient_ = wiring.back().out_gradient;
    // Under recompute, the backward pass reads the segments' recomputed
    // activations; the gradients are the same memories whatever the plan.
    std::vector<LayerWiring> backward_wiring = wiring;
    const std::size_t layers = layout.layers.size();
    const std::size_t every =
        memory_plan_ == MemoryPlan::recompute ? recompute_segment_length(layers, memory_plan.recompute_every) : layers;
    for (std::size_t i = layers; i-- > 0;) {
      // The last layer of a segment that is not the network's last: its
      // output is a checkpoint, the outputs before it down to the previous
      // checkpoint are computed again now, just before the first backward
      // step that reads one. A pooling's backward reads only its own
      // (kept) workspace, so it runs first and its gradient's source dies
      // before the recomputed activations appear.
      const bool recompute = (i + 1) % every == 0 && i + 1 < layers;
      const bool pool = layout.layers[i].kind == LayerLayout::Kind::pool;
      if (recompute && !pool) recompute_segment(layout, i + 1 - every, i, wiring, backward_wiring, store, make);
      wire_backward(layout.layers[i], backward_wiring[i], store, make);
      if (recompute && pool) recompute_segment(layout, i + 1 - every, i, wiring, backward_wiring, store, make);
    }
  }
  if (arena) place_in_arena(make);
}

std::vector<Plan::LayerWiring> Plan::wire_forward(const PlanLayout& layout, ParameterStore& store,
                                                  const PlanMaker& make) {
  std::vector<LayerWiring> wiring;
  memory source = input_;
  memory source_gradient;
  for (const LayerLayout& layer : layout.layers) {
    if (layer.kind == LayerLayout::Kind::conv)  // a convolution reads its source in the layout it chose
      source = make.as_layout(source, layer.forward.src_desc(0), forward_, layer.name + " source reorder",
                              layer.first ? reordered_input_bytes_ : activation_bytes_);
    LayerWiring w{source, source_gradient, make.allocate(layer.forward.dst_desc(0), activation_bytes_), {}, {}};
    if (with_backward_) w.out_gradient = make.allocate(layer.forward.dst_desc(0), activation_gradient_bytes_);
    if (layer.kind == LayerLayout::Kind::pool)
      w.workspace = make.allocate(layer.forward.workspace_desc(), workspace_bytes_);
    wire_layer_forward(layer, w, store, make, forward_, "");
    source = w.out;
    source_gradient = w.out_gradient;
    wiring.push_back(std::move(w));
  }
  // {batch, classes} -> {batch, classes}: the probabilities, along axis 1.
  probabilities_ = make.allocate(layout.softmax.dst_desc(0), activation_bytes_);
  add_step(forward_, "softmax", layout.softmax,
           {{DNNL_ARG_SRC, source}, {DNNL_ARG_DST, probabilities_}, make.scratch()}, make);
  return wiring;
}

// Layers first..last of a segment, again, from the checkpoint that is
// first's input: new memories for their outputs (and pooling workspaces),
// the same primitives on the same inputs, so the same values. The last
// layer's output is the next checkpoint and is not recomputed, but its
// input is (a convolution's reordered source included).
void Plan::recompute_segment(const PlanLayout& layout, std::size_t first, std::size_t last,
                             const std::vector<LayerWiring>& wiring, std::vector<LayerWiring>& backward_wiring,
                             ParameterStore& store, const PlanMaker& make) {
  memory source = wiring[first].in;
  for (std::size_t j = first; j <= last; ++j) {
    const LayerLayout& layer = layout.layers[j];
    LayerWiring& w = backward_wiring[j];
    if (j > first) {
      if (layer.kind == LayerLayout::Kind::conv)
        source = make.as_layout(source, layer.forward.src_desc(0), backward_,
                                layer.name + " source reorder (recompute)", activation_bytes_);
      w.in = source;
    }
    if (j == last) break;
    w.out = make.allocate(layer.forward.dst_desc(0), activation_bytes_);
    if (layer.kind == LayerLayout::Kind::pool)
      w.workspace = make.allocate(layer.forward.workspace_desc(), workspace_bytes_);
    wire_layer_forward(layer, w, store, make, backward_, " (recompute)");
    source = w.out;
  }
}

void Plan::wire_layer_forward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store,
                              const PlanMaker& make, Schedule& into, const char* suffix) {
  if (layer.kind == LayerLayout::Kind::pool) {
    // {batch, C, H, W} -> {batch, C, H/2, W/2}, and the argmax for backward.
    add_step(into, layer.name + " forward" + suffix, layer.forward,
             {{DNNL_ARG_SRC, w.in}, {DNNL_ARG_DST, w.out}, {DNNL_ARG_WORKSPACE, w.workspace}, make.scratch()}, make);
    return;
  }
  // conv: {batch, C, H, W} (x) {O, C, 3, 3} + {O} -> {batch, O, H, W};
  // inner product: {batch, N} (x) {O, N} + {O} -> {batch, O} (N: C*H*W
  // after convolutions, weights {O, C, H, W}). ReLU fused, except the output.
  add_step(into, layer.name + " forward" + suffix, layer.forward,
           {{DNNL_ARG_SRC, w.in},
            {DNNL_ARG_WEIGHTS, store.values_memory(*layer.weights, make.engine())},
            {DNNL_ARG_BIAS, store.values_memory(*layer.bias, make.engine())},
            {DNNL_ARG_DST, w.out},
            make.scratch()},
           make);
}

void Plan::wire_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store, const PlanMaker& make) {
  if (layer.kind == LayerLayout::Kind::pool) {
    // d{batch, C, H/2, W/2} and the argmax -> d{batch, C, H, W}.
    add_step(backward_, layer.name + " backward", layer.backward_data,
             {{DNNL_ARG_DIFF_DST, w.out_gradient},
              {DNNL_ARG_WORKSPACE, w.workspace},
              {DNNL_ARG_DIFF_SRC, w.in_gradient},
              make.scratch()},
             make);
    return;
  }
  if (layer.relu) {
    // d{batch, O, ...} -> d{batch, O, ...}, from the output: in place, the
    // output's gradient becomes the pre-activation's.
    add_step(backward_, layer.name + " relu backward", layer.relu_backward,
             {{DNNL_ARG_DST, w.out},
              {DNNL_ARG_DIFF_DST, w.out_gradient},
              {DNNL_ARG_DIFF_SRC, w.out_gradient},
              make.scratch()},
             make);
  }
  wire_weights_backward(layer, w, store, make);
  if (!layer.first) wire_data_backward(layer, w, store, make);
  gradients_ready_.push_back({backward_.uses.size(), *layer.weights, *layer.bias});
}

// conv: {batch, C, H, W} and d{batch, O, H, W} -> d{O, C, 3, 3} + d{O};
// inner product: {batch, N} and d{batch, O} -> d{O, N} + d{O}. The weights'
// gradient is written straight into the optimizer's buffer when the layouts
// agree, else into a copy reordered there afterwards.
void Plan::wire_weights_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store,
                                 const PlanMaker& make) {
  const memory gradient = store.gradient_memory(*layer.weights, make.engine());
  const memory::desc gradient_layout = layer.backward_weights.diff_weights_desc(0);
  const memory written =
      gradient.get_desc() == gradient_layout ? gradient : make.allocate(gradient_layout, reordered_weight_bytes_);
  add_step(backward_, layer.name + " backward weights", layer.backward_weights,
           {{DNNL_ARG_SRC, make.as_layout(w.in, layer.backward_weights.src_desc(0), backward_,
                                          layer.name + " source reorder for backward", activation_bytes_)},
            {DNNL_ARG_DIFF_DST,
             make.as_layout(w.out_gradient, layer.backward_weights.diff_dst_desc(0), backward_,
                            layer.name + " gradient reorder for backward weights", activation_gradient_bytes_)},
            {DNNL_ARG_DIFF_WEIGHTS, written},
            {DNNL_ARG_DIFF_BIAS, store.gradient_memory(*layer.bias, make.engine())},
            make.scratch()},
           make);
  if (written != gradient) make.add_reorder(backward_, layer.name + " weights gradient reorder", written, gradient);
}

// conv: d{batch, O, H, W} (x) {O, C, 3, 3} -> d{batch, C, H, W};
// inner product: d{batch, O} (x) {O, N} -> d{batch, N}. Into the input's
// gradient, or a copy reordered into it.
void Plan::wire_data_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store,
                              const PlanMaker& make) {
  const memory::desc produced = layer.backward_data.diff_src_desc(0);
  const memory target =
      produced == w.in_gradient.get_desc() ? w.in_gradient : make.allocate(produced, activation_gradient_bytes_);
  add_step(backward_, layer.name + " backward data", layer.backward_data,
           {{DNNL_ARG_DIFF_DST,
             make.as_layout(w.out_gradient, layer.backward_data.diff_dst_desc(0), backward_,
                            layer.name + " gradient reorder for backward data", activation_gradient_bytes_)},
            {DNNL_ARG_WEIGHTS,
             make.as_layout(store.values_memory(*layer.weights, make.engine()), layer.backward_data.weights_desc(0),
                            backward_, layer.name + " weights reorder", reordered_weight_bytes_)},
            {DNNL_ARG_DIFF_SRC, target},
            make.scratch()},
           make);
  if (target != w.in_gradient)
    make.add_reorder(backward_, layer.name + " source gradient reorder", target, w.in_gradient);
}

// The step schedule: forward steps 0..F-1, the loss at F (it reads the
// probabilities and writes the logits' gradient), backward steps from F+1.
// Each transient memory lives from the first step that touches it to the
// last; the batch's images from step 0, since the caller writes them before
// the forward pass.
void Plan::place_in_arena(const PlanMaker& make) {
  constexpr std::size_t kUnused = std::numeric_limits<std::size_t>::max();
  std::vector<ArenaBuffer> buffers(arena_memories_.size(), ArenaBuffer{0, kUnused, 0});
  const auto touch = [&](std::size_t index, std::size_t step) {
    ArenaBuffer& b = buffers[index];
    b.first = std::min(b.first, step);
    b.last = std::max(b.last, step);
  };
  const auto touch_memory = [&](const memory& m, std::size_t step) {
    if (const auto index = make.arena_index(m)) touch(*index, step);
  };
  const std::size_t loss_step = forward_.uses.size();
  for (std::size_t s = 0; s < forward_.uses.size(); ++s)
    for (const std::size_t index : forward_.uses[s]) touch(index, s);
  touch_memory(probabilities_, loss_step);
  if (with_backward_) touch_memory(logits_gradient_, loss_step);
  for (std::size_t s = 0; s < backward_.uses.size(); ++s)
    for (const std::size_t index : backward_.uses[s]) touch(index, loss_step + 1 + s);
  touch_memory(input_, 0);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].first == kUnused)
      buffers[i] = ArenaBuffer{0, 0, 0};  // never touched: needs no bytes
    else
      buffers[i].bytes = arena_memories_[i].get_desc().get_size();
  }
  arena_buffers_ = buffers;
  arena_ = plan_arena(buffers);
}

void Plan::bind_arena(std::byte* base, bool poison_freed) {
  for (std::size_t i = 0; i < arena_memories_.size(); ++i) arena_memories_[i].set_data_handle(base + arena_.offsets[i]);
  if (!poison_freed) return;
  // After step s, the regions of the buffers whose last step is s.
  const std::size_t loss_step = forward_.uses.size();
  poison_after_forward_.assign(forward_.uses.size(), {});
  poison_after_backward_.assign(backward_.uses.size(), {});
  poison_after_loss_.clear();
  for (std::size_t i = 0; i < arena_buffers_.size(); ++i) {
    const ArenaBuffer& b = arena_buffers_[i];
    if (b.bytes == 0) continue;
    const std::span<float> region(reinterpret_cast<float*>(base + arena_.offsets[i]), b.bytes / sizeof(float));
    if (b.last < loss_step)
      poison_after_forward_[b.last].push_back(region);
    else if (b.last == loss_step)
      poison_after_loss_.push_back(region);
    else
      poison_after_backward_[b.last - loss_step - 1].push_back(region);
  }
}

namespace {

void poison(const std::vector<std::span<float>>& regions) {
  for (const std::span<float> region : regions)
    std::fill(region.begin(), region.end(), std::numeric_limits<float>::quiet_NaN());
}

}  // namespace

void Plan::forward(dnnl::stream& stream) const {
  for (std::size_t i = 0; i < forward_.steps.size(); ++i) {
    forward_.steps[i].run(stream);
    if (!poison_after_forward_.empty()) {
      stream.wait();
      poison(poison_after_forward_[i]);
    }
  }
  stream.wait();
}

void Plan::backward(dnnl::stream& stream, LayerGradientsReady* ready) const {
  poison(poison_after_loss_);  // the loss has read the probabilities
  auto next = gradients_ready_.begin();
  for (std::size_t i = 0; i < backward_.steps.size(); ++i) {
    backward_.steps[i].run(stream);
    if (!poison_after_backward_.empty()) {
      stream.wait();
      poison(poison_after_backward_[i]);
    }
    for (; ready != nullptr && next != gradients_ready_.end() && next->after_steps == i + 1; ++next)
      ready->gradients_ready(next->weights, next->bias);
  }
  stream.wait();
}

std::size_t Plan::input_bytes() const { return input_floats_ * sizeof(float) + label_bytes() + reordered_input_bytes_; }

}  // namespace memsweep::trainer::detail
