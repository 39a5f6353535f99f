#pragma once
// A whole file as bytes, for tests that compare a file before and after or
// read small /proc and /sys files.

#include <filesystem>
#include <string>

namespace memsweep::testing {

// Empty if the file cannot be read: the comparison that follows then fails
// and names what was expected.
std::string slurp(const std::filesystem::path& file);

}  // namespace memsweep::testing
