#pragma once
// Plain-text tables for the commands' output: left-aligned columns two
// spaces apart, no trailing spaces.

#include <string>
#include <vector>

namespace memsweep::cli {

using TableRow = std::vector<std::string>;

// One line per row; every row has the first row's number of cells.
std::string render_table(const std::vector<TableRow>& rows);

}  // namespace memsweep::cli
