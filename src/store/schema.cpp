#include "store/schema.hpp"

#include "common/duration_text.hpp"
#include "memsweep/columns.hpp"
#include "memsweep/sample_chunk.hpp"
#include "memsweep/store.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <set>

namespace memsweep::store {
namespace {

Column column_of(const ColumnSpec& spec) {
  Column column{std::string(spec.name), spec.offset, spec.kind, spec.extent, std::string(spec.unit)};
  column.since_version = spec.since_version;
  column.minus_one = spec.minus_one;
  column.label = std::string(spec.label);
  return column;
}

template <std::size_t N>
std::vector<Column> columns_of(const std::array<ColumnSpec, N>& table) {
  std::vector<Column> columns;
  columns.reserve(N);
  for (const ColumnSpec& spec : table) columns.push_back(column_of(spec));
  return columns;
}

Column text(const char* name, std::size_t offset, std::size_t chars) {
  return Column{name, offset, ColumnKind::text, chars, std::string(column_unit::kText)};
}

template <typename Row>
std::vector<std::byte> default_row() {
  const Row row{};
  std::vector<std::byte> bytes(sizeof(Row));
  std::memcpy(bytes.data(), &row, sizeof(Row));
  return bytes;
}

TypeHandle member_type(const Column& column, const Hdf5Errors& errors) {
  switch (column.kind) {
    case ColumnKind::int32: return TypeHandle(errors.check(H5Tcopy(H5T_NATIVE_INT32), "copy an int32 type"));
    case ColumnKind::int64: return TypeHandle(errors.check(H5Tcopy(H5T_NATIVE_INT64), "copy an int64 type"));
    case ColumnKind::uint64: return TypeHandle(errors.check(H5Tcopy(H5T_NATIVE_UINT64), "copy a uint64 type"));
    case ColumnKind::float64: return TypeHandle(errors.check(H5Tcopy(H5T_NATIVE_DOUBLE), "copy a double type"));
    case ColumnKind::text: {
      // NUL-padded, not NUL-terminated: FixedString fills every byte when
      // the text is that long, and h5py shows the value without the padding.
      TypeHandle type(errors.check(H5Tcopy(H5T_C_S1), "copy the string type"));
      errors.check(H5Tset_size(type.get(), column.extent), "size a string type");
      errors.check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "set a string type's padding");
      errors.check(H5Tset_cset(type.get(), H5T_CSET_UTF8), "set a string type's character set");
      return type;
    }
    case ColumnKind::int32_array: {
      const hsize_t elements = column.extent;
      return TypeHandle(errors.check(H5Tarray_create2(H5T_NATIVE_INT32, 1, &elements), "create an int32 array type"));
    }
  }
  errors.fail_plain(fmt::format("unknown column kind for column {}", column.name));
}

}  // namespace

TableSchema trials_schema() {
  return TableSchema{
      kTrialsTable,
      "One row per trial attempt: its hyperparameters and its result (memsweep, docs/results-file.md).",
      sizeof(TrialRow),
      columns_of(columns::kTrials),
      default_row<TrialRow>(),
  };
}

TableSchema samples_schema(std::span<const std::string> counter_columns, const Hdf5Errors& errors) {
  TableSchema schema{
      kSamplesTable,
      "One row per memory sample of a trial attempt, then one column per recorded counter "
      "(counts since the trial's start; the root attribute counter_columns lists them).",
      sizeof(SampleRow),
      columns_of(columns::kSamples),
      default_row<SampleRow>(),
  };
  if (counter_columns.size() > kMaxCounters)
    errors.fail_plain(
        fmt::format("{} counter columns, more than the {} a sample row holds", counter_columns.size(), kMaxCounters));
  std::set<std::string> names;
  for (const Column& column : schema.columns) names.insert(column.name);
  for (std::size_t i = 0; i < counter_columns.size(); ++i) {
    if (counter_columns[i].empty() || !names.insert(counter_columns[i]).second)
      errors.fail_plain(
          fmt::format("counter column name \"{}\" is empty or used twice in the samples table", counter_columns[i]));
    Column column = column_of(columns::kCounterColumn);
    column.name = counter_columns[i];
    column.offset += i * sizeof(SampleRow::counters[0]);
    schema.columns.push_back(std::move(column));
  }
  return schema;
}

TableSchema epochs_schema() {
  return TableSchema{
      kEpochsTable,
      "One row per finished epoch of a trial attempt.",
      sizeof(EpochRow),
      columns_of(columns::kEpochs),
      default_row<EpochRow>(),
  };
}

