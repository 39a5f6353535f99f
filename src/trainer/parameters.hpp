#pragma once
// Every weight and bias of a network in one flat buffer, with their gradients
// and the optimizer's state in buffers of the same shape: the optimizer
// updates the whole network in one loop, and each layer's dnnl::memory points
// into the buffers.

#include "trainer/aligned_buffer.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace memsweep::trainer::detail {

struct ParameterTensor {
  std::string name;               // e.g. "fc2.weights"
  dnnl::memory::desc desc;        // the layout oneDNN chose
  dnnl::memory::desc plain_desc;  // oihw / oi / x, for initialisation and tests
  float init_stddev = 0.0f;       // 0: zeros (biases)
  std::size_t offset = 0;         // in floats, into every buffer
};

class ParameterStore {
 public:
  // Registers a tensor before allocate(); returns its index.
  std::size_t add(std::string name, const dnnl::memory::desc& desc, const dnnl::memory::desc& plain_desc,
                  float init_stddev);
  // Lays the tensors out (each aligned to a cache line), allocates values,
  // gradients and `state_copies` optimizer buffers, and initialises values:
  // normal(0, init_stddev) drawn in the plain layout, reordered into place.
  void allocate(int state_copies, std::uint64_t seed, const dnnl::engine& engine, dnnl::stream& stream);

  std::size_t size() const { return tensors_.size(); }
  const ParameterTensor& tensor(std::size_t index) const { return tensors_.at(index); }

  // Before allocate(), memories without a buffer (for dry plans).
  dnnl::memory values_memory(std::size_t index, const dnnl::engine& engine);
  dnnl::memory gradient_memory(std::size_t index, const dnnl::engine& engine);

  // Floats [offset, offset + count) that tensors first..last (consecutive)
  // occupy in every buffer, padding included.
  std::pair<std::size_t, std::size_t> span_of(std::size_t first, std::size_t last) const;
  std::span<float> values() { return {values_.data(), values_.size()}; }
  std::span<float> gradients() { return {gradients_.data(), gradients_.size()}; }
  std::span<float> state(int copy) { return {state_[copy].data(), state_[copy].size()}; }

  std::vector<float> read_plain(std::size_t index, bool gradient, const dnnl::engine& engine, dnnl::stream& stream);
  void write_plain(std::size_t index, std::span<const float> plain, const dnnl::engine& engine, dnnl::stream& stream);

  // Bytes of one buffer (values, gradients or one optimizer state), known as
  // soon as the tensors are added: the prediction of a dry run.
  std::size_t buffer_bytes() const;

 private:
  std::vector<ParameterTensor> tensors_;
  AlignedBuffer values_, gradients_;
  std::vector<AlignedBuffer> state_;
};

}  // namespace memsweep::trainer::detail
