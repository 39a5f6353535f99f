#pragma once
// The data a trial trains on: MNIST and Fashion-MNIST (IDX files), CIFAR-10
// (binary version), or a seeded synthetic set; where the files are looked
// for; and the shuffled batch order an epoch walks through.
//
// Images are float32 in NCHW order, scaled to [0, 1] (pixel / 255), or
// standardised per channel when LoadOptions::standardize is set. Labels are
// int32 class indices in [0, classes).

#include "memsweep/dataset_spec.hpp"
#include "memsweep/error.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// A dataset file that is missing, unreadable or malformed. The message names
// the file (or every place looked) and what is wrong.
class DatasetError : public InputError {
 public:
  using InputError::InputError;
};

// No folder on the search list holds the dataset's files; the message lists
// every folder looked in and the file names expected there.
class DatasetNotFoundError : public DatasetError {
 public:
  using DatasetError::DatasetError;
};

struct Split {
  ImageShape shape;
  int classes = 0;
  std::vector<float> images;         // size() * shape.pixels() values, NCHW
  std::vector<std::int32_t> labels;  // one per image, in [0, classes)

  std::size_t size() const { return labels.size(); }
  std::span<const float> image(std::size_t index) const {
    return std::span<const float>(images).subspan(index * shape.pixels(), shape.pixels());
  }
};

// A split held elsewhere (a Dataset, or a dataset shared between processes,
// shared_dataset.hpp): what training reads.
struct SplitView {
  ImageShape shape;
  int classes = 0;
  std::span<const float> images;         // size() * shape.pixels() values, NCHW
  std::span<const std::int32_t> labels;  // one per image, in [0, classes)

  std::size_t size() const { return labels.size(); }
  std::span<const float> image(std::size_t index) const {
    return images.subspan(index * shape.pixels(), shape.pixels());
  }
  // The first `examples` (all of them when more), without a copy.
  SplitView head(std::size_t examples) const;
};

SplitView view_of(const Split& split);

struct Dataset {
  std::string name;  // dataset_name(spec.kind)
  DatasetSpec spec;
  Split train;
  Split test;
  std::vector<std::filesystem::path> files;  // what was read, in reading order; empty for synthetic
  // Facts a caller should report, e.g. "cifar-10: 1 of 5 training batches
  // (data_batch_1.bin.gz)", "data_batch_1.bin.gz holds 4000 records (the
  // original batch holds 10000)".
  std::vector<std::string> notes;
  // Per-channel statistics of the train split's [0, 1] pixels that were used
  // to standardise both splits; empty unless LoadOptions::standardize.
  std::vector<float> channel_mean;
  std::vector<float> channel_stddev;
};

// What a trial trains on, wherever it is held.
struct DatasetView {
  std::string name;  // dataset_name(spec.kind)
  DatasetSpec spec;
  SplitView train;
  SplitView test;
};

DatasetView view_of(const Dataset& dataset);

struct LoadOptions {
  // Subtract the train split's per-channel mean and divide by its standard
  // deviation, in both splits (the test split never informs the statistics).
  bool standardize = false;
};

// ---- where the files are -------------------------------------------------

inline constexpr std::string_view kDataDirEnvVar = "MEMSWEEP_DATA";
inline constexpr std::string_view kDefaultDataDir = "data";
inline constexpr int kCifarTrainingBatches = 5;  // data_batch_1..5 in the original

// The folders to look in, by precedence: the --data-dir option if given;
// else the MEMSWEEP_DATA value if set and not empty (a ':'-separated list,
// like PATH, searched in order; empty entries are ignored); else data/ under
// `cwd`. Relative entries are made absolute against `cwd`. Pure.
std::vector<std::filesystem::path> dataset_search_dirs(const std::optional<std::filesystem::path>& cli_dir,
                                                       const std::optional<std::string>& env_value,
                                                       const std::filesystem::path& cwd);

