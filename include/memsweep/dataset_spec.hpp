#pragma once
// What a trial says about its data: which dataset, and for the synthetic one
// its shape. Pure descriptions, shared by the sweep file (config) and the
// loaders (dataset); nothing here touches a file.

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace memsweep {

enum class DatasetKind { mnist, fashion_mnist, cifar10, synthetic };

// The names used in sweep files, results files and folder names.
std::string_view dataset_name(DatasetKind kind);
std::optional<DatasetKind> parse_dataset_name(std::string_view name);
inline constexpr std::string_view kDatasetNames = "mnist, fashion-mnist, cifar-10, synthetic";

struct ImageShape {
  int channels = 1;
  int height = 28;
  int width = 28;

  std::size_t pixels() const {
    return static_cast<std::size_t>(channels) * static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  }
  auto operator<=>(const ImageShape&) const = default;
};

// A seeded, learnable stand-in for a real dataset: each class has its own
// pattern, images are that pattern plus noise. The seed belongs to the
// dataset, not the trial, so that every trial of a rank can share one copy.
struct SyntheticSpec {
  ImageShape shape{1, 28, 28};
  int classes = 10;
  int train_size = 6000;
  int test_size = 1000;
  double noise = 0.5;  // standard deviation of the per-pixel noise, in [0, 1] pixel units
  std::uint64_t seed = 1;

  auto operator<=>(const SyntheticSpec&) const = default;
};

struct DatasetSpec {
  DatasetKind kind = DatasetKind::synthetic;
  SyntheticSpec synthetic;  // read only when kind == synthetic

  bool operator==(const DatasetSpec& other) const {
    return kind == other.kind && (kind != DatasetKind::synthetic || synthetic == other.synthetic);
  }
};

// Shape and class count follow from the dataset (fixed for the real ones).
ImageShape input_shape(const DatasetSpec& spec);
int class_count(const DatasetSpec& spec);

}  // namespace memsweep
