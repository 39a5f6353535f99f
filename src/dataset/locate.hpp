#pragma once
// Finding a dataset's files on the search list. Only existence checks here:
// no file is opened.

#include "memsweep/dataset.hpp"

#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

namespace memsweep::dataset_detail {

inline constexpr std::string_view kGzipSuffix = ".gz";

inline constexpr std::string_view kIdxTrainImages = "train-images-idx3-ubyte";
inline constexpr std::string_view kIdxTrainLabels = "train-labels-idx1-ubyte";
inline constexpr std::string_view kIdxTestImages = "t10k-images-idx3-ubyte";
inline constexpr std::string_view kIdxTestLabels = "t10k-labels-idx1-ubyte";

inline constexpr std::string_view kCifarTestBatch = "test_batch.bin";
// data_batch_<n>.bin, n = 1..kCifarTrainingBatches
std::string cifar_training_batch_name(int number);

struct IdxFileSet {
  std::filesystem::path train_images;
  std::filesystem::path train_labels;
  std::filesystem::path test_images;
  std::filesystem::path test_labels;
};

struct CifarFileSet {
  std::vector<std::filesystem::path> train_batches;  // data_batch_1, 2, … consecutively
  std::filesystem::path test_batch;
};

// folder/name if it is a file, else folder/name.gz if that is, else nullopt.
std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& folder, std::string_view name);

// Throw DatasetNotFoundError (every folder looked in, with what each lacked,
// and the expected names) when no folder holds the required files, and
// DatasetError for CIFAR-10 training batches with a gap.
IdxFileSet locate_idx_files(DatasetKind kind, const std::vector<std::filesystem::path>& search_dirs);
CifarFileSet locate_cifar_files(const std::vector<std::filesystem::path>& search_dirs);

}  // namespace memsweep::dataset_detail
