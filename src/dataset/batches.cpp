#include "memsweep/dataset.hpp"
#include "memsweep/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace memsweep {

BatchOrder::BatchOrder(std::size_t examples, std::size_t batch_size, std::uint64_t seed)
    : batch_size_(batch_size), seed_(seed), order_(examples) {
  if (batch_size == 0) throw std::invalid_argument("BatchOrder: batch size must be at least 1");
  start_epoch(0);
}

void BatchOrder::start_epoch(int epoch) {
  epoch_ = epoch;
  // From the identity every time, so an epoch's order depends on (seed,
  // epoch) alone, not on which epochs ran before (a resumed run sees the same
  // order). Fisher-Yates by hand: std::shuffle's algorithm is unspecified.
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  Rng rng(mix_seed(seed_, static_cast<std::uint64_t>(epoch)));
  for (std::size_t i = order_.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(i - 1)));
    std::swap(order_[i - 1], order_[j]);
  }
}

std::size_t BatchOrder::batch_count() const { return (order_.size() + batch_size_ - 1) / batch_size_; }

std::size_t BatchOrder::batch_rows(std::size_t batch) const {
  if (batch >= batch_count())
    throw std::invalid_argument(fmt::format("BatchOrder: batch {} of {} does not exist", batch, batch_count()));
  return std::min(batch_size_, order_.size() - batch * batch_size_);
}

std::span<const std::size_t> BatchOrder::batch_indices(std::size_t batch) const {
  const std::size_t rows = batch_rows(batch);
  return std::span<const std::size_t>(order_).subspan(batch * batch_size_, rows);
}

std::size_t BatchOrder::gather(std::size_t batch, const SplitView& split, std::span<float> images_out,
                               std::span<std::int32_t> labels_out) const {
  if (split.size() != order_.size())
    throw std::invalid_argument(
        fmt::format("BatchOrder: made for {} examples, given a split of {}", order_.size(), split.size()));
  const auto indices = batch_indices(batch);
  const std::size_t pixels = split.shape.pixels();
  if (images_out.size() < indices.size() * pixels || labels_out.size() < indices.size())
    throw std::invalid_argument(
        fmt::format("BatchOrder: batch of {} rows needs {} image values and {} labels, given room for {} and {}",
                    indices.size(), indices.size() * pixels, indices.size(), images_out.size(), labels_out.size()));
  for (std::size_t row = 0; row < indices.size(); ++row) {
    const std::size_t example = indices[row];
    std::copy_n(split.images.begin() + static_cast<std::ptrdiff_t>(example * pixels), pixels,
                images_out.begin() + static_cast<std::ptrdiff_t>(row * pixels));
    labels_out[row] = split.labels[example];
  }
  return indices.size();
}

}  // namespace memsweep
