#include "trainer/parameters.hpp"

#include "memsweep/random.hpp"
#include "trainer/dnnl_step.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep::trainer::detail {
namespace {

constexpr std::size_t kFloatsPerLine = kBufferAlignment / sizeof(float);

std::size_t round_up_to_line(std::size_t floats) {
  return (floats + kFloatsPerLine - 1) / kFloatsPerLine * kFloatsPerLine;
}

void reorder(dnnl::memory from, dnnl::memory to, dnnl::stream& stream) {
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
}

}  // namespace

std::size_t ParameterStore::add(std::string name, const dnnl::memory::desc& desc, const dnnl::memory::desc& plain_desc,
                                float init_stddev) {
  std::size_t offset = 0;
  if (!tensors_.empty()) offset = tensors_.back().offset + round_up_to_line(floats_in(tensors_.back().desc));
  tensors_.push_back(ParameterTensor{std::move(name), desc, plain_desc, init_stddev, offset});
  return tensors_.size() - 1;
}

std::size_t ParameterStore::buffer_bytes() const {
  if (tensors_.empty()) return 0;
  return (tensors_.back().offset + round_up_to_line(floats_in(tensors_.back().desc))) * sizeof(float);
}

void ParameterStore::allocate(int state_copies, std::uint64_t seed, const dnnl::engine& engine, dnnl::stream& stream) {
  const std::size_t total = buffer_bytes() / sizeof(float);
  values_ = AlignedBuffer(total);
  gradients_ = AlignedBuffer(total);
  state_.clear();
  for (int copy = 0; copy < state_copies; ++copy) state_.emplace_back(total);

  for (std::size_t index = 0; index < tensors_.size(); ++index) {
    const ParameterTensor& t = tensors_[index];
    if (t.init_stddev == 0.0f) continue;  // zero-filled already
    // The values are drawn in the plain layout into the tensor's own slot of
    // the gradient buffer (zero until the first backward pass, and at least
    // as large: blocked layouts only pad), then reordered into place: no
    // extra copy of a weight tensor ever exists, so none shows in the peak.
    const std::span<float> plain(gradients_.data() + t.offset, floats_in(t.plain_desc));
    // One stream per tensor, so adding a layer leaves the others' values alone.
    Rng rng(mix_seed(seed, stable_hash(t.name)));
    for (float& value : plain) value = static_cast<float>(rng.normal()) * t.init_stddev;
    write_plain(index, plain, engine, stream);
    std::fill(plain.begin(), plain.end(), 0.0f);
  }
}

std::pair<std::size_t, std::size_t> ParameterStore::span_of(std::size_t first, std::size_t last) const {
  const ParameterTensor& end = tensors_.at(last);
  const std::size_t offset = tensors_.at(first).offset;
  return {offset, end.offset + round_up_to_line(floats_in(end.desc)) - offset};
}

dnnl::memory ParameterStore::values_memory(std::size_t index, const dnnl::engine& engine) {
  const ParameterTensor& t = tensors_.at(index);
  if (values_.data() == nullptr) return dnnl::memory(t.desc, engine, DNNL_MEMORY_NONE);
  return dnnl::memory(t.desc, engine, values_.data() + t.offset);
}

dnnl::memory ParameterStore::gradient_memory(std::size_t index, const dnnl::engine& engine) {
  const ParameterTensor& t = tensors_.at(index);
  if (gradients_.data() == nullptr) return dnnl::memory(t.desc, engine, DNNL_MEMORY_NONE);
  return dnnl::memory(t.desc, engine, gradients_.data() + t.offset);
}

std::vector<float> ParameterStore::read_plain(std::size_t index, bool gradient, const dnnl::engine& engine,
                                              dnnl::stream& stream) {
  const ParameterTensor& t = tensors_.at(index);
  std::vector<float> plain(floats_in(t.plain_desc));
  dnnl::memory to(t.plain_desc, engine, plain.data());
  reorder(gradient ? gradient_memory(index, engine) : values_memory(index, engine), to, stream);
  return plain;
}

void ParameterStore::write_plain(std::size_t index, std::span<const float> plain, const dnnl::engine& engine,
                                 dnnl::stream& stream) {
  const ParameterTensor& t = tensors_.at(index);
  if (plain.size() != floats_in(t.plain_desc))
    throw std::invalid_argument(
        fmt::format("{}: expected {} values, got {}", t.name, floats_in(t.plain_desc), plain.size()));
  dnnl::memory from(t.plain_desc, engine, const_cast<float*>(plain.data()));
  reorder(from, values_memory(index, engine), stream);
}

}  // namespace memsweep::trainer::detail