// The same, with MEMSWEEP_DATA and the working directory of this process.
std::vector<std::filesystem::path> dataset_search_dirs_from_environment(
    const std::optional<std::filesystem::path>& cli_dir);

// The subfolders of a data dir that may hold the dataset, in the order they
// are tried: mnist/, fashion-mnist/, cifar-10/ then cifar-10-batches-bin/
// (the folder the official CIFAR-10 tarball extracts to). Empty for synthetic.
std::vector<std::string_view> dataset_subfolders(DatasetKind kind);

// ---- loading ---------------------------------------------------------------

// Loads the dataset the spec names (or generates the synthetic one).
//
// Files: each is read as NAME or NAME.gz (raw first when both exist), with all
// of a dataset's files from one folder: the first folder, in search order,
// that holds all of them.
// - MNIST, Fashion-MNIST: train-images-idx3-ubyte, train-labels-idx1-ubyte,
//   t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte.
// - CIFAR-10: test_batch.bin and data_batch_1.bin are required; training uses
//   data_batch_1.bin and the batches that follow it consecutively (2, 3, …, 5).
//   A gap (say 1, 2 and 4 present, 3 missing) is a DatasetError rather than a
//   silent partial load, since a misplaced file is likely a mistake. A batch
//   may hold fewer than 10,000 records (its size says how many); Dataset::notes
//   reports partial batch sets and short batches.
//
// Throws DatasetNotFoundError when no folder holds the files, DatasetError for
// a file that cannot be read or is malformed.
Dataset load_dataset(const DatasetSpec& spec, const std::vector<std::filesystem::path>& search_dirs,
                     const LoadOptions& options = {});

// The synthetic dataset of `spec`: each class has a prototype image (uniform
// random pixels in [0, 1]); an example is its class's prototype plus gaussian
// noise of standard deviation spec.noise, clamped to [0, 1]. Labels are
// uniform random. The same spec gives the same bytes on every platform.
// Throws DatasetError for an impossible spec (a dimension or a split size
// < 1, fewer than 2 classes, a negative or non-finite noise).
Dataset generate_synthetic(const SyntheticSpec& spec);

// Standardises both splits in place with the train split's per-channel mean
// and standard deviation (a channel with no spread is only centred).
void standardize_channels(Dataset& dataset);

// ---- batches ---------------------------------------------------------------

// The order in which one epoch visits a split's examples: a permutation that
// depends only on (seed, epoch), cut into batches of batch_size rows; the last
// batch holds the remainder. Allocates once, in the constructor, so that a
// training loop can call start_epoch() and gather() into buffers it owns
// without allocating per step.
class BatchOrder {
 public:
  // Throws std::invalid_argument for batch_size 0. Starts at epoch 0.
  BatchOrder(std::size_t examples, std::size_t batch_size, std::uint64_t seed);

  void start_epoch(int epoch);
  int epoch() const { return epoch_; }

  std::size_t examples() const { return order_.size(); }
  std::size_t batch_size() const { return batch_size_; }
  std::size_t batch_count() const;
  std::size_t batch_rows(std::size_t batch) const;
  // Example indices of one batch, in the epoch's order.
  std::span<const std::size_t> batch_indices(std::size_t batch) const;

  // Copies the batch's images (rows * pixels floats) and labels to the front
  // of the outputs and returns the number of rows. Throws std::invalid_argument
  // when the split's size differs from examples(), the batch index is out of
  // range or an output is too small.
  std::size_t gather(std::size_t batch, const SplitView& split, std::span<float> images_out,
                     std::span<std::int32_t> labels_out) const;
  std::size_t gather(std::size_t batch, const Split& split, std::span<float> images_out,
                     std::span<std::int32_t> labels_out) const {
    return gather(batch, view_of(split), images_out, labels_out);
  }

 private:
  std::size_t batch_size_;
  std::uint64_t seed_;
  int epoch_ = 0;
  std::vector<std::size_t> order_;
};

}  // namespace memsweep
