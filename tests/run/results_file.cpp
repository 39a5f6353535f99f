#include "run/results_file.hpp"

#include "support/subprocess.hpp"

#include <sstream>
#include <stdexcept>

namespace memsweep::testing {
namespace {

const std::string kPython = "/usr/bin/python3";  // Debian's, which has python3-h5py
const std::string kScript = std::string(MEMSWEEP_SOURCE_DIR) + "/analysis/tools/results_tsv.py";

// The script writes \\, \t and \n for a backslash, tab and newline.
std::string unescaped(const std::string& cell) {
  std::string out;
  for (std::size_t i = 0; i < cell.size(); ++i) {
    if (cell[i] != '\\' || i + 1 == cell.size()) {
      out += cell[i];
      continue;
    }
    const char next = cell[++i];
    out += next == 't' ? '\t' : next == 'n' ? '\n' : next;
  }
  return out;
}

std::vector<std::vector<std::string>> tsv(const std::vector<std::string>& args) {
  std::vector<std::string> argv{kPython, kScript};
  argv.insert(argv.end(), args.begin(), args.end());
  const CommandResult result = run_command(argv);
  if (result.exit_status != 0) throw std::runtime_error("results_tsv.py failed: " + result.err);
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(result.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, '\t');) cells.push_back(unescaped(cell));
    if (!line.empty() && line.back() == '\t') cells.emplace_back();
    lines.push_back(cells);
  }
  return lines;
}

std::map<std::string, std::string> pairs(const std::vector<std::vector<std::string>>& lines) {
  std::map<std::string, std::string> out;
  for (const auto& line : lines)
    if (!line.empty()) out[line[0]] = line.size() > 1 ? line[1] : "";
  return out;
}

}  // namespace

std::size_t TsvTable::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return i;
  throw std::out_of_range("no column " + name);
}

std::vector<std::size_t> TsvTable::where(const std::string& name, const std::string& value) const {
  std::vector<std::size_t> found;
  for (std::size_t row = 0; row < rows.size(); ++row)
    if (at(row, name) == value) found.push_back(row);
  return found;
}

TsvTable h5py_table(const std::filesystem::path& file, const std::string& table, bool swmr) {
  std::vector<std::string> args{file.string(), "table", table};
  if (swmr) args.insert(args.begin(), "--swmr");
  auto lines = tsv(args);
  TsvTable out;
  if (lines.empty()) throw std::runtime_error("results_tsv.py printed nothing for " + table);
  out.columns = lines.front();
  out.rows.assign(lines.begin() + 1, lines.end());
  return out;
}

std::map<std::string, std::string> h5py_attributes(const std::filesystem::path& file) {
  return pairs(tsv({file.string(), "attributes"}));
}

std::map<std::string, std::string> h5py_units(const std::filesystem::path& file, const std::string& table) {
  return pairs(tsv({file.string(), "units", table}));
}

}  // namespace memsweep::testing
