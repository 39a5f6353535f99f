#include "store/schema.hpp"

#include "common/duration_text.hpp"
#include "memsweep/sample_chunk.hpp"

#include "memsweep/gpu_columns.hpp"
#include "memsweep/store.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <set>

namespace memsweep::store {
namespace {

// Units as the tables' `unit:<column>` attributes spell them.
constexpr char kText[] = "text";
constexpr char kOne[] = "1";  // counts, ratios, identifiers
constexpr char kSeconds[] = "s";
constexpr char kUnixTime[] = "s since 1970-01-01T00:00:00Z";
constexpr char kBytes[] = "bytes";
constexpr char kEvents[] = "events";
// A search's axis value is a count (a batch size, a hidden width, ...): the
// axis column of /searches names what it counts.
constexpr char kAxisUnit[] = "1";
constexpr char kMiB[] = "MiB";
constexpr char kMiBPerUnit[] = "MiB per unit of the axis";

Column text(const char* name, std::size_t offset, std::size_t chars) {
  return Column{name, offset, ColumnKind::text, chars, kText};
}
Column int32(const char* name, std::size_t offset, const char* unit) {
  return Column{name, offset, ColumnKind::int32, 1, unit};
}
Column int64(const char* name, std::size_t offset, const char* unit) {
  return Column{name, offset, ColumnKind::int64, 1, unit};
}
Column uint64(const char* name, std::size_t offset, const char* unit) {
  return Column{name, offset, ColumnKind::uint64, 1, unit};
}
Column float64(const char* name, std::size_t offset, const char* unit) {
  return Column{name, offset, ColumnKind::float64, 1, unit};
}
Column int32_array(const char* name, std::size_t offset, std::size_t elements, const char* unit) {
  return Column{name, offset, ColumnKind::int32_array, elements, unit};
}
// A column that schema `version` added (docs/results-file.md, Versions).
Column added_in(int version, Column column) {
  column.since_version = version;
  return column;
}

// A measurement source's column (src/sampler/*/..._columns.hpp): its name,
// unit and version from the declaration, its place in the row from the caller.
Column source_column(const SourceColumn& declared, std::size_t offset, ColumnKind kind, std::size_t extent = 1) {
  Column column{std::string(declared.name), offset, kind, extent, std::string(declared.unit)};
  column.since_version = declared.since_version;
  return column;
}

// The hyperparameter columns /trials and /searches share, in this order:
// a search names its configuration as a trial row would.
template <typename Row>
std::vector<Column> hyperparameter_columns() {
  return {
      text("dataset", offsetof(Row, dataset), kNameChars),
      text("model", offsetof(Row, model), kNameChars),
      text("optimizer", offsetof(Row, optimizer), kNameChars),
      float64("learning_rate", offsetof(Row, learning_rate), kOne),
      int32("epochs", offsetof(Row, epochs), kOne),
      int32("batch_size", offsetof(Row, batch_size), kOne),
      int32("depth", offsetof(Row, depth), kOne),
      int32_array("hidden", offsetof(Row, hidden), kMaxHiddenLayers, kOne),
      int32_array("channels", offsetof(Row, channels), kMaxConvBlocks, kOne),
  };
}

// /trials' estimate parts (schema 10), one column each, labelled with the part's name.
std::vector<Column> estimate_part_columns() {
  std::vector<Column> columns;
  for (std::size_t i = 0; i < kEstimatePartColumns.size(); ++i) {
    Column column =
        added_in(10, int64(std::string(kEstimatePartColumns[i].column).c_str(),
                           offsetof(TrialRow, estimate_parts) + i * sizeof(TrialRow::estimate_parts[0]), kBytes));
    column.label = kEstimatePartColumns[i].part;
    columns.push_back(std::move(column));
  }
  return columns;
}

// `parts` joined in order.
std::vector<Column> joined(std::initializer_list<std::vector<Column>> parts) {
  std::vector<Column> columns;
  for (const std::vector<Column>& part : parts) columns.insert(columns.end(), part.begin(), part.end());
  return columns;
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
      joined({
          {
              text("trial_id", offsetof(TrialRow, trial_id), kTrialIdChars),
              int32("attempt", offsetof(TrialRow, attempt), kOne),
              int32("repeat", offsetof(TrialRow, repeat), kOne),
              int32("run", offsetof(TrialRow, run), kOne),
              added_in(5, int32("plan_index", offsetof(TrialRow, plan_index), kOne)),
          },
          hyperparameter_columns<TrialRow>(),
          {
              uint64("seed", offsetof(TrialRow, seed), kOne),
              int32("rank", offsetof(TrialRow, rank), kOne),
              text("host", offsetof(TrialRow, host), kHostChars),
              text("status", offsetof(TrialRow, status), kNameChars),
              text("message", offsetof(TrialRow, message), kMessageChars),
              float64("start_time", offsetof(TrialRow, start_time), kUnixTime),
              float64("end_time", offsetof(TrialRow, end_time), kUnixTime),
              float64("wall_seconds", offsetof(TrialRow, wall_seconds), kSeconds),
              int64("rss_baseline", offsetof(TrialRow, rss_baseline), kBytes),
              int64("rss_peak", offsetof(TrialRow, rss_peak), kBytes),
              float64("rss_mean", offsetof(TrialRow, rss_mean), kBytes),
              int64("rss_footprint", offsetof(TrialRow, rss_footprint), kBytes),
              float64("sys_used_mean", offsetof(TrialRow, sys_used_mean), kBytes),
              int64("predicted_bytes", offsetof(TrialRow, predicted_bytes), kBytes),
              int32("epochs_done", offsetof(TrialRow, epochs_done), kOne),
              float64("final_train_loss", offsetof(TrialRow, final_train_loss), kOne),
              float64("test_accuracy", offsetof(TrialRow, test_accuracy), kOne),
              uint64("samples", offsetof(TrialRow, samples), kOne),
              uint64("dropped_samples", offsetof(TrialRow, dropped_samples), kOne),
              text("definition", offsetof(TrialRow, definition), kDefinitionChars),
              // Schema 3: how the trial's own process ended.
              added_in(3, int32("pid", offsetof(TrialRow, pid), kOne)),
              added_in(3, int32("end_signal", offsetof(TrialRow, end_signal), kOne)),
              added_in(3, int32("oom_killed", offsetof(TrialRow, oom_killed), kOne)),
              added_in(3, text("end_cause", offsetof(TrialRow, end_cause), kNameChars)),
              added_in(3, text("isolation", offsetof(TrialRow, isolation), kNameChars)),
              added_in(3, float64("start_seconds", offsetof(TrialRow, start_seconds), kSeconds)),
              added_in(3, int64("cgroup_peak", offsetof(TrialRow, cgroup_peak), kBytes)),
              // Schema 4: programs as trials, and their process trees.
              added_in(4, text("trainer", offsetof(TrialRow, trainer), kNameChars)),
              added_in(4, text("params", offsetof(TrialRow, params), kParamsChars)),
              added_in(4, int32("processes", offsetof(TrialRow, processes), kOne)),
              added_in(4, int64("rss_peak_hwm_sum", offsetof(TrialRow, rss_peak_hwm_sum), kBytes)),
              added_in(4, int64("process_peak_max", offsetof(TrialRow, process_peak_max), kBytes)),
              added_in(4, int32("bad_event_lines", offsetof(TrialRow, bad_event_lines), kOne)),
              // Schema 6: the search a trial is a probe of.
              added_in(6, int32("search", offsetof(TrialRow, search), kOne)),
              added_in(6, int32("probe", offsetof(TrialRow, probe), kOne)),
              added_in(6, int64("axis_value", offsetof(TrialRow, axis_value), kAxisUnit)),
              added_in(6, int64("search_limit", offsetof(TrialRow, search_limit), kBytes)),
              added_in(6, int32("full_run", offsetof(TrialRow, full_run), kOne)),
              added_in(6, int32("reported_oom", offsetof(TrialRow, reported_oom), kOne)),
              // Schema 7: GPU memory.
              source_column(gpu::kTrialGpuPeak, offsetof(TrialRow, gpu_peak), ColumnKind::int64),
              source_column(gpu::kTrialGpuDevices, offsetof(TrialRow, gpu_devices), ColumnKind::text, kGpuDevicesChars),
              source_column(gpu::kTrialGpuPeakSource, offsetof(TrialRow, gpu_peak_source), ColumnKind::text,
                            kNameChars),
              source_column(gpu::kTrialTorchAllocatedPeak, offsetof(TrialRow, torch_allocated_peak), ColumnKind::int64),
              source_column(gpu::kTrialTorchReservedPeak, offsetof(TrialRow, torch_reserved_peak), ColumnKind::int64),
              // Schema 8: the trainer's memory plan.
              added_in(8, text("memory_plan", offsetof(TrialRow, memory_plan), kNameChars)),
              added_in(8, int32("recompute_every", offsetof(TrialRow, recompute_every), kOne)),
              // Schema 10: what the analysis would otherwise work out again.
              added_in(10, int64("parameters", offsetof(TrialRow, parameters), kOne)),
          },
          estimate_part_columns(),
      }),
      default_row<TrialRow>(),
  };
}

TableSchema samples_schema(std::span<const std::string> counter_columns, const Hdf5Errors& errors) {
  TableSchema schema{
      kSamplesTable,
      "One row per memory sample of a trial attempt, then one column per recorded counter "
      "(counts since the trial's start; the root attribute counter_columns lists them).",
      sizeof(SampleRow),
      {
          text("trial_id", offsetof(SampleRow, trial_id), kTrialIdChars),
          int32("attempt", offsetof(SampleRow, attempt), kOne),
          int32("rank", offsetof(SampleRow, rank), kOne),
          int32("epoch", offsetof(SampleRow, epoch), kOne),
          added_in(5, int32("phase", offsetof(SampleRow, phase), kOne)),
          float64("t", offsetof(SampleRow, t), kSeconds),
          int64("rss", offsetof(SampleRow, rss), kBytes),
          int64("anon_rss", offsetof(SampleRow, anon_rss), kBytes),
          int64("pss", offsetof(SampleRow, pss), kBytes),
          int64("sys_used", offsetof(SampleRow, sys_used), kBytes),
          added_in(2, int64("sys_total", offsetof(SampleRow, sys_total), kBytes)),
          int64("sys_available", offsetof(SampleRow, sys_available), kBytes),
          int64("sys_active", offsetof(SampleRow, sys_active), kBytes),
          source_column(gpu::kSampleGpuUsed, offsetof(SampleRow, gpu_used), ColumnKind::int64),
          source_column(gpu::kSampleGpuTreeUsed, offsetof(SampleRow, gpu_tree_used), ColumnKind::int64),
      },
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
    schema.columns.push_back(
        int64(counter_columns[i].c_str(), offsetof(SampleRow, counters) + i * sizeof(SampleRow::counters[0]), kEvents));
  }
  return schema;
}

TableSchema epochs_schema() {
  return TableSchema{
      kEpochsTable,
      "One row per finished epoch of a trial attempt.",
      sizeof(EpochRow),
      {
          text("trial_id", offsetof(EpochRow, trial_id), kTrialIdChars),
          int32("attempt", offsetof(EpochRow, attempt), kOne),
          int32("epoch", offsetof(EpochRow, epoch), kOne),
          float64("train_loss", offsetof(EpochRow, train_loss), kOne),
          float64("test_accuracy", offsetof(EpochRow, test_accuracy), kOne),
          float64("seconds", offsetof(EpochRow, seconds), kSeconds),
          int64("rss", offsetof(EpochRow, rss), kBytes),
          int64("sys_used", offsetof(EpochRow, sys_used), kBytes),
      },
      default_row<EpochRow>(),
  };
}

TableSchema runs_schema() {
  return TableSchema{
      kRunsTable,
      "One row per invocation of `memsweep run` on this file: 0 created it, each resume adds one.",
      sizeof(RunRow),
      {
          int32("run", offsetof(RunRow, run), kOne),
          float64("start_time", offsetof(RunRow, start_time), kUnixTime),
          int32("ranks", offsetof(RunRow, ranks), kOne),
          text("hosts", offsetof(RunRow, hosts), kMessageChars),
          text("command_line", offsetof(RunRow, command_line), kMessageChars * 4),
          text("memsweep_version", offsetof(RunRow, memsweep_version), kNameChars),
          added_in(3, float64("end_time", offsetof(RunRow, end_time), kUnixTime)),
          added_in(3, text("end_state", offsetof(RunRow, end_state), kNameChars)),
          added_in(5, text("data_dirs", offsetof(RunRow, data_dirs), kPathChars)),
          added_in(5, int64("max_train_examples", offsetof(RunRow, max_train_examples), kOne)),
          added_in(5, int64("max_test_examples", offsetof(RunRow, max_test_examples), kOne)),
          added_in(5, int32("threads", offsetof(RunRow, threads), kOne)),
          added_in(5, text("counter_source", offsetof(RunRow, counter_source), kNameChars)),
          added_in(5, int64("mem_budget", offsetof(RunRow, mem_budget), kBytes)),
          added_in(5, float64("trial_timeout", offsetof(RunRow, trial_timeout), kSeconds)),
          added_in(5, float64("flush_interval", offsetof(RunRow, flush_interval), kSeconds)),
          added_in(5, int32("no_swmr", offsetof(RunRow, no_swmr), kOne)),
          added_in(5, text("launcher", offsetof(RunRow, launcher), kNameChars)),
          added_in(5, text("executable", offsetof(RunRow, executable), kPathChars)),
          added_in(5, text("sweep_file", offsetof(RunRow, sweep_file), kPathChars)),
          added_in(5, text("output_option", offsetof(RunRow, output_option), kPathChars)),
          added_in(5, text("split_by", offsetof(RunRow, split_by), kNameChars)),
          added_in(5, int32("part", offsetof(RunRow, part), kOne)),
          added_in(5, text("retried", offsetof(RunRow, retried), kMessageChars)),
          added_in(5, text("changed_options", offsetof(RunRow, changed_options), kPathChars)),
          added_in(9, text("trial_process_cost", offsetof(RunRow, trial_process_cost), kMessageChars)),
      },
      default_row<RunRow>(),
  };
}

TableSchema messages_schema() {
  return TableSchema{
      kMessagesTable,
      "Trial messages whole: the pieces of each trial attempt's message, in order, of at most 256 bytes each, "
      "cut on UTF-8 character boundaries; /trials' message column holds only a message's first 256 bytes.",
      sizeof(MessageRow),
      {
          text("trial_id", offsetof(MessageRow, trial_id), kTrialIdChars),
          int32("attempt", offsetof(MessageRow, attempt), kOne),
          int32("run", offsetof(MessageRow, run), kOne),
          int32("piece", offsetof(MessageRow, piece), kOne),
          text("text", offsetof(MessageRow, text), kMessagePieceChars),
      },
      {},  // the whole table is schema 5's: older files have none
  };
}

TableSchema searches_schema() {
  return TableSchema{
      kSearchesTable,
      "One row per search (a configuration at one memory limit), written when the search ends: the largest axis "
      "value that trained within the limit (memsweep, docs/results-file.md).",
      sizeof(SearchRow),
      joined({
          {
              int32("search", offsetof(SearchRow, search), kOne),
              int32("configuration", offsetof(SearchRow, configuration), kOne),
              int32("limit_index", offsetof(SearchRow, limit_index), kOne),
              int32("run", offsetof(SearchRow, run), kOne),
              text("configuration_id", offsetof(SearchRow, configuration_id), kTrialIdChars),
              text("trainer", offsetof(SearchRow, trainer), kNameChars),
          },
          hyperparameter_columns<SearchRow>(),
          {
              int32("repeat", offsetof(SearchRow, repeat), kOne),
              text("params", offsetof(SearchRow, params), kParamsChars),
              text("definition", offsetof(SearchRow, definition), kDefinitionChars),
              text("axis", offsetof(SearchRow, axis), kAxisChars),
              int64("range_low", offsetof(SearchRow, range_low), kAxisUnit),
              int64("range_high", offsetof(SearchRow, range_high), kAxisUnit),
              int64("limit", offsetof(SearchRow, limit), kBytes),
              text("enforced_by", offsetof(SearchRow, enforced_by), kNameChars),
              text("strategy", offsetof(SearchRow, strategy), kNameChars),
              text("status", offsetof(SearchRow, status), kNameChars),
              int64("fits", offsetof(SearchRow, fits), kAxisUnit),
              int32("fits_verified", offsetof(SearchRow, fits_verified), kOne),
              int64("does_not_fit", offsetof(SearchRow, does_not_fit), kAxisUnit),
              float64("fit_a_mib", offsetof(SearchRow, fit_a_mib), kMiB),
              float64("fit_b_mib", offsetof(SearchRow, fit_b_mib), kMiBPerUnit),
              int64("predicted", offsetof(SearchRow, predicted), kAxisUnit),
              int32("trials", offsetof(SearchRow, trials), kOne),
              float64("seconds", offsetof(SearchRow, seconds), kSeconds),
              text("message", offsetof(SearchRow, message), kMessageChars),
              // Schema 8: the configuration's memory plan.
              added_in(8, text("memory_plan", offsetof(SearchRow, memory_plan), kNameChars)),
              added_in(8, int32("recompute_every", offsetof(SearchRow, recompute_every), kOne)),
          },
      }),
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
      {
          text("trial_id", offsetof(MetricRow, trial_id), kTrialIdChars),
          int32("attempt", offsetof(MetricRow, attempt), kOne),
          int32("epoch", offsetof(MetricRow, epoch), kOne),
          text("name", offsetof(MetricRow, name), kMetricNameChars),
          float64("value", offsetof(MetricRow, value), kOne),
          float64("seconds", offsetof(MetricRow, seconds), kSeconds),
          int32("matches", offsetof(MetricRow, matches), kOne),
      },
      {},  // the whole table is schema 11's: older files have none
  };
}

TableSchema series_schema() {
  return TableSchema{
      kSamplesTable,
      "",
      sizeof(SeriesColumns),
      {
          text("trial_id", offsetof(SeriesColumns, trial_id), kTrialIdChars),
          int32("attempt", offsetof(SeriesColumns, attempt), kOne),
          int32("rank", offsetof(SeriesColumns, rank), kOne),
          int32("epoch", offsetof(SeriesColumns, epoch), kOne),
          float64("t", offsetof(SeriesColumns, t), kSeconds),
          int64("rss", offsetof(SeriesColumns, rss), kBytes),
          int64("sys_used", offsetof(SeriesColumns, sys_used), kBytes),
      },
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
  switch (column.kind) {
    case ColumnKind::int32: return sizeof(std::int32_t);
    case ColumnKind::int64: return sizeof(std::int64_t);
    case ColumnKind::uint64: return sizeof(std::uint64_t);
    case ColumnKind::float64: return sizeof(double);
    case ColumnKind::text: return column.extent;
    case ColumnKind::int32_array: return column.extent * sizeof(std::int32_t);
  }
  return 0;
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
