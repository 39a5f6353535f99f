#include "dataset/cifar.hpp"
#include "dataset/gzip_file.hpp"
#include "dataset/idx.hpp"
#include "dataset/locate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using dataset::detail::read_file_bytes;

Split load_idx_split(const fs::path& images_path, const fs::path& labels_path, ImageShape shape, int classes) {
  // Labels first: they are small, so the large image bytes are only ever
  // held together with their own float copy, and freed on return.
  std::vector<std::int32_t> labels =
      dataset::detail::parse_idx_labels(read_file_bytes(labels_path), labels_path.string(), classes);
  const std::vector<std::uint8_t> image_bytes = read_file_bytes(images_path);
  const auto images = dataset::detail::parse_idx_images(image_bytes, images_path.string());
  return dataset::detail::make_idx_split(images, images_path.string(), std::move(labels), labels_path.string(), shape,
                                         classes);
}

void load_idx_dataset(const std::vector<fs::path>& search_dirs, Dataset& dataset) {
  const auto files = dataset::detail::locate_idx_files(dataset.spec.kind, search_dirs);
  const ImageShape shape = input_shape(dataset.spec);
  const int classes = class_count(dataset.spec);
  dataset.train = load_idx_split(files.train_images, files.train_labels, shape, classes);
  dataset.test = load_idx_split(files.test_images, files.test_labels, shape, classes);
  dataset.files = {files.train_images, files.train_labels, files.test_images, files.test_labels};
}

Split load_cifar_split(const std::vector<fs::path>& paths, std::vector<std::string>& notes) {
  std::vector<dataset::detail::CifarBatchBytes> batches;
  for (const fs::path& path : paths) {
    batches.push_back({path.string(), read_file_bytes(path)});
    const std::size_t records = dataset::detail::count_cifar_records(batches.back().bytes, path.string());
    if (records != dataset::detail::kCifarRecordsPerBatch)
      notes.push_back(fmt::format("{} holds {} (the original batch holds {})", path.filename().string(),
                                  dataset::detail::record_count(records), dataset::detail::kCifarRecordsPerBatch));
  }
  return dataset::detail::make_cifar_split(std::move(batches));
}

void load_cifar_dataset(const std::vector<fs::path>& search_dirs, Dataset& dataset) {
  const auto files = dataset::detail::locate_cifar_files(search_dirs);
  std::vector<std::string> batch_names;
  for (const fs::path& path : files.train_batches) batch_names.push_back(path.filename().string());
  dataset.notes.push_back(fmt::format("{}: {} of {} training batches ({})", dataset.name, files.train_batches.size(),
                                      kCifarTrainingBatches, fmt::join(batch_names, ", ")));
  dataset.train = load_cifar_split(files.train_batches, dataset.notes);
  dataset.test = load_cifar_split({files.test_batch}, dataset.notes);
  dataset.files = files.train_batches;
  dataset.files.push_back(files.test_batch);
}

}  // namespace

Dataset load_dataset(const DatasetSpec& spec, const std::vector<fs::path>& search_dirs, const LoadOptions& options) {
  Dataset dataset;
  switch (spec.kind) {
    case DatasetKind::synthetic: dataset = generate_synthetic(spec.synthetic); break;
    case DatasetKind::mnist:
    case DatasetKind::fashion_mnist:
      dataset.spec = spec;
      dataset.name = std::string(dataset_name(spec.kind));
      load_idx_dataset(search_dirs, dataset);
      break;
    case DatasetKind::cifar10:
      dataset.spec = spec;
      dataset.name = std::string(dataset_name(spec.kind));
      load_cifar_dataset(search_dirs, dataset);
      break;
  }
  if (options.standardize) standardize_channels(dataset);
  return dataset;
}

void standardize_channels(Dataset& dataset) {
  const ImageShape shape = dataset.train.shape;
  const auto channels = static_cast<std::size_t>(shape.channels);
  const std::size_t plane = static_cast<std::size_t>(shape.height) * static_cast<std::size_t>(shape.width);
  const std::size_t examples = dataset.train.size();
  // Sums in double: a float accumulator over 47 million MNIST pixels would
  // lose most of its precision.
  std::vector<double> sum(channels, 0.0);
  std::vector<double> sum_of_squares(channels, 0.0);
  for (std::size_t example = 0; example < examples; ++example) {
    for (std::size_t channel = 0; channel < channels; ++channel) {
      const float* values = dataset.train.images.data() + (example * channels + channel) * plane;
      for (std::size_t i = 0; i < plane; ++i) {
        sum[channel] += values[i];
        sum_of_squares[channel] += static_cast<double>(values[i]) * values[i];
      }
    }
  }
  const double count = static_cast<double>(examples * plane);
  dataset.channel_mean.assign(channels, 0.0F);
  dataset.channel_stddev.assign(channels, 1.0F);
  std::vector<float> scale(channels, 1.0F);
  for (std::size_t channel = 0; channel < channels; ++channel) {
    const double mean = sum[channel] / count;
    const double variance = std::max(0.0, sum_of_squares[channel] / count - mean * mean);
    dataset.channel_mean[channel] = static_cast<float>(mean);
    dataset.channel_stddev[channel] = static_cast<float>(std::sqrt(variance));
    // A constant channel has nothing to scale: centre it and leave it at that.
    if (variance > 0.0) scale[channel] = static_cast<float>(1.0 / std::sqrt(variance));
  }
  for (Split* split : {&dataset.train, &dataset.test}) {
    for (std::size_t example = 0; example < split->size(); ++example) {
      for (std::size_t channel = 0; channel < channels; ++channel) {
        float* values = split->images.data() + (example * channels + channel) * plane;
        for (std::size_t i = 0; i < plane; ++i)
          values[i] = (values[i] - dataset.channel_mean[channel]) * scale[channel];
      }
    }
  }
}

}  // namespace memsweep
