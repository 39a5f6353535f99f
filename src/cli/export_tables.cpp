#include "cli/export_tables.hpp"

#include "memsweep/columns.hpp"
#include "memsweep/config.hpp"
#include "memsweep/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

namespace memsweep::cli {
namespace {

// The export writes each table's columns as columns.hpp declares them, in
// the file's order but for `definition` (long text, last), with the few
// cells below written otherwise.
constexpr std::string_view kDefinitionColumn = "definition";

template <typename Value>
Value value_at(const void* row, const ColumnSpec& column) {
  Value value;
  std::memcpy(&value, static_cast<const std::byte*>(row) + column.offset, sizeof value);
  return value;
}

// A cell as the column's kind and its -1 say: -1 of a figure not measured
// or of a thing there is none of is an empty cell (NA), as is NaN.
void write_cell(const void* row, const ColumnSpec& column, DelimitedWriter& out) {
  const bool minus_one_is_empty = column.minus_one != MinusOne::value;
  switch (column.kind) {
    case ColumnKind::int32:
    case ColumnKind::int64: {
      const std::int64_t value =
          column.kind == ColumnKind::int32 ? value_at<std::int32_t>(row, column) : value_at<std::int64_t>(row, column);
      if (value == -1 && minus_one_is_empty)
        out.empty();
      else
        out.integer(value);
      return;
    }
    case ColumnKind::uint64: out.unsigned_integer(value_at<std::uint64_t>(row, column)); return;
    case ColumnKind::float64: {
      const double value = value_at<double>(row, column);
      if (std::isnan(value) || (value == -1.0 && minus_one_is_empty))
        out.empty();
      else
        out.real(value);
      return;
    }
    case ColumnKind::text: {
      const char* text = static_cast<const char*>(row) + column.offset;
      out.text(std::string_view(text, strnlen(text, column.extent)));
      return;
    }
    case ColumnKind::int32_array: {
      // "64-32": the widths of the layers there are, up to the first 0; empty for none.
      std::vector<std::int32_t> present;
      for (std::size_t i = 0; i < column.extent; ++i) {
        std::int32_t size = 0;
        std::memcpy(&size, static_cast<const std::byte*>(row) + column.offset + i * sizeof size, sizeof size);
        if (size <= 0) break;
        present.push_back(size);
      }
      out.text(fmt::format("{}", fmt::join(present, "-")));
      return;
    }
  }
}

// Made once per table: the samples' export writes millions of rows.
template <const auto& kTable>
const std::vector<const ColumnSpec*>& export_order() {
  static const std::vector<const ColumnSpec*> order = [] {
    std::vector<const ColumnSpec*> columns;
    for (const ColumnSpec& column : kTable) columns.push_back(&column);
    std::stable_partition(columns.begin(), columns.end(),
                          [](const ColumnSpec* column) { return column->name != kDefinitionColumn; });
    return columns;
  }();
  return order;
}

template <const auto& kTable>
std::vector<std::string> names_of() {
  std::vector<std::string> names;
  for (const ColumnSpec* column : export_order<kTable>()) names.push_back(export_column_name(*column));
  return names;
}

// Files before program trials have no trainer: memsweep's own trained them.
template <typename Row>
std::string trainer_of(const Row& row) {
  const std::string trainer = get_fixed(row.trainer);
  return trainer.empty() ? std::string(kBuiltinTrainer) : trainer;
}

// ---- the definition column -------------------------------------------------
//
// /trials' definition is TrialSpec::canonical_text(), the text the trial id
// hashes: every built-in field, defaults included, then a program's command,
// env and workdir, then its params, cut at kDefinitionChars bytes. For a
// program trial that text named a dataset, model and optimizer the program
// never saw, and lost the end of its params (issue 43). The export gives a
// program trial's definition from the trial's own fields instead: its
// program, the built-in fields it shows (those its sweep file sets or names;
// the others are blank in the row), its seed and repeat, and its params
// whole (their own column, which the sweep file bounds to fit). The command
// is left out: it is the sweep file's [programs.NAME] with those fields
// filled in. A text that may still be cut ends with kCutMark.

constexpr std::string_view kProgramKey = ";program=";
constexpr std::string_view kCommandKey = ";command=";
constexpr std::string_view kCutMark = "\xe2\x80\xa6(cut)";  // "…(cut)"

// Whether set_fixed() may have cut the text: it fills the column, or stops
// up to 3 bytes short of it before a UTF-8 character that did not fit.
bool may_be_cut(std::string_view text, std::size_t columns) {
  if (text.size() >= columns) return true;
  const bool ascii = std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; });
  return !ascii && text.size() + 3 >= columns;
}

