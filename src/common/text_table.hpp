#pragma once
// Plain-text tables for the commands' output: left-aligned columns two
// spaces apart, no trailing spaces.

#include <cstdio>
#include <string>
#include <vector>

namespace memsweep {

using TableRow = std::vector<std::string>;

// One line per row; every row has the first row's number of cells.
std::string render_table(const std::vector<TableRow>& rows);

// The same table for a great many rows (`plan` of 10^6 trials): each row
// kept as one string rather than a vector of strings, and written out line
// by line rather than as one text. A vector of cells per row, then the text,
// then the text joined to the rest, took `plan` of 10^6 trials past 1 GiB.
class PackedTable {
 public:
  void add(const TableRow& row);
  void write(std::FILE* out) const;

 private:
  std::vector<std::size_t> widths_;
  std::vector<std::string> rows_;  // cells apart by kCellSeparator
};

}  // namespace memsweep
