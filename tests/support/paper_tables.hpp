#pragma once
// The source paper's published trials, read from ../shared/paper/*.csv: the
// independent record that the example sweep files must reproduce.

#include "support/skip_or_fail.hpp"

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

// Ends the test when `path` (a std::filesystem::path) is not there: CI has
// ../shared, a developer's checkout may not.
#define MEMSWEEP_REQUIRE_SHARED_FILE(path)                                                                        \
  do {                                                                                                            \
    if (!std::filesystem::exists(path)) MEMSWEEP_SKIP_OR_FAIL_IN_CI("shared file not found: " + (path).string()); \
  } while (false)
