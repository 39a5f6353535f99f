// The dataset a rank keeps in memory for all its trials.

#include "memsweep/estimate.hpp"

#include <fmt/format.h>

namespace memsweep {
namespace {

// The published split sizes.
constexpr ExampleCounts kMnistCounts{60'000, 10'000};  // MNIST and Fashion-MNIST
constexpr ExampleCounts kCifar10Counts{50'000, 10'000};

}  // namespace

ExampleCounts canonical_example_counts(const DatasetSpec& spec) {
  switch (spec.kind) {
    case DatasetKind::mnist:
    case DatasetKind::fashion_mnist: return kMnistCounts;
    case DatasetKind::cifar10: return kCifar10Counts;
    case DatasetKind::synthetic:
      return {static_cast<std::size_t>(spec.synthetic.train_size), static_cast<std::size_t>(spec.synthetic.test_size)};
  }
  return {};
}

ExampleCounts example_counts(const Dataset& data) { return {data.train.size(), data.test.size()}; }

std::uint64_t resident_dataset_bytes(const ImageShape& shape, ExampleCounts counts) {
  const std::uint64_t examples = counts.train + counts.test;
  return examples * (shape.pixels() * sizeof(float) + sizeof(std::int32_t));
}

EstimatePart resident_dataset_part(const DatasetSpec& spec, ExampleCounts counts) {
  return EstimatePart{
      std::string(estimate_part::kResidentDataset), resident_dataset_bytes(input_shape(spec), counts),
      fmt::format("{} + {} float32 images and int32 labels, held by the rank, outside the trial's peak - baseline",
                  counts.train, counts.test)};
}

}  // namespace memsweep
