#include "memsweep/dataset_spec.hpp"

#include <array>
#include <utility>

namespace memsweep {
namespace {

constexpr std::array<std::pair<DatasetKind, std::string_view>, 4> kNames{{
    {DatasetKind::mnist, "mnist"},
    {DatasetKind::fashion_mnist, "fashion-mnist"},
    {DatasetKind::cifar10, "cifar-10"},
    {DatasetKind::synthetic, "synthetic"},
}};

constexpr ImageShape kMnistShape{1, 28, 28};
constexpr ImageShape kCifarShape{3, 32, 32};
constexpr int kRealDatasetClasses = 10;

}  // namespace

std::string_view dataset_name(DatasetKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  return "unknown";
}

std::optional<DatasetKind> parse_dataset_name(std::string_view name) {
  for (const auto& [kind, n] : kNames)
    if (n == name) return kind;
  return std::nullopt;
}

ImageShape input_shape(const DatasetSpec& spec) {
  switch (spec.kind) {
    case DatasetKind::mnist:
    case DatasetKind::fashion_mnist: return kMnistShape;
    case DatasetKind::cifar10: return kCifarShape;
    case DatasetKind::synthetic: return spec.synthetic.shape;
  }
  return spec.synthetic.shape;
}

int class_count(const DatasetSpec& spec) {
  return spec.kind == DatasetKind::synthetic ? spec.synthetic.classes : kRealDatasetClasses;
}

}  // namespace memsweep
