#pragma once
// Each results-file table's columns, declared once (docs/results-file.md):
// per row type of results.hpp a table of its columns (name, place in the
// row, kind, unit, the schema that added it, what -1 means there). The
// store builds its HDF5 compound types and attributes from these tables,
// `memsweep export` its CSV columns, and the analysis reads names, units,
// versions and "not measured" values from the attributes the store writes,
// so that a new column is one member and one entry here (docs/architecture.md,
// "What a new column touches"). Pure data: no HDF5.
//
// The tables are constexpr so that tests/results/test_columns.cpp can check,
// at compile time, that each covers every byte of its row struct.

#include "memsweep/estimate_parts.hpp"
#include "memsweep/results.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace memsweep {

enum class ColumnKind { int32, int64, uint64, float64, text, int32_array };

// What -1 in a numeric column stands for.
enum class MinusOne {
  value,         // nothing apart (or the column never holds -1)
  not_measured,  // the figure could not be measured: an empty cell in exports, NaN in the analysis
  none,          // there is no such thing (no search, no process, no fit): an empty cell in exports
};

// Units as the tables' `unit:<column>` attributes spell them.
namespace column_unit {
inline constexpr std::string_view kText = "text";
inline constexpr std::string_view kOne = "1";  // counts, ratios, identifiers
inline constexpr std::string_view kSeconds = "s";
inline constexpr std::string_view kUnixTime = "s since 1970-01-01T00:00:00Z";
inline constexpr std::string_view kBytes = "bytes";
inline constexpr std::string_view kEvents = "events";
// A search's axis value is a count (a batch size, a hidden width, ...): the
// axis column of /searches names what it counts.
inline constexpr std::string_view kAxis = "1";
inline constexpr std::string_view kMiB = "MiB";
inline constexpr std::string_view kMiBPerUnit = "MiB per unit of the axis";
}  // namespace column_unit

struct ColumnSpec {
  std::string_view name;
  std::size_t offset = 0;  // in the row struct
  ColumnKind kind = ColumnKind::int32;
  std::size_t extent = 1;  // bytes of a text column, elements of an array column
  std::string_view unit = column_unit::kOne;
  // The schema version that added the column: files of older versions lack
  // it, and their rows read the row struct's default value there.
  int since_version = 1;
  MinusOne minus_one = MinusOne::value;
  // What the column holds, in words, where its name cannot say it exactly
  // (an estimate part's name, "oneDNN scratchpad"): the table's
  // `label:<column>` attribute. Empty: no such attribute.
  std::string_view label = {};

  constexpr std::size_t bytes() const {
    switch (kind) {
      case ColumnKind::int32: return sizeof(std::int32_t);
      case ColumnKind::int64: return sizeof(std::int64_t);
      case ColumnKind::uint64: return sizeof(std::uint64_t);
      case ColumnKind::float64: return sizeof(double);
      case ColumnKind::text: return extent;
      case ColumnKind::int32_array: return extent * sizeof(std::int32_t);
    }
    return 0;
  }
  constexpr std::size_t alignment() const {
    switch (kind) {
      case ColumnKind::text: return 1;
      case ColumnKind::int32:
      case ColumnKind::int32_array: return alignof(std::int32_t);
      default: return alignof(std::int64_t);
    }
  }
};

