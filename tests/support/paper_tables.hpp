#pragma once
// The source paper's published trials, read from ../shared/paper/*.csv: the
// independent record that the example sweep files must reproduce.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace memsweep::testing {

struct PublishedTrial {
  double learning_rate;
  int epochs;
  int batch_size;
  std::vector<int> hidden;
};

std::filesystem::path paper_table(const std::string& csv_name);
std::vector<PublishedTrial> read_paper_table(const std::filesystem::path& csv);

}  // namespace memsweep::testing

// In CI (CI=true) the shared folder must be there, so its absence fails the
// test; elsewhere the test is skipped, loudly.
#define MEMSWEEP_REQUIRE_SHARED_FILE(path)                                             \
  do {                                                                                 \
    if (!std::filesystem::exists(path)) {                                              \
      const std::string missing_message = "shared file not found: " + (path).string(); \
      const char* ci_flag = std::getenv("CI");                                         \
      if (ci_flag != nullptr && std::string(ci_flag) == "true")                        \
        FAIL() << missing_message << " (CI=true: ../shared must be present)";          \
      std::fprintf(stderr, "\n*** SKIPPED: %s ***\n\n", missing_message.c_str());      \
      GTEST_SKIP() << missing_message;                                                 \
    }                                                                                  \
  } while (false)
