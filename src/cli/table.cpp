#include "cli/table.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace memsweep::cli {

std::string render_table(const std::vector<TableRow>& rows) {
  if (rows.empty()) return {};
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const TableRow& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  std::string out;
  for (const TableRow& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += fmt::format("{:<{}}  ", row[c], widths[c]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace memsweep::cli
