#pragma once
// The one shared dataset a rank holds open for its trial processes
// (shared_dataset.hpp): opened (decoded once per node, or found) when a
// trial needs it, kept while the following trials use the same spec, let go
// before another is opened, so that a rank keeps at most one copy alive.
// The rank itself never maps it: the data are the trial processes' memory.

#include "memsweep/shared_dataset.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <vector>

namespace memsweep::runner::detail {

class DatasetCache {
 public:
  // max_*_examples: keep only the first N examples of each split (0: all).
  DatasetCache(std::vector<std::filesystem::path> search_dirs, std::filesystem::path shared_dir,
               std::size_t max_train_examples, std::size_t max_test_examples);

  // The shared copy of `spec`'s dataset, opening it unless it is the one
  // held. Throws what SharedDataset::open throws (DatasetError,
  // SharedDatasetError, std::bad_alloc); nothing is held then, and the next
  // call tries again.
  const SharedDataset& get(const DatasetSpec& spec);

  std::size_t opens() const { return opens_; }      // copies opened (found or decoded)
  std::size_t decodes() const { return decodes_; }  // of which this rank decoded

 private:
  std::vector<std::filesystem::path> search_dirs_;
  std::filesystem::path shared_dir_;
  std::size_t max_train_;
  std::size_t max_test_;
  std::optional<SharedDataset> held_;
  std::size_t opens_ = 0;
  std::size_t decodes_ = 0;
};

}  // namespace memsweep::runner::detail
