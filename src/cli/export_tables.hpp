#pragma once
// The results file's tables as `memsweep export` writes them: which columns,
// named with their units, and each row's cells (docs/results-file.md,
// "Export"). One definition per column gives both its name and its cell, so
// the header and the rows cannot drift apart.
//
// Names: the file's column name, with the unit's suffix when the name does
// not already end with its unit: `_bytes`, `_s` (seconds), `_unix_s`
// (seconds since 1970-01-01T00:00:00Z), `_count` (counter events). Columns
// without a unit (counts of things, ratios, text) keep the file's name.
// Cells: a "not measured" -1 is an empty cell (NA).

#include "cli/delimited_writer.hpp"
#include "memsweep/results.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::cli {

enum class ExportTable { trials, epochs, samples, searches, metrics };
std::optional<ExportTable> parse_export_table(std::string_view name);

std::vector<std::string> trial_columns();
// `message` is the trial's message, passed in: where it comes from is the caller's.
void write_trial(const TrialRow& row, std::string_view message, DelimitedWriter& out);

// /searches (schema 6; none in older files).
std::vector<std::string> search_columns();
void write_search(const SearchRow& row, DelimitedWriter& out);

std::vector<std::string> epoch_columns();
void write_epoch(const EpochRow& row, DelimitedWriter& out);

// /metrics (schema 11; none in older files): a program's own figures per epoch.
std::vector<std::string> metric_columns();
void write_metric(const MetricRow& row, DelimitedWriter& out);

// The samples' fixed columns, then one per counter event (`counters`, the
// events' names as the file has them) named by counter_column_name().
// Throws InputError when two events would get the same column name.
std::vector<std::string> sample_columns(std::span<const std::string> counters);
// `slots`: for each exported counter column, the row's counter that fills
// it, or -1 when the row's file has no such column (an empty cell).
void write_sample(const SampleRow& row, std::span<const int> slots, DelimitedWriter& out);

// "perf::PAGE-FAULTS" -> "perf_PAGE_FAULTS_count": each run of characters
// other than ASCII letters, digits and _ becomes one _, so that R's
// read.csv keeps the name as it is (check.names) and pandas can use it as
// an attribute.
std::string counter_column_name(std::string_view event);

}  // namespace memsweep::cli
