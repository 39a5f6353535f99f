#pragma once
// Where the real datasets are for the tests that read them, and what such a
// test does when they are absent: skip loudly on a developer's machine, fail
// in CI (where a silent skip would hide that nothing was tested).

#include "support/skip_or_fail.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::testing {

inline constexpr std::string_view kTestDatasetsEnvVar = "MEMSWEEP_TEST_DATASETS";

// The environment variable MEMSWEEP_TEST_DATASETS if set and not empty, else
// the folder configured at build time.
std::filesystem::path real_datasets_root();

struct RealDatasetLookup {
  std::optional<std::filesystem::path> root;  // set when root/subfolder is a folder
  std::string message;                        // why not, when it is not
};

// Looks for `subfolder` (e.g. "mnist") under real_datasets_root().
RealDatasetLookup find_real_dataset(std::string_view subfolder);

}  // namespace memsweep::testing

// At the top of a test: binds `root_var` to the real datasets folder holding
// `subfolder`, or ends the test: FAIL in CI, else a loud skip.
#define MEMSWEEP_REAL_DATASETS_OR_SKIP(root_var, subfolder)                            \
  const auto root_var##_lookup = ::memsweep::testing::find_real_dataset(subfolder);    \
  if (!root_var##_lookup.root) MEMSWEEP_SKIP_OR_FAIL_IN_CI(root_var##_lookup.message); \
  const std::filesystem::path root_var = *root_var##_lookup.root
