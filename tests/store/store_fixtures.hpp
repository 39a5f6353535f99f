#pragma once
// Rows, headers and files for the store tests: every field set to a value
// that differs from its default, so a column lost on the way shows.

#include "memsweep/store.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace memsweep::testing {

inline const std::vector<std::string> kCounterColumns{"PAPI_L1_DCM", "perf::PAGE-FAULTS", "PAPI_TLB_DM"};

// A 12-character trial id, as the sweep makes them: "t00000000007".
std::string example_id(int index);
FileHeader example_header();
TrialRow example_trial(int index, std::string_view status = "ok");
// A search's row (schema 6), every column set.
SearchRow example_search(int index, std::string_view status = "found");
EpochRow example_epoch(int index);
RunRow example_run(std::string_view command_line);
// `count` samples of one attempt, t = 0.01 * i, rss rising by 4096 per row.
std::vector<SampleRow> example_samples(std::string_view trial_id, std::int32_t attempt, std::size_t count,
                                       std::int64_t first_rss = 1'000'000);

void expect_same(const FileHeader& expected, const FileHeader& actual);
void expect_same(const TrialRow& expected, const TrialRow& actual);
void expect_same(const SampleRow& expected, const SampleRow& actual, std::size_t counters);
void expect_same(const EpochRow& expected, const EpochRow& actual);
void expect_same(const RunRow& expected, const RunRow& actual);
void expect_same(const SearchRow& expected, const SearchRow& actual);

std::string read_bytes(const std::filesystem::path& path);

// The StoreError `action` throws, its message; a test failure when it throws
// nothing or something else.
std::string store_error(const std::function<void()>& action);

// Turns a closed results file written by this memsweep into one of an older
// schema `version` (1 to 10), as that version's memsweep wrote it: the
// columns added since are dropped from their tables (which are rewritten,
// keeping their storage and unit attributes), tables added since are
// deleted, and schema_version is set. Schema 2 added /samples' sys_total;
// schema 3 the /trials columns of kTrialColumnsOfVersion3; schema 4 those of
// kTrialColumnsOfVersion4; schema 5 the /messages table; schema 6 the
// /searches table and the /trials columns of kTrialColumnsOfVersion6;
// schema 7 the GPU columns of kTrialColumnsOfVersion7 and
// kSampleColumnsOfVersion7; schema 8 the memory plan's columns of
// kTrialColumnsOfVersion8; schema 9 /runs' trial_process_cost; schema 10
// the /trials columns of kTrialColumnsOfVersion10 and the root attribute
// final_statuses; schema 11 the /metrics table; schema 12 the columns'
// since: and missing: attributes and /trials' train_examples.
void rewrite_as_schema_version(const std::filesystem::path& path, int version);
// `row` with its GPU memory (schema 7) not measured, as an older file or a
// trial without NVML reads.
TrialRow without_gpu_memory(TrialRow row);
inline const std::vector<std::string> kTrialColumnsOfVersion3{"pid",       "end_signal",    "oom_killed", "end_cause",
                                                              "isolation", "start_seconds", "cgroup_peak"};
inline const std::vector<std::string> kTrialColumnsOfVersion4{
    "trainer", "params", "processes", "rss_peak_hwm_sum", "process_peak_max", "bad_event_lines"};
inline const std::vector<std::string> kTrialColumnsOfVersion6{"search",       "probe",    "axis_value",
                                                              "search_limit", "full_run", "reported_oom"};
inline const std::vector<std::string> kTrialColumnsOfVersion7{"gpu_peak", "gpu_devices", "gpu_peak_source",
                                                              "torch_allocated_peak", "torch_reserved_peak"};
inline const std::vector<std::string> kSampleColumnsOfVersion7{"gpu_used", "gpu_tree_used"};
inline const std::vector<std::string> kTrialColumnsOfVersion8{"memory_plan", "recompute_every"};
inline const std::vector<std::string> kSearchColumnsOfVersion8{"memory_plan", "recompute_every"};
// Schema 10's /trials columns: the parameter count and every estimate part's.
inline const std::vector<std::string> kTrialColumnsOfVersion10 = [] {
  std::vector<std::string> columns{"parameters"};
  for (const EstimatePartColumn& part : kEstimatePartColumns) columns.emplace_back(part.column);
  return columns;
}();

}  // namespace memsweep::testing