namespace columns::detail {

// A member's kind and extent, from its C++ type.
template <typename Member>
struct KindOf;
template <>
struct KindOf<std::int32_t> {
  static constexpr ColumnKind kind = ColumnKind::int32;
  static constexpr std::size_t extent = 1;
};
template <>
struct KindOf<std::int64_t> {
  static constexpr ColumnKind kind = ColumnKind::int64;
  static constexpr std::size_t extent = 1;
};
template <>
struct KindOf<std::uint64_t> {
  static constexpr ColumnKind kind = ColumnKind::uint64;
  static constexpr std::size_t extent = 1;
};
template <>
struct KindOf<double> {
  static constexpr ColumnKind kind = ColumnKind::float64;
  static constexpr std::size_t extent = 1;
};
template <std::size_t N>
struct KindOf<std::array<char, N>> {
  static constexpr ColumnKind kind = ColumnKind::text;
  static constexpr std::size_t extent = N;
};
template <std::size_t N>
struct KindOf<std::array<std::int32_t, N>> {
  static constexpr ColumnKind kind = ColumnKind::int32_array;
  static constexpr std::size_t extent = N;
};

struct Options {
  std::string_view unit = column_unit::kOne;
  int since = 1;
  MinusOne minus_one = MinusOne::value;
};

template <typename Member>
constexpr ColumnSpec column(std::string_view name, std::size_t offset, Options options) {
  using Kind = KindOf<std::remove_cvref_t<Member>>;
  const bool text = Kind::kind == ColumnKind::text;
  return ColumnSpec{name,
                    offset,
                    Kind::kind,
                    Kind::extent,
                    text ? column_unit::kText : options.unit,
                    options.since,
                    options.minus_one,
                    {}};
}

template <std::size_t N, std::size_t M>
constexpr std::array<ColumnSpec, N + M> joined(const std::array<ColumnSpec, N>& first,
                                               const std::array<ColumnSpec, M>& second) {
  std::array<ColumnSpec, N + M> all{};
  std::copy(first.begin(), first.end(), all.begin());
  std::copy(second.begin(), second.end(), all.begin() + N);
  return all;
}

}  // namespace columns::detail

// A column named as its member, the member's kind and extent taken from its
// type; the options (designated: .unit, .since, .minus_one) say the rest.
// Text columns' unit is always "text".
#define MEMSWEEP_COLUMN(Row, member, ...)                                                    \
  ::memsweep::columns::detail::column<decltype(Row::member)>(#member, offsetof(Row, member), \
                                                             ::memsweep::columns::detail::Options{__VA_ARGS__})