TableSchema runs_schema() {
  return TableSchema{
      kRunsTable,
      "One row per invocation of `memsweep run` on this file: 0 created it, each resume adds one.",
      sizeof(RunRow),
      columns_of(columns::kRuns),
      default_row<RunRow>(),
  };
}

TableSchema messages_schema() {
  return TableSchema{
      kMessagesTable,
      "Trial messages whole: the pieces of each trial attempt's message, in order, of at most 256 bytes each, "
      "cut on UTF-8 character boundaries; /trials' message column holds only a message's first 256 bytes.",
      sizeof(MessageRow),
      columns_of(columns::kMessages),
      {},  // the whole table is schema 5's: older files have none
  };
}

TableSchema searches_schema() {
  return TableSchema{
      kSearchesTable,
      "One row per search (a configuration at one memory limit), written when the search ends: the largest axis "
      "value that trained within the limit (memsweep, docs/results-file.md).",
      sizeof(SearchRow),
      columns_of(columns::kSearches),
      // Schema 6 and 7 files' rows read the plan every search then had.
      default_row<SearchRow>(),
  };
}

TableSchema metrics_schema() {
  return TableSchema{
      kMetricsTable,
      "A program's own figures, matched by its [programs] metrics patterns in its standard output: per trial "
      "attempt, metric and epoch the last value matched (epoch 0: before any epoch); an attempt's last row of a "
      "metric holds its final value.",
      sizeof(MetricRow),
      columns_of(columns::kMetrics),
      {},  // the whole table is schema 11's: older files have none
  };
}

TableSchema series_schema() {
  return TableSchema{
      kSamplesTable,
      "",
      sizeof(SeriesColumns),
      // Read by name: the kinds are the samples table's.
      columns_of(std::array{
          MEMSWEEP_COLUMN(SeriesColumns, trial_id),
          MEMSWEEP_COLUMN(SeriesColumns, attempt),
          MEMSWEEP_COLUMN(SeriesColumns, rank),
          MEMSWEEP_COLUMN(SeriesColumns, epoch),
          MEMSWEEP_COLUMN(SeriesColumns, t),
          MEMSWEEP_COLUMN(SeriesColumns, rss),
          MEMSWEEP_COLUMN(SeriesColumns, sys_used),
      }),
      {},  // every column is in every version
  };
}

std::uint64_t samples_chunk_rows(const FileHeader& header, double flush_seconds) {
  // As the workers' own flush interval (session.cpp's flush_interval_of).
  return worker_sample_chunk_rows(header.sampler_interval_ms, limit_milliseconds(flush_seconds));
}

TableSchema trial_id_schema(const std::string& table) {
  // /searches names its configuration, not a trial: the same kind of id,
  // and as surely set in every row written.
  const char* column = table == kSearchesTable ? "configuration_id" : "trial_id";
  return TableSchema{table, "", kTrialIdChars, {text(column, 0, kTrialIdChars)}, {}};
}

std::size_t column_bytes(const Column& column) {
  ColumnSpec spec;
  spec.kind = column.kind;
  spec.extent = column.extent;
  return spec.bytes();
}

TypeHandle memory_type(const TableSchema& schema, const Hdf5Errors& errors) {
  return memory_type(schema, schema.columns, errors);
}

TypeHandle memory_type(const TableSchema& schema, const std::vector<Column>& columns, const Hdf5Errors& errors) {
  TypeHandle compound(
      errors.check(H5Tcreate(H5T_COMPOUND, schema.row_size), fmt::format("create the {} row type", schema.name)));
  for (const Column& column : columns) {
    const TypeHandle member = member_type(column, errors);
    errors.check(H5Tinsert(compound.get(), column.name.c_str(), column.offset, member.get()),
                 fmt::format("add column {} to the {} row type", column.name, schema.name));
  }
  return compound;
}

TypeHandle file_type(const TableSchema& schema, const Hdf5Errors& errors) {
  // The row structs' padding would be stored too; packing drops it (the
  // samples row's 4 bytes after `phase` included).
  const TypeHandle in_memory = memory_type(schema, errors);
  TypeHandle packed(errors.check(H5Tcopy(in_memory.get()), fmt::format("copy the {} row type", schema.name)));
  errors.check(H5Tpack(packed.get()), fmt::format("pack the {} row type", schema.name));
  return packed;
}

}  // namespace memsweep::store
