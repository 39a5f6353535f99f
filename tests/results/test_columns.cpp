// The column tables (columns.hpp): each covers its row struct (at compile
// time), and docs/results-file.md lists exactly their columns, with their
// types and units.

#include "common/member_count.hpp"
#include "memsweep/columns.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep {
namespace {

// A row's table covers it: the columns' offsets and sizes follow one
// another through the struct (a wrong offset or size, or a member left out,
// leaves a gap or an overlap), and there are as many of them as the struct
// has members (a member left out where padding could have been, an int32
// before a double, leaves no gap). `grouped` columns share one member (the
// estimate's parts: one array).
template <typename Row, std::size_t N>
constexpr bool table_covers(const std::array<ColumnSpec, N>& table, std::size_t grouped = 0,
                            columns::RowRange uncovered = {}) {
  const std::size_t members = N - (grouped > 0 ? grouped - 1 : 0) + (uncovered.bytes > 0 ? 1 : 0);
  return columns::covers<Row>(table, uncovered) && members == member_count<Row>();
}

// A member added to a row without its table entry, or an entry whose offset
// or size is not its member's, fails here, before any test runs.
static_assert(table_covers<TrialRow>(columns::kTrials, kEstimatePartColumns.size()),
              "/trials' table misses or misplaces a TrialRow member");
static_assert(table_covers<SampleRow>(columns::kSamples, 0,
                                      {offsetof(SampleRow, counters), sizeof(SampleRow::counters),
                                       alignof(std::int64_t)}),
              "/samples' table misses or misplaces a SampleRow member");
static_assert(table_covers<EpochRow>(columns::kEpochs), "/epochs' table misses or misplaces an EpochRow member");
static_assert(table_covers<RunRow>(columns::kRuns), "/runs' table misses or misplaces a RunRow member");
static_assert(table_covers<MessageRow>(columns::kMessages), "/messages' table misses a MessageRow member");
static_assert(table_covers<SearchRow>(columns::kSearches), "/searches' table misses a SearchRow member");
static_assert(table_covers<MetricRow>(columns::kMetrics), "/metrics' table misses a MetricRow member");

// The check itself: a struct with a member the table leaves out, or a table
// that names a member twice, is refused.
struct TwoCounts {
  std::int32_t first = 0;
  std::int32_t second = 0;
  double figure = 0.0;
};
static_assert(table_covers<TwoCounts>(std::array{MEMSWEEP_COLUMN(TwoCounts, first), MEMSWEEP_COLUMN(TwoCounts, second),
                                                 MEMSWEEP_COLUMN(TwoCounts, figure)}));
static_assert(!table_covers<TwoCounts>(std::array{MEMSWEEP_COLUMN(TwoCounts, first),
                                                  MEMSWEEP_COLUMN(TwoCounts, figure)}),
              "an int32 left out where padding could be");
static_assert(!table_covers<TwoCounts>(std::array{MEMSWEEP_COLUMN(TwoCounts, first), MEMSWEEP_COLUMN(TwoCounts, first),
                                                  MEMSWEEP_COLUMN(TwoCounts, figure)}),
              "a member named twice, another left out");
static_assert(!table_covers<TwoCounts>(std::array{MEMSWEEP_COLUMN(TwoCounts, first),
                                                  MEMSWEEP_COLUMN(TwoCounts, second)}),
              "the last member left out");

template <std::size_t N>
std::set<std::string> names_of(const std::array<ColumnSpec, N>& table) {
  std::set<std::string> names;
  for (const ColumnSpec& column : table) names.emplace(column.name);
  return names;
}

template <std::size_t N>
void expect_unique_names(const std::array<ColumnSpec, N>& table, const char* what) {
  EXPECT_EQ(names_of(table).size(), N) << what << " names a column twice";
}

TEST(ColumnTables, NameEachColumnOnce) {
  expect_unique_names(columns::kTrials, "/trials");
  expect_unique_names(columns::kSamples, "/samples");
  expect_unique_names(columns::kEpochs, "/epochs");
  expect_unique_names(columns::kRuns, "/runs");
  expect_unique_names(columns::kMessages, "/messages");
  expect_unique_names(columns::kSearches, "/searches");
  expect_unique_names(columns::kMetrics, "/metrics");
}

TEST(ColumnTables, NoColumnIsNewerThanTheSchemaWritten) {
  for (const ColumnSpec& column : columns::kTrials) EXPECT_LE(column.since_version, kSchemaVersion) << column.name;
  EXPECT_EQ(std::max_element(columns::kTrials.begin(), columns::kTrials.end(),
                             [](const ColumnSpec& a, const ColumnSpec& b) { return a.since_version < b.since_version; })
                ->name,
            "gpu_uuids");
}

TEST(ColumnTables, TextColumnsAreTextAndNotMeasuredFiguresAreNumbers) {
  for (const ColumnSpec& column : columns::kTrials) {
    if (column.kind == ColumnKind::text) {
      EXPECT_EQ(column.unit, column_unit::kText) << column.name;
      EXPECT_EQ(column.minus_one, MinusOne::value) << column.name;
    }
  }
}

TEST(ExportColumnName, AddsTheUnitWhereTheNameDoesNotSayIt) {
  const auto name_of = [](std::string_view name, std::string_view unit) {
    return export_column_name(ColumnSpec{.name = name, .unit = unit});
  };
  EXPECT_EQ(name_of("rss_peak", column_unit::kBytes), "rss_peak_bytes");
  EXPECT_EQ(name_of("predicted_bytes", column_unit::kBytes), "predicted_bytes");
  EXPECT_EQ(name_of("t", column_unit::kSeconds), "t_s");
  EXPECT_EQ(name_of("wall_seconds", column_unit::kSeconds), "wall_seconds");
  EXPECT_EQ(name_of("seconds", column_unit::kSeconds), "seconds");
  EXPECT_EQ(name_of("start_time", column_unit::kUnixTime), "start_time_unix_s");
  EXPECT_EQ(name_of("attempt", column_unit::kOne), "attempt");
  EXPECT_EQ(name_of("fit_a_mib", column_unit::kMiB), "fit_a_mib");
}

// ---- docs/results-file.md --------------------------------------------------

struct DocumentedColumn {
  std::string type;  // "int32", "S16", "int32[16]", ...
  std::string unit;
};

std::vector<std::string> split_list(const std::string& cell) {
  std::vector<std::string> items;
  std::stringstream in(cell);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto first = item.find_first_not_of(' ');
    const auto last = item.find_last_not_of(' ');
    items.push_back(first == std::string::npos ? "" : item.substr(first, last - first + 1));
  }
  return items;
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream in(line.substr(1));
  std::string cell;
  while (std::getline(in, cell, '|')) cells.push_back(cell.substr(1, cell.size() >= 2 ? cell.size() - 2 : 0));
  return cells;
}

