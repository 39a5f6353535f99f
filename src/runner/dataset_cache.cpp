#include "runner/dataset_cache.hpp"

#include <utility>

namespace memsweep::runner::detail {

DatasetCache::DatasetCache(std::vector<std::filesystem::path> search_dirs, std::filesystem::path shared_dir,
                           std::size_t max_train_examples, std::size_t max_test_examples)
    : search_dirs_(std::move(search_dirs)),
      shared_dir_(std::move(shared_dir)),
      max_train_(max_train_examples),
      max_test_(max_test_examples) {}

const SharedDataset& DatasetCache::get(const DatasetSpec& spec) {
  if (held_ && held_->spec() == spec) return *held_;
  // Let go of the old copy first: if no other rank uses it, it is removed
  // before the next one takes room on the node.
  held_.reset();
  held_.emplace(SharedDataset::open(SharedDatasetRequest{spec, search_dirs_, max_train_, max_test_}, shared_dir_));
  ++opens_;
  if (held_->decoded_here()) ++decodes_;
  return *held_;
}

}  // namespace memsweep::runner::detail