namespace columns {

using column_unit::kBytes;
using column_unit::kSeconds;
using column_unit::kUnixTime;
inline constexpr MinusOne kNotMeasured = MinusOne::not_measured;
inline constexpr MinusOne kNone = MinusOne::none;

// The hyperparameter columns /trials and /searches share, in this order: a
// search names its configuration as a trial row would.
template <typename Row>
constexpr std::array<ColumnSpec, 9> hyperparameters() {
  return {
      MEMSWEEP_COLUMN(Row, dataset),
      MEMSWEEP_COLUMN(Row, model),
      MEMSWEEP_COLUMN(Row, optimizer),
      MEMSWEEP_COLUMN(Row, learning_rate),
      MEMSWEEP_COLUMN(Row, epochs),
      MEMSWEEP_COLUMN(Row, batch_size),
      MEMSWEEP_COLUMN(Row, depth, .minus_one = kNone),  // -1: kBlankDepth
      MEMSWEEP_COLUMN(Row, hidden),
      MEMSWEEP_COLUMN(Row, channels),
  };
}

// /trials' estimate parts (schema 10), one column each, labelled with the part's name.
constexpr std::array<ColumnSpec, kEstimatePartColumns.size()> estimate_parts() {
  std::array<ColumnSpec, kEstimatePartColumns.size()> parts{};
  for (std::size_t i = 0; i < parts.size(); ++i)
    parts[i] = ColumnSpec{kEstimatePartColumns[i].column,
                          offsetof(TrialRow, estimate_parts) + i * sizeof(TrialRow::estimate_parts[0]),
                          ColumnKind::int64,
                          1,
                          kBytes,
                          10,
                          kNotMeasured,
                          kEstimatePartColumns[i].part};
  return parts;
}

// /trials, in the file's column order.
inline constexpr auto kTrials = detail::joined(
    detail::joined(
        detail::joined(
            std::array{
                MEMSWEEP_COLUMN(TrialRow, trial_id),
                MEMSWEEP_COLUMN(TrialRow, attempt),
                MEMSWEEP_COLUMN(TrialRow, repeat),
                MEMSWEEP_COLUMN(TrialRow, run),
                MEMSWEEP_COLUMN(TrialRow, plan_index, .since = 5, .minus_one = kNone),
            },
            hyperparameters<TrialRow>()),
        std::array{
            MEMSWEEP_COLUMN(TrialRow, seed),
            MEMSWEEP_COLUMN(TrialRow, rank, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, host),
            MEMSWEEP_COLUMN(TrialRow, status),
            MEMSWEEP_COLUMN(TrialRow, message),
            MEMSWEEP_COLUMN(TrialRow, start_time, .unit = kUnixTime),
            MEMSWEEP_COLUMN(TrialRow, end_time, .unit = kUnixTime),
            MEMSWEEP_COLUMN(TrialRow, wall_seconds, .unit = kSeconds),
            MEMSWEEP_COLUMN(TrialRow, rss_baseline, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, rss_peak, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, rss_mean, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, rss_footprint, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, sys_used_mean, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, predicted_bytes, .unit = kBytes, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, epochs_done),
            MEMSWEEP_COLUMN(TrialRow, final_train_loss, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, test_accuracy, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, samples),
            MEMSWEEP_COLUMN(TrialRow, dropped_samples),
            MEMSWEEP_COLUMN(TrialRow, definition),
            // Schema 3: how the trial's own process ended.
            MEMSWEEP_COLUMN(TrialRow, pid, .since = 3, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, end_signal, .since = 3),
            MEMSWEEP_COLUMN(TrialRow, oom_killed, .since = 3),
            MEMSWEEP_COLUMN(TrialRow, end_cause, .since = 3),
            MEMSWEEP_COLUMN(TrialRow, isolation, .since = 3),
            MEMSWEEP_COLUMN(TrialRow, start_seconds, .unit = kSeconds, .since = 3, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, cgroup_peak, .unit = kBytes, .since = 3, .minus_one = kNotMeasured),
            // Schema 4: programs as trials, and their process trees.
            MEMSWEEP_COLUMN(TrialRow, trainer, .since = 4),
            MEMSWEEP_COLUMN(TrialRow, params, .since = 4),
            MEMSWEEP_COLUMN(TrialRow, processes, .since = 4, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, rss_peak_hwm_sum, .unit = kBytes, .since = 4, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, process_peak_max, .unit = kBytes, .since = 4, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, bad_event_lines, .since = 4),
            // Schema 6: the search a trial is a probe of.
            MEMSWEEP_COLUMN(TrialRow, search, .since = 6, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, probe, .since = 6, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, axis_value, .unit = column_unit::kAxis, .since = 6, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, search_limit, .unit = kBytes, .since = 6, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, full_run, .since = 6, .minus_one = kNone),
            MEMSWEEP_COLUMN(TrialRow, reported_oom, .since = 6),
            // Schema 7: GPU memory (src/sampler/gpu/ measures it). gpu_peak:
            // NVML, the tree's largest per-process total, else the devices'
            // rise above the trial's start; gpu_devices: the NVML indices of
            // the devices the trial used, "0,2"; gpu_peak_source: "tree" or
            // "device_delta"; torch_*: the program's {"gpu": ...} events line
            // (torch.cuda.max_memory_allocated() and _reserved()).
            MEMSWEEP_COLUMN(TrialRow, gpu_peak, .unit = kBytes, .since = 7, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, gpu_devices, .since = 7),
            MEMSWEEP_COLUMN(TrialRow, gpu_peak_source, .since = 7),
            MEMSWEEP_COLUMN(TrialRow, torch_allocated_peak, .unit = kBytes, .since = 7, .minus_one = kNotMeasured),
            MEMSWEEP_COLUMN(TrialRow, torch_reserved_peak, .unit = kBytes, .since = 7, .minus_one = kNotMeasured),
            // Schema 8: the trainer's memory plan.
            MEMSWEEP_COLUMN(TrialRow, memory_plan, .since = 8),
            MEMSWEEP_COLUMN(TrialRow, recompute_every, .since = 8),
            // Schema 10: what the analysis would otherwise work out again.
            MEMSWEEP_COLUMN(TrialRow, parameters, .since = 10, .minus_one = kNotMeasured),
        }),
    detail::joined(estimate_parts(),
                   std::array{
                       // Schema 12: what the trial trained on.
                       MEMSWEEP_COLUMN(TrialRow, train_examples, .since = 12, .minus_one = kNotMeasured),
                       // Schema 13: the trial's own GPUs (rank_gpus.hpp).
                       MEMSWEEP_COLUMN(TrialRow, gpu_uuids, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, gpu_name, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, gpu_total, .unit = kBytes, .since = 13, .minus_one = kNotMeasured),
                       MEMSWEEP_COLUMN(TrialRow, gpu_driver, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, cuda_version, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, cuda_alloc_conf, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, gpu_limit, .unit = kBytes, .since = 13, .minus_one = kNone),
                       MEMSWEEP_COLUMN(TrialRow, gpu_limit_mechanism, .since = 13),
                       MEMSWEEP_COLUMN(TrialRow, gpu_reserved, .unit = kBytes, .since = 13, .minus_one = kNone),
                       MEMSWEEP_COLUMN(TrialRow, search_device, .since = 13),
                   }));

// /samples, but for its counter columns: one int64 column of unit "events"
// per counter the file records (FileHeader::counter_columns), named as
// recorded, mapped to SampleRow::counters in order, -1 where not measured.
inline constexpr auto kSamples = std::array{
    MEMSWEEP_COLUMN(SampleRow, trial_id),
    MEMSWEEP_COLUMN(SampleRow, attempt),
    MEMSWEEP_COLUMN(SampleRow, rank, .minus_one = kNone),
    MEMSWEEP_COLUMN(SampleRow, epoch),
    MEMSWEEP_COLUMN(SampleRow, phase, .since = 5, .minus_one = kNone),
    MEMSWEEP_COLUMN(SampleRow, t, .unit = kSeconds),
    MEMSWEEP_COLUMN(SampleRow, rss, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, anon_rss, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, pss, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, sys_used, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, sys_total, .unit = kBytes, .since = 2, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, sys_available, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, sys_active, .unit = kBytes, .minus_one = kNotMeasured),
    // Schema 7: NVML, every visible device's used memory, summed, on the
    // sampler's cadence (other processes' included); and the trial's process
    // tree's, the last per-process read (every 100 ms or slower).
    MEMSWEEP_COLUMN(SampleRow, gpu_used, .unit = kBytes, .since = 7, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(SampleRow, gpu_tree_used, .unit = kBytes, .since = 7, .minus_one = kNotMeasured),
};
inline constexpr ColumnSpec kCounterColumn{
    {}, offsetof(SampleRow, counters), ColumnKind::int64, 1, column_unit::kEvents, 1, MinusOne::not_measured, {}};

inline constexpr auto kEpochs = std::array{
    MEMSWEEP_COLUMN(EpochRow, trial_id),
    MEMSWEEP_COLUMN(EpochRow, attempt),
    MEMSWEEP_COLUMN(EpochRow, epoch),
    MEMSWEEP_COLUMN(EpochRow, train_loss),
    MEMSWEEP_COLUMN(EpochRow, test_accuracy),
    MEMSWEEP_COLUMN(EpochRow, seconds, .unit = kSeconds),
    MEMSWEEP_COLUMN(EpochRow, rss, .unit = kBytes, .minus_one = kNotMeasured),
    MEMSWEEP_COLUMN(EpochRow, sys_used, .unit = kBytes, .minus_one = kNotMeasured),
};

inline constexpr auto kRuns = std::array{
    MEMSWEEP_COLUMN(RunRow, run),
    MEMSWEEP_COLUMN(RunRow, start_time, .unit = kUnixTime),
    MEMSWEEP_COLUMN(RunRow, ranks),
    MEMSWEEP_COLUMN(RunRow, hosts),
    MEMSWEEP_COLUMN(RunRow, command_line),
    MEMSWEEP_COLUMN(RunRow, memsweep_version),
    MEMSWEEP_COLUMN(RunRow, end_time, .unit = kUnixTime, .since = 3, .minus_one = kNone),
    MEMSWEEP_COLUMN(RunRow, end_state, .since = 3),
    MEMSWEEP_COLUMN(RunRow, data_dirs, .since = 5),
    MEMSWEEP_COLUMN(RunRow, max_train_examples, .since = 5),
    MEMSWEEP_COLUMN(RunRow, max_test_examples, .since = 5),
    MEMSWEEP_COLUMN(RunRow, threads, .since = 5),
    MEMSWEEP_COLUMN(RunRow, counter_source, .since = 5),
    MEMSWEEP_COLUMN(RunRow, mem_budget, .unit = kBytes, .since = 5, .minus_one = kNone),
    MEMSWEEP_COLUMN(RunRow, trial_timeout, .unit = kSeconds, .since = 5, .minus_one = kNone),
    MEMSWEEP_COLUMN(RunRow, flush_interval, .unit = kSeconds, .since = 5),
    MEMSWEEP_COLUMN(RunRow, no_swmr, .since = 5),
    MEMSWEEP_COLUMN(RunRow, launcher, .since = 5),
    MEMSWEEP_COLUMN(RunRow, executable, .since = 5),
    MEMSWEEP_COLUMN(RunRow, sweep_file, .since = 5),
    MEMSWEEP_COLUMN(RunRow, output_option, .since = 5),
    MEMSWEEP_COLUMN(RunRow, split_by, .since = 5),
    MEMSWEEP_COLUMN(RunRow, part, .since = 5, .minus_one = kNone),
    MEMSWEEP_COLUMN(RunRow, retried, .since = 5),
    MEMSWEEP_COLUMN(RunRow, changed_options, .since = 5),
    MEMSWEEP_COLUMN(RunRow, trial_process_cost, .since = 9),
};

// The whole table is schema 5's: older files have none.
inline constexpr auto kMessages = std::array{
    MEMSWEEP_COLUMN(MessageRow, trial_id), MEMSWEEP_COLUMN(MessageRow, attempt), MEMSWEEP_COLUMN(MessageRow, run),
    MEMSWEEP_COLUMN(MessageRow, piece),    MEMSWEEP_COLUMN(MessageRow, text),
};

// The whole table is schema 6's.
inline constexpr auto kSearches =
    detail::joined(detail::joined(
                       std::array{
                           MEMSWEEP_COLUMN(SearchRow, search),
                           MEMSWEEP_COLUMN(SearchRow, configuration),
                           MEMSWEEP_COLUMN(SearchRow, limit_index),
                           MEMSWEEP_COLUMN(SearchRow, run),
                           MEMSWEEP_COLUMN(SearchRow, configuration_id),
                           MEMSWEEP_COLUMN(SearchRow, trainer),
                       },
                       hyperparameters<SearchRow>()),
                   std::array{
                       MEMSWEEP_COLUMN(SearchRow, repeat),
                       MEMSWEEP_COLUMN(SearchRow, params),
                       MEMSWEEP_COLUMN(SearchRow, definition),
                       MEMSWEEP_COLUMN(SearchRow, axis),
                       MEMSWEEP_COLUMN(SearchRow, range_low, .unit = column_unit::kAxis),
                       MEMSWEEP_COLUMN(SearchRow, range_high, .unit = column_unit::kAxis),
                       MEMSWEEP_COLUMN(SearchRow, limit, .unit = kBytes),
                       MEMSWEEP_COLUMN(SearchRow, enforced_by),
                       MEMSWEEP_COLUMN(SearchRow, strategy),
                       MEMSWEEP_COLUMN(SearchRow, status),
                       MEMSWEEP_COLUMN(SearchRow, fits, .unit = column_unit::kAxis, .minus_one = kNone),
                       MEMSWEEP_COLUMN(SearchRow, fits_verified),
                       MEMSWEEP_COLUMN(SearchRow, does_not_fit, .unit = column_unit::kAxis, .minus_one = kNone),
                       MEMSWEEP_COLUMN(SearchRow, fit_a_mib, .unit = column_unit::kMiB, .minus_one = kNone),
                       MEMSWEEP_COLUMN(SearchRow, fit_b_mib, .unit = column_unit::kMiBPerUnit, .minus_one = kNone),
                       MEMSWEEP_COLUMN(SearchRow, predicted, .unit = column_unit::kAxis, .minus_one = kNone),
                       MEMSWEEP_COLUMN(SearchRow, trials),
                       MEMSWEEP_COLUMN(SearchRow, seconds, .unit = kSeconds),
                       MEMSWEEP_COLUMN(SearchRow, message),
                       // Schema 8: the configuration's memory plan.
                       MEMSWEEP_COLUMN(SearchRow, memory_plan, .since = 8),
                       MEMSWEEP_COLUMN(SearchRow, recompute_every, .since = 8),
                       // Schema 13: GPU searches.
                       MEMSWEEP_COLUMN(SearchRow, device, .since = 13),
                       MEMSWEEP_COLUMN(SearchRow, gpu_name, .since = 13),
                       MEMSWEEP_COLUMN(SearchRow, gpu_total, .unit = kBytes, .since = 13, .minus_one = kNotMeasured),
                   });

// Values as the program printed them, parsed: no unit memsweep could know.
// The whole table is schema 11's.
inline constexpr auto kMetrics = std::array{
    MEMSWEEP_COLUMN(MetricRow, trial_id), MEMSWEEP_COLUMN(MetricRow, attempt),
    MEMSWEEP_COLUMN(MetricRow, epoch),    MEMSWEEP_COLUMN(MetricRow, name),
    MEMSWEEP_COLUMN(MetricRow, value),    MEMSWEEP_COLUMN(MetricRow, seconds, .unit = kSeconds),
    MEMSWEEP_COLUMN(MetricRow, matches),
};

// A byte range of a row that no fixed column covers (SampleRow::counters,
// whose columns the file names), and the alignment of its elements.
struct RowRange {
  std::size_t offset = 0;
  std::size_t bytes = 0;
  std::size_t alignment = 1;
};

// Whether `table` covers every member of `Row`: its columns, taken in the
// order of their offsets (with `uncovered`, when given), follow one another
// with only the padding their alignment needs, through the end of the
// struct. A member missing from the table leaves a gap that no padding
// explains, and a wrong offset or size an overlap: both fail.
template <typename Row, std::size_t N>
constexpr bool covers(const std::array<ColumnSpec, N>& table, RowRange uncovered = {}) {
  std::array<RowRange, N + 1> ranges{};
  for (std::size_t i = 0; i < N; ++i) ranges[i] = {table[i].offset, table[i].bytes(), table[i].alignment()};
  ranges[N] = uncovered;
  std::sort(ranges.begin(), ranges.end(), [](const RowRange& a, const RowRange& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.bytes < b.bytes;
  });
  const auto aligned = [](std::size_t at, std::size_t alignment) {
    return (at + alignment - 1) / alignment * alignment;
  };
  std::size_t end = 0;
  for (const RowRange& range : ranges) {
    if (range.bytes == 0) continue;  // no uncovered range given
    if (range.offset != aligned(end, range.alignment)) return false;
    end = range.offset + range.bytes;
  }
  return aligned(end, alignof(Row)) == sizeof(Row);
}

}  // namespace columns

// `name` as `memsweep export` heads its column: with its unit as a suffix
// when the name does not already end with it (docs/results-file.md,
// "Header"): rss_peak_bytes, t_s, start_time_unix_s; predicted_bytes,
// wall_seconds and seconds keep theirs.
std::string export_column_name(const ColumnSpec& column);

}  // namespace memsweep