// Whether the row's trial shows the built-in key of its definition
// (rows.cpp's trial_row_for: a field the program's file neither sets nor
// names is blank). A key's own settings go with it: `synthetic` with the
// dataset, `channels` with the model, `momentum`, `beta1`, ... with the
// optimizer, `recompute_every` with the memory plan. Seed and repeat are
// every trial's.
template <typename Row>
bool shows_key(const Row& row, std::string_view key) {
  if (key == "dataset" || key == "synthetic") return !get_fixed(row.dataset).empty();
  if (key == "model" || key == "channels") return !get_fixed(row.model).empty();
  if (key == "optimizer" || key == "momentum" || key == "beta1" || key == "beta2" || key == "epsilon")
    return !get_fixed(row.optimizer).empty();
  if (key == "learning_rate") return !std::isnan(row.learning_rate);
  if (key == "epochs") return row.epochs > 0;
  if (key == "batch_size") return row.batch_size > 0;
  if (key == "hidden") return row.depth != kBlankDepth;
  if (key == "memory_plan" || key == "recompute_every") return !get_fixed(row.memory_plan).empty();
  return true;
}

// A probe's limit, as its definition ends with it; a configuration's has none.
std::string search_limit_text(const TrialRow& row) {
  return row.search >= 0 && row.search_limit >= 0 ? fmt::format(";search_limit={}", row.search_limit) : "";
}
std::string search_limit_text(const SearchRow&) { return ""; }

template <typename Row>
std::string program_definition(const Row& row, const std::string& stored) {
  const std::size_t program_at = stored.find(kProgramKey);
  std::string_view fields = std::string_view(stored).substr(0, program_at);
  // Cut before the program's part (a synthetic dataset and an optimizer's
  // settings of extreme lengths): the last field may be partial.
  const bool cut = program_at == std::string::npos && may_be_cut(stored, kDefinitionChars);
  if (cut) fields = fields.substr(0, fields.rfind(';'));
  // The name as the stored text has it (the trainer column holds 16 bytes).
  std::string name = trainer_of(row);
  if (program_at != std::string::npos) {
    const std::size_t from = program_at + kProgramKey.size();
    const std::size_t end = stored.find(kCommandKey, from);
    if (end != std::string::npos) name = stored.substr(from, end - from);
  }
  std::string text = "program=" + name;
  while (!fields.empty()) {
    const std::string_view field = fields.substr(0, fields.find(';'));
    if (shows_key(row, field.substr(0, field.find('=')))) text += fmt::format(";{}", field);
    fields.remove_prefix(std::min(fields.size(), field.size() + 1));
  }
  const std::string params = get_fixed(row.params);
  if (!params.empty() && params != "{}") text += ";params=" + params;
  text += search_limit_text(row);
  if (cut) text += kCutMark;
  return text;
}

// The definition as the export gives it (above); a built-in trial's is the
// stored text, whole but for a mark where it may have been cut.
template <typename Row>
std::string exported_definition(const Row& row) {
  const std::string stored = get_fixed(row.definition);
  if (trainer_of(row) != kBuiltinTrainer) return program_definition(row, stored);
  return may_be_cut(stored, kDefinitionChars) ? stored + std::string(kCutMark) : stored;
}

// The other tables' cells are all written by their kind.
bool write_own_cell(const EpochRow&, const ColumnSpec&, DelimitedWriter&) { return false; }
bool write_own_cell(const MetricRow&, const ColumnSpec&, DelimitedWriter&) { return false; }
bool write_own_cell(const SampleRow&, const ColumnSpec&, DelimitedWriter&) { return false; }

