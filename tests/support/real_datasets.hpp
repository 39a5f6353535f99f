#pragma once
// Where the real datasets are for the tests that read them, and what such a
// test does when they are absent: skip loudly on a developer's machine, fail
// in CI (where a silent skip would hide that nothing was tested).

#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::testing {

inline constexpr std::string_view kTestDatasetsEnvVar = "MEMSWEEP_TEST_DATASETS";

// The environment variable MEMSWEEP_TEST_DATASETS if set and not empty, else
// the folder configured at build time.
std::filesystem::path real_datasets_root();

// True when the environment variable CI is "true" (GitHub Actions, GitLab CI).
bool running_in_ci();

struct RealDatasetLookup {
  std::optional<std::filesystem::path> root;  // set when root/subfolder is a folder
  std::string message;                        // why not, when it is not
};

// Looks for `subfolder` (e.g. "mnist") under real_datasets_root().
RealDatasetLookup find_real_dataset(std::string_view subfolder);

}  // namespace memsweep::testing

// At the top of a test: binds `root_var` to the real datasets folder holding
// `subfolder`, or ends the test: FAIL in CI, else a loud skip.
#define MEMSWEEP_REAL_DATASETS_OR_SKIP(root_var, subfolder)                                  \
  const auto root_var##_lookup = ::memsweep::testing::find_real_dataset(subfolder);          \
  if (!root_var##_lookup.root) {                                                             \
    if (::memsweep::testing::running_in_ci())                                                \
      FAIL() << root_var##_lookup.message << " (CI=true: a missing dataset fails the test)"; \
    std::cerr << "\n*** SKIPPED: " << root_var##_lookup.message << " ***\n" << std::endl;    \
    GTEST_SKIP() << root_var##_lookup.message;                                               \
  }                                                                                          \
  const std::filesystem::path root_var = *root_var##_lookup.root
