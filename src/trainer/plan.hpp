#pragma once
// The network for one batch size: primitive descriptors chosen once
// (PlanLayout), then memories, primitives and argument lists (Plan).
//
// Layers, in order: conv blocks (3x3 conv with fused ReLU, then 2x2 max-pool),
// fully connected hidden layers (inner product with fused ReLU), the output
// inner product, softmax. Backward runs them in reverse with ReLU's backward
// computed from its output, in place on the gradient.

#include "memsweep/memory_plan.hpp"
#include "memsweep/model_spec.hpp"
#include "trainer/arena_planner.hpp"
#include "trainer/dnnl_step.hpp"
#include "trainer/parameters.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memsweep::trainer::detail {

// Primitive descriptors of one layer; which ones are set depends on the kind.
struct LayerLayout {
  enum class Kind { conv, pool, fc, output };
  LayerLayout(Kind k, std::string n) : kind(k), name(std::move(n)) {}

  Kind kind;
  std::string name;                          // "conv1", "pool1", "fc1", "output"
  std::optional<std::size_t> weights, bias;  // ParameterStore indices
  bool relu = false;
  bool first = false;  // the input needs no gradient
  dnnl::primitive_desc forward;
  dnnl::primitive_desc relu_backward;  // eltwise backward (ReLU from its output)
  dnnl::primitive_desc backward_data;
  dnnl::primitive_desc backward_weights;
};

struct PlanLayout {
  std::size_t rows = 0;
  bool with_backward = true;
  dnnl::memory::desc user_input;  // nchw (CNN) or nc (MLP), the batch buffer
  std::vector<LayerLayout> layers;
  dnnl::primitive_desc softmax;
  std::size_t scratchpad_bytes = 0;  // the most any one primitive needs
};

// The first layout of a trainer registers the parameters in `store` (letting
// oneDNN choose their layouts); later ones reuse those layouts.
PlanLayout make_plan_layout(const ModelSpec& model, std::size_t rows, bool with_backward, ParameterStore& store,
                            bool define_parameters, const dnnl::engine& engine);

// Told during the backward pass as soon as a layer's gradients are final and
// its weights are no longer needed by the pass: the optimizer updates that
// layer then, while its gradient is still in cache.
class LayerGradientsReady {
 public:
  virtual ~LayerGradientsReady() = default;
  virtual void gradients_ready(std::size_t weights, std::size_t bias) = 0;
};

// What a plan is built for. For training: memories with buffers and the
// primitives that run on them. For a memory prediction: no buffer and no
// primitive, only the sizes a training plan would hold.
enum class PlanPurpose { train, predict };

class PlanMaker;  // makes memories and steps as the purpose says (plan.cpp)

// How the plan holds its transient buffers (memory_plan.hpp).
struct PlanMemory {
  MemoryPlan plan = MemoryPlan::keep;
  int recompute_every = kRecomputeEveryDefault;
};

// Layers per recompute segment: `recompute_every`, or ceil(sqrt(layers))
// for kRecomputeEveryDefault. Layers count pools as layers of their own.
std::size_t recompute_segment_length(std::size_t layers, int recompute_every);

// Steps in the order they run, and for every purpose the arena memories
// each one touches: the arena's lifetimes come from them.
struct Schedule {
  std::vector<Step> steps;                     // training only
  std::vector<std::vector<std::size_t>> uses;  // indices into the plan's arena memories
};

class Plan {
 public:
  Plan(const PlanLayout& layout, ParameterStore& store, const dnnl::memory& scratchpad, const dnnl::engine& engine,
       PlanPurpose purpose, const PlanMemory& memory_plan = {});

  std::size_t rows() const { return rows_; }
  bool with_backward() const { return with_backward_; }
  std::span<float> images() { return {static_cast<float*>(input_.get_data_handle()), input_floats_}; }
  std::span<std::int32_t> labels() { return labels_; }

  void forward(dnnl::stream& stream) const;
  void backward(dnnl::stream& stream, LayerGradientsReady* ready = nullptr) const;
  // Softmax outputs, rows × classes, after forward().
  const float* probabilities() const { return static_cast<const float*>(probabilities_.get_data_handle()); }
  float* logits_gradient() { return static_cast<float*>(logits_gradient_.get_data_handle()); }

  std::size_t activation_bytes() const { return activation_bytes_; }
  std::size_t activation_gradient_bytes() const { return activation_gradient_bytes_; }
  std::size_t reordered_weight_bytes() const { return reordered_weight_bytes_; }
  std::size_t workspace_bytes() const { return workspace_bytes_; }  // max-pooling's argmax
  std::size_t input_bytes() const;
  std::size_t label_bytes() const { return rows_ * sizeof(std::int32_t); }
  // Under reuse and recompute: the bytes the arena needs for this plan
  // (0 under keep), and the buffers' lifetimes it was planned from.
  std::size_t arena_bytes() const { return arena_.bytes; }
  const std::vector<ArenaBuffer>& arena_buffers() const { return arena_buffers_; }
  // Points every transient memory at its offset in `base` (arena_bytes()
  // or more, 64-byte aligned). With `poison_freed`, each buffer's region is
  // filled with NaN right after its last step, so a read of bytes already
  // handed to another buffer shows as NaN in the loss.
  void bind_arena(std::byte* base, bool poison_freed);
  std::vector<std::string> implementations() const { return implementations_; }

 private:
  struct LayerWiring;
  void add_step(Schedule& schedule, const std::string& what, const dnnl::primitive_desc& pd,
                const std::vector<std::pair<int, dnnl::memory>>& args, const PlanMaker& make);
  std::vector<LayerWiring> wire_forward(const PlanLayout& layout, ParameterStore& store, const PlanMaker& make);
  void wire_layer_forward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store, const PlanMaker& make,
                          Schedule& into, const char* suffix);
  void recompute_segment(const PlanLayout& layout, std::size_t first, std::size_t last,
                         const std::vector<LayerWiring>& wiring, std::vector<LayerWiring>& backward_wiring,
                         ParameterStore& store, const PlanMaker& make);
  void place_in_arena(const PlanMaker& make);
  void wire_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store, const PlanMaker& make);
  void wire_weights_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store,
                             const PlanMaker& make);
  void wire_data_backward(const LayerLayout& layer, const LayerWiring& w, ParameterStore& store, const PlanMaker& make);

  std::size_t rows_;
  bool with_backward_;
  MemoryPlan memory_plan_;
  std::vector<dnnl::memory> arena_memories_;  // the transient memories, under reuse and recompute
  std::vector<ArenaBuffer> arena_buffers_;
  ArenaPlan arena_;
  std::vector<std::vector<std::span<float>>> poison_after_forward_, poison_after_backward_;
  std::vector<std::span<float>> poison_after_loss_;
  dnnl::memory input_;
  std::size_t input_floats_;
  std::vector<std::int32_t> labels_;
  dnnl::memory probabilities_, logits_gradient_;
  Schedule forward_, backward_;
  struct GradientsReady {
    std::size_t after_steps, weights, bias;
  };
  std::vector<GradientsReady> gradients_ready_;  // in backward order
  std::size_t activation_bytes_ = 0, activation_gradient_bytes_ = 0, reordered_input_bytes_ = 0;
  std::size_t reordered_weight_bytes_ = 0, workspace_bytes_ = 0;
  std::vector<std::string> implementations_;
};

}  // namespace memsweep::trainer::detail
