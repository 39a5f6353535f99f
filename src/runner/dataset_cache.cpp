#include "runner/dataset_cache.hpp"

#include <algorithm>

namespace memsweep::runner_detail {
namespace {

// Cut once here rather than per trial (TrainingOptions' limits copy the
// head of each split inside the trial, which would count in its footprint).
void keep_head(Split& split, std::size_t limit) {
  if (limit == 0 || limit >= split.size()) return;
  split.images.resize(limit * split.shape.pixels());
  split.labels.resize(limit);
  split.images.shrink_to_fit();
  split.labels.shrink_to_fit();
}

}  // namespace

DatasetCache::DatasetCache(std::vector<std::filesystem::path> search_dirs, std::size_t max_train_examples,
                           std::size_t max_test_examples)
    : search_dirs_(std::move(search_dirs)), max_train_(max_train_examples), max_test_(max_test_examples) {}

const Dataset& DatasetCache::get(const DatasetSpec& spec) {
  if (held_ && held_->spec == spec) return *held_;
  held_.reset();  // before loading the next: never two datasets at once
  Dataset data = load_dataset(spec, search_dirs_);
  ++loads_;
  keep_head(data.train, max_train_);
  keep_head(data.test, max_test_);
  held_.emplace(std::move(data));
  return *held_;
}

}  // namespace memsweep::runner_detail
