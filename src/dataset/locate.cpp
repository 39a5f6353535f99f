#include "dataset/locate.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <string>
#include <utility>

namespace memsweep::dataset::detail {
namespace {

namespace fs = std::filesystem;

// The first folder holding every required file, with the files' paths in the
// order of `names`; else DatasetNotFoundError describing each place looked.
std::pair<fs::path, std::vector<fs::path>> find_folder_with(DatasetKind kind, const std::vector<fs::path>& search_dirs,
                                                            std::string_view optional_files = {}) {
  FolderSearch search = search_dataset_folders(kind, search_dirs);
  if (search.folder) return {std::move(*search.folder), std::move(search.files)};
  std::string places;
  for (const FolderLook& look : search.looked) places += fmt::format("\n  {}: {}", look.folder.string(), look.lacked);
  if (places.empty()) places = "\n  (no folders: the search list is empty)";
  std::vector<std::string> expected;
  for (const std::string_view name : required_file_names(kind))
    expected.push_back(fmt::format("{} or {}{}", name, name, kGzipSuffix));
  throw DatasetNotFoundError(fmt::format(
      "{} not found: no folder holds all of its files. Looked in:{}\n"
      "Expected in one folder: {}{}.\n"
      "Pass --data-dir DIR or set {} to a folder holding {}/ (ci/fetch-datasets.sh DIR downloads the datasets).",
      dataset_name(kind), places, fmt::join(expected, ", "), optional_files, kDataDirEnvVar,
      dataset_subfolders(kind).front()));
}

}  // namespace

std::string cifar_training_batch_name(int number) { return fmt::format("data_batch_{}.bin", number); }

std::vector<std::string_view> required_file_names(DatasetKind kind) {
  // data_batch_1.bin outlives the call: a literal, not cifar_training_batch_name(1).
  static constexpr std::string_view kCifarFirstBatch = "data_batch_1.bin";
  switch (kind) {
    case DatasetKind::mnist:
    case DatasetKind::fashion_mnist: return {kIdxTrainImages, kIdxTrainLabels, kIdxTestImages, kIdxTestLabels};
    case DatasetKind::cifar10: return {kCifarFirstBatch, kCifarTestBatch};
    case DatasetKind::synthetic: return {};
  }
  return {};
}

FolderSearch search_dataset_folders(DatasetKind kind, const std::vector<fs::path>& search_dirs) {
  const std::vector<std::string_view> names = required_file_names(kind);
  FolderSearch search;
  for (const fs::path& dir : search_dirs) {
    for (const std::string_view subfolder : dataset_subfolders(kind)) {
      const fs::path folder = dir / subfolder;
      std::error_code error;
      if (!fs::is_directory(folder, error)) {
        search.looked.push_back({folder, fs::exists(folder, error) ? "not a folder" : "no such folder"});
        continue;
      }
      std::vector<fs::path> found;
      std::vector<std::string> missing;
      for (const std::string_view name : names) {
        if (auto file = find_data_file(folder, name))
          found.push_back(std::move(*file));
        else
          missing.push_back(fmt::format("{}[{}]", name, kGzipSuffix));
      }
      if (missing.empty()) {
        search.folder = folder;
        search.files = std::move(found);
        return search;
      }
      search.looked.push_back({folder, fmt::format("missing {}", fmt::join(missing, ", "))});
    }
  }
  return search;
}

std::optional<fs::path> find_data_file(const fs::path& folder, std::string_view name) {
  std::error_code error;
  fs::path raw = folder / name;
  if (fs::is_regular_file(raw, error)) return raw;
  fs::path compressed = folder / (std::string(name) + std::string(kGzipSuffix));
  if (fs::is_regular_file(compressed, error)) return compressed;
  return std::nullopt;
}

IdxFileSet locate_idx_files(DatasetKind kind, const std::vector<fs::path>& search_dirs) {
  auto [folder, files] = find_folder_with(kind, search_dirs);
  return {std::move(files[0]), std::move(files[1]), std::move(files[2]), std::move(files[3])};
}

CifarFileSet locate_cifar_files(const std::vector<fs::path>& search_dirs) {
  const std::string first_batch = cifar_training_batch_name(1);
  const std::string optional_files =
      fmt::format("; then, optionally, {} to {} (each raw or .gz)", cifar_training_batch_name(2),
                  cifar_training_batch_name(kCifarTrainingBatches));
  auto [folder, files] = find_folder_with(DatasetKind::cifar10, search_dirs, optional_files);
  CifarFileSet set{{std::move(files[0])}, std::move(files[1])};
  int number = 2;
  for (; number <= kCifarTrainingBatches; ++number) {
    auto batch = find_data_file(folder, cifar_training_batch_name(number));
    if (!batch) break;
    set.train_batches.push_back(std::move(*batch));
  }
  // A later batch after a missing one is most likely a mistake (a failed
  // download, a misnamed file); loading around it would silently train on
  // less data than the folder suggests.
  for (int later = number + 1; later <= kCifarTrainingBatches; ++later) {
    if (const auto stray = find_data_file(folder, cifar_training_batch_name(later)))
      throw DatasetError(fmt::format(
          "{}: CIFAR-10 training batches must be consecutive from {}: found {} but not {}[{}]", folder.string(),
          first_batch, stray->filename().string(), cifar_training_batch_name(number), kGzipSuffix));
  }
  return set;
}

}  // namespace memsweep::dataset::detail

namespace memsweep {
namespace {

namespace fs = std::filesystem;

constexpr char kEnvListSeparator = ':';

}  // namespace

std::vector<fs::path> dataset_search_dirs(const std::optional<fs::path>& cli_dir,
                                          const std::optional<std::string>& env_value, const fs::path& cwd) {
  // operator/ keeps an absolute right-hand side as it is.
  if (cli_dir) return {cwd / *cli_dir};
  std::vector<fs::path> dirs;
  if (env_value) {
    std::string_view rest = *env_value;
    while (!rest.empty()) {
      const std::size_t end = rest.find(kEnvListSeparator);
      const std::string_view entry = rest.substr(0, end);
      if (!entry.empty()) dirs.push_back(cwd / entry);
      rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
    }
  }
  if (dirs.empty()) dirs.push_back(cwd / kDefaultDataDir);
  return dirs;
}

std::vector<fs::path> dataset_search_dirs_from_environment(const std::optional<fs::path>& cli_dir) {
  const char* env_value = std::getenv(std::string(kDataDirEnvVar).c_str());
  return dataset_search_dirs(cli_dir, env_value != nullptr ? std::optional<std::string>(env_value) : std::nullopt,
                             fs::current_path());
}

std::vector<std::string_view> dataset_subfolders(DatasetKind kind) {
  switch (kind) {
    case DatasetKind::mnist: return {"mnist"};
    case DatasetKind::fashion_mnist: return {"fashion-mnist"};
    case DatasetKind::cifar10: return {"cifar-10", "cifar-10-batches-bin"};
    case DatasetKind::synthetic: return {};
  }
  return {};
}

}  // namespace memsweep
