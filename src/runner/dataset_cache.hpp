#pragma once
// The one dataset a rank holds: loaded (or generated) when a trial needs it,
// kept while the following trials use the same spec, freed before another
// one is loaded so that two never sit in memory together. It is loaded
// before a trial's baseline, so it is the rank's memory, not the trial's.

#include "memsweep/dataset.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <vector>

namespace memsweep::runner_detail {

class DatasetCache {
 public:
  // max_*_examples: keep only the first N examples of each split (0: all).
  DatasetCache(std::vector<std::filesystem::path> search_dirs, std::size_t max_train_examples,
               std::size_t max_test_examples);

  // The dataset of `spec`, loading it unless it is the one held. Throws what
  // the loader throws (DatasetError, std::bad_alloc); nothing is held then,
  // and the next call tries again.
  const Dataset& get(const DatasetSpec& spec);

  std::size_t loads() const { return loads_; }

 private:
  std::vector<std::filesystem::path> search_dirs_;
  std::size_t max_train_;
  std::size_t max_test_;
  std::optional<Dataset> held_;
  std::size_t loads_ = 0;
};

}  // namespace memsweep::runner_detail
