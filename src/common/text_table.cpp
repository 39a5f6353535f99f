#include "common/text_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace memsweep {
namespace {

// ASCII's unit separator: no cell holds it (they are names and numbers).
constexpr char kCellSeparator = '\x1f';

template <typename Cells>
std::string line_of(const Cells& cells, const std::vector<std::size_t>& widths) {
  std::string line;
  std::size_t c = 0;
  for (const auto& cell : cells) line += fmt::format("{:<{}}  ", cell, widths[c++]);
  line.erase(line.find_last_not_of(' ') + 1);
  return line + "\n";
}

std::vector<std::string_view> cells_of(std::string_view packed) {
  std::vector<std::string_view> cells;
  for (std::size_t start = 0;;) {
    const std::size_t end = packed.find(kCellSeparator, start);
    cells.push_back(packed.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return cells;
    start = end + 1;
  }
}

}  // namespace

std::string render_table(const std::vector<TableRow>& rows) {
  if (rows.empty()) return {};
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const TableRow& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  std::string out;
  for (const TableRow& row : rows) out += line_of(row, widths);
  return out;
}

void PackedTable::add(const TableRow& row) {
  widths_.resize(std::max(widths_.size(), row.size()), 0);
  std::string packed;
  for (std::size_t c = 0; c < row.size(); ++c) {
    widths_[c] = std::max(widths_[c], row[c].size());
    if (c > 0) packed += kCellSeparator;
    packed += row[c];
  }
  rows_.push_back(std::move(packed));
}

void PackedTable::write(std::FILE* out) const {
  for (const std::string& row : rows_) fmt::print(out, "{}", line_of(cells_of(row), widths_));
}

}  // namespace memsweep
