#pragma once
// Reading a results file the way any user can: h5py alone (through
// analysis/tools/results_tsv.py, no memsweep code) or h5dump.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace memsweep::testing {

struct TsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  std::size_t column(const std::string& name) const;  // throws when absent
  const std::string& at(std::size_t row, const std::string& name) const { return rows.at(row).at(column(name)); }
  double number(std::size_t row, const std::string& name) const { return std::stod(at(row, name)); }
  // Rows whose `name` column equals `value`.
  std::vector<std::size_t> where(const std::string& name, const std::string& value) const;
};

// Through h5py; a failure of the script fails the calling test with its message.
// `swmr`: open as a SWMR reader (a file a run is writing, or a killed run left).
TsvTable h5py_table(const std::filesystem::path& file, const std::string& table, bool swmr = false);
std::map<std::string, std::string> h5py_attributes(const std::filesystem::path& file);
std::map<std::string, std::string> h5py_units(const std::filesystem::path& file, const std::string& table);

}  // namespace memsweep::testing
