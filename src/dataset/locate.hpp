#pragma once
// Finding a dataset's files on the search list. Only existence checks here:
// no file is opened.

#include "memsweep/dataset.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::dataset::detail {

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

// One folder the search tried, and why it would not do: "no such folder",
// "not a folder", or "missing NAME[.gz], …".
struct FolderLook {
  std::filesystem::path folder;
  std::string lacked;
};

// Where a dataset's required files are: the first folder on the search list
// holding every one of them (their paths in the order of
// required_file_names()), else every folder tried with what it lacked.
struct FolderSearch {
  std::optional<std::filesystem::path> folder;
  std::vector<std::filesystem::path> files;
  std::vector<FolderLook> looked;
};

// The files a dataset must have in one folder (each raw or .gz): the four IDX
// files, or CIFAR-10's data_batch_1.bin and test_batch.bin. Empty for synthetic.
std::vector<std::string_view> required_file_names(DatasetKind kind);

// Only existence checks; never throws.
FolderSearch search_dataset_folders(DatasetKind kind, const std::vector<std::filesystem::path>& search_dirs);

// folder/name if it is a file, else folder/name.gz if that is, else nullopt.
std::optional<std::filesystem::path> find_data_file(const std::filesystem::path& folder, std::string_view name);

// Throw DatasetNotFoundError (every folder looked in, with what each lacked,
// and the expected names) when no folder holds the required files, and
// DatasetError for CIFAR-10 training batches with a gap.
IdxFileSet locate_idx_files(DatasetKind kind, const std::vector<std::filesystem::path>& search_dirs);
CifarFileSet locate_cifar_files(const std::vector<std::filesystem::path>& search_dirs);

}  // namespace memsweep::dataset::detail