// The cells of /trials and /searches written otherwise than by their kind.
// A program's epochs and batch size it neither sets nor names are 0
// (TrialSpec::shows_field): empty cells, as its blank depth (-1) and
// learning rate (NaN) are; an empty trainer is memsweep's own (files
// before program trials); and the definition is the export's.
template <typename Row>
bool write_own_cell(const Row& row, const ColumnSpec& column, DelimitedWriter& out) {
  if (column.name == "epochs" || column.name == "batch_size") {
    const std::int32_t count = value_at<std::int32_t>(&row, column);
    if (count <= 0)
      out.empty();
    else
      out.integer(count);
    return true;
  }
  if (column.name == "trainer") {
    out.text(trainer_of(row));
    return true;
  }
  if (column.name == kDefinitionColumn) {
    out.text(exported_definition(row));
    return true;
  }
  return false;
}

template <const auto& kTable, typename Row>
void write_row(const Row& row, DelimitedWriter& out) {
  for (const ColumnSpec* column : export_order<kTable>())
    if (!write_own_cell(row, *column, out)) write_cell(&row, *column, out);
}

bool is_name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::optional<ExportTable> parse_export_table(std::string_view name) {
  if (name == "trials") return ExportTable::trials;
  if (name == "epochs") return ExportTable::epochs;
  if (name == "samples") return ExportTable::samples;
  if (name == "searches") return ExportTable::searches;
  if (name == "metrics") return ExportTable::metrics;
  return std::nullopt;
}

std::vector<std::string> trial_columns() { return names_of<columns::kTrials>(); }

void write_trial(const TrialRow& row, std::string_view message, DelimitedWriter& out) {
  for (const ColumnSpec* column : export_order<columns::kTrials>()) {
    if (column->name == "message")
      out.text(message);
    else if (!write_own_cell(row, *column, out))
      write_cell(&row, *column, out);
  }
}

std::vector<std::string> search_columns() { return names_of<columns::kSearches>(); }
void write_search(const SearchRow& row, DelimitedWriter& out) { write_row<columns::kSearches>(row, out); }

std::vector<std::string> epoch_columns() { return names_of<columns::kEpochs>(); }
void write_epoch(const EpochRow& row, DelimitedWriter& out) { write_row<columns::kEpochs>(row, out); }

std::vector<std::string> metric_columns() { return names_of<columns::kMetrics>(); }
void write_metric(const MetricRow& row, DelimitedWriter& out) { write_row<columns::kMetrics>(row, out); }

std::vector<std::string> sample_columns(std::span<const std::string> counters) {
  std::vector<std::string> names = names_of<columns::kSamples>();
  std::map<std::string, std::string> event_of_name;
  for (const std::string& event : counters) {
    const std::string name = counter_column_name(event);
    const auto [found, added] = event_of_name.emplace(name, event);
    if (!added)
      throw InputError(
          fmt::format("counter events {} and {} would both be exported as column {}; export the files "
                      "one at a time",
                      found->second, event, name));
    names.push_back(name);
  }
  return names;
}

void write_sample(const SampleRow& row, std::span<const int> slots, DelimitedWriter& out) {
  write_row<columns::kSamples>(row, out);
  for (const int slot : slots) {
    if (slot < 0 || row.counters[static_cast<std::size_t>(slot)] == -1)
      out.empty();
    else
      out.integer(row.counters[static_cast<std::size_t>(slot)]);
  }
}

std::string counter_column_name(std::string_view event) {
  std::string name;
  bool in_run = false;
  for (const char c : event) {
    if (is_name_character(c)) {
      name.push_back(c);
      in_run = false;
    } else if (!in_run) {
      name.push_back('_');
      in_run = true;
    }
  }
  // R's names start with a letter (or a dot); "X" is what read.csv would put first.
  if (name.empty() || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z'))) name = "X" + name;
  if (name.back() != '_') name += '_';
  return name + "count";
}

}  // namespace memsweep::cli