// The names of a first cell: `a`, `b` (each in backticks); `a` … `b` for a
// run of the table's columns from a to b.
template <std::size_t N>
std::vector<std::string> names_in(const std::string& cell, const std::array<ColumnSpec, N>& table) {
  std::vector<std::string> names;
  for (std::size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', cell.find('`', at + 1) + 1))
    names.push_back(cell.substr(at + 1, cell.find('`', at + 1) - at - 1));
  if (names.size() == 2 && cell.find("\xe2\x80\xa6") != std::string::npos) {  // "…"
    std::vector<std::string> run;
    bool inside = false;
    for (const ColumnSpec& column : table) {
      if (column.name == names[0]) inside = true;
      if (inside) run.emplace_back(column.name);
      if (column.name == names[1]) break;
    }
    return run;
  }
  return names;
}

// The columns docs/results-file.md lists under "### `/<table>`": its
// Markdown table's rows of name, type, unit and meaning.
template <std::size_t N>
std::map<std::string, DocumentedColumn> documented(const std::string& table_name,
                                                   const std::array<ColumnSpec, N>& table) {
  const std::filesystem::path docs = std::filesystem::path(MEMSWEEP_SOURCE_DIR) / "docs" / "results-file.md";
  std::ifstream in(docs);
  EXPECT_TRUE(in) << "cannot read " << docs;
  std::map<std::string, DocumentedColumn> columns;
  std::string line;
  bool in_section = false;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.starts_with("#")) {
      if (in_section) break;
      in_section = line == fmt::format("### `/{}`", table_name);
      continue;
    }
    if (!in_section) continue;
    if (!line.starts_with("|")) {
      if (in_table) break;  // the first table of the section is its columns'
      continue;
    }
    in_table = true;
    const std::vector<std::string> cells = cells_of(line);
    // The header, the rule, and rows of columns the file names (one per counter).
    if (cells.size() < 3 || !cells[0].starts_with('`')) continue;
    const std::vector<std::string> names = names_in(cells[0], table);
    const std::vector<std::string> types = split_list(cells[1]);
    const std::vector<std::string> units = split_list(cells[2]);
    for (std::size_t i = 0; i < names.size(); ++i)
      columns[names[i]] = {types.size() == names.size() ? types[i] : cells[1],
                           units.size() == names.size() ? units[i] : cells[2]};
  }
  return columns;
}

std::string type_of(const ColumnSpec& column) {
  switch (column.kind) {
    case ColumnKind::int32: return "int32";
    case ColumnKind::int64: return "int64";
    case ColumnKind::uint64: return "uint64";
    case ColumnKind::float64: return "float64";
    case ColumnKind::text: return fmt::format("S{}", column.extent);
    case ColumnKind::int32_array: return fmt::format("int32[{}]", column.extent);
  }
  return "?";
}

template <std::size_t N>
void expect_documented(const std::string& table_name, const std::array<ColumnSpec, N>& table) {
  const std::map<std::string, DocumentedColumn> docs = documented(table_name, table);
  ASSERT_FALSE(docs.empty()) << "docs/results-file.md has no column table under ### `/" << table_name << "`";
  std::set<std::string> undocumented;
  for (const ColumnSpec& column : table) {
    const auto found = docs.find(std::string(column.name));
    if (found == docs.end()) {
      undocumented.emplace(column.name);
      continue;
    }
    EXPECT_EQ(found->second.type, type_of(column)) << "/" << table_name << " " << column.name;
    EXPECT_EQ(found->second.unit, column.unit) << "/" << table_name << " " << column.name;
  }
  EXPECT_EQ(undocumented, std::set<std::string>{}) << "columns of /" << table_name << " the docs do not list";
  std::set<std::string> unknown;
  for (const auto& [name, _] : docs)
    if (!names_of(table).contains(name)) unknown.insert(name);
  EXPECT_EQ(unknown, std::set<std::string>{}) << "columns the docs list under /" << table_name << " that it lacks";
}

TEST(ResultsFileDocs, ListEachTablesColumnsWithTheirTypesAndUnits) {
  expect_documented("trials", columns::kTrials);
  expect_documented("samples", columns::kSamples);
  expect_documented("epochs", columns::kEpochs);
  expect_documented("runs", columns::kRuns);
  expect_documented("messages", columns::kMessages);
  expect_documented("searches", columns::kSearches);
  expect_documented("metrics", columns::kMetrics);
}

}  // namespace
}  // namespace memsweep
