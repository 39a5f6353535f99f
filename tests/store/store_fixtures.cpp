#include "store/store_fixtures.hpp"

#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string_view>

namespace memsweep::testing {

std::string example_id(int index) {
  std::string digits = std::to_string(index);
  return "t" + std::string(kTrialIdChars - 1 - digits.size(), '0') + digits;
}

FileHeader example_header() {
  FileHeader header;
  header.sweep_name = "store-test";
  header.sweep_file = "sweeps/store test.toml";
  header.sweep_text = "[sweep]\nname = \"store-test\"\n# ünïcödé survives\n";
  header.sweep_hash = "0123456789abcdef";
  header.part = "dataset=fashion-mnist";
  header.command_line = "memsweep run sweeps/store-test.toml -o out.h5";
  header.memsweep_version = "0.1.0";
  header.onednn_version = "2.6.3";
  header.mpi_version = "Open MPI v4.1.4";
  header.papi_version = "7.0.0.0";
  header.hdf5_version = hdf5_library_version();
  header.ranks = 3;
  header.hosts = {"node-a", "node-b", "node-b"};
  header.start_time = "2024-05-01T12:34:56Z";
  header.sampler_interval_ms = 10;
  header.planned_trials = 1234567890123;
  header.events_requested = {"PAPI_L1_DCM", "perf::PAGE-FAULTS", "PAPI_TLB_DM", "PAPI_NOPE"};
  header.counter_columns = kCounterColumns;
  header.counter_sources = {"papi", "kernel", "kernel"};
  header.counter_encodings = {"type=4 config=0x430864 - type=4 config=0x430040", "type=1 config=0x2",
                              "type=3 config=0x10003"};
  header.event_notes = {"PAPI_NOPE: no such event on this machine"};
  header.swmr = true;
  return header;
}

TrialRow example_trial(int index, std::string_view status) {
  TrialRow row;
  set_fixed(row.trial_id, example_id(index));
  row.attempt = index % 3;
  row.repeat = index % 2;
  row.run = 1;
  row.plan_index = 40 + index;
  set_fixed(row.dataset, "fashion-mnist");
  set_fixed(row.model, "cnn");
  set_fixed(row.optimizer, "momentum");
  row.learning_rate = 0.001 * (index + 1);
  row.epochs = 7 + index;
  row.batch_size = 64;
  row.depth = 3;
  row.hidden = {};
  row.hidden[0] = 285;
  row.hidden[1] = 389;
  row.hidden[2] = 423 + index;
  row.channels[0] = 8;
  row.channels[1] = 16;
  row.seed = 0xFEDCBA9876543210ULL + static_cast<std::uint64_t>(index);
  row.rank = 2;
  set_fixed(row.host, "node-b.cluster.example.org");
  set_fixed(row.status, status);
  set_fixed(row.message, std::string(kMessageChars, 'm'));  // fills every byte: no NUL at all
  row.start_time = 1714566896.25 + index;
  row.end_time = row.start_time + 12.5;
  row.wall_seconds = 12.5;
  row.rss_baseline = 100'000'000;
  row.rss_peak = 180'000'000 + index;
  row.rss_mean = 150'000'000.5;
  row.rss_footprint = row.rss_peak - row.rss_baseline;
  row.sys_used_mean = 4.5e9;
  row.predicted_bytes = 75'000'000;
  row.epochs_done = row.epochs;
  row.final_train_loss = 0.125;
  row.test_accuracy = 0.875;
  row.samples = 1250;
  row.dropped_samples = 3;
  set_fixed(row.definition, "dataset=fashion-mnist;model=cnn;channels=8-16;index=" + std::to_string(index));
  row.pid = 31337 + index;
  row.end_signal = 9;
  row.oom_killed = 1;
  set_fixed(row.end_cause, "oom");
  set_fixed(row.isolation, "cgroup2");
  row.start_seconds = 0.0625;
  row.cgroup_peak = 200'000'000 + index;
  set_fixed(row.trainer, index % 2 == 0 ? "memsweep" : "pytorch");
  set_fixed(row.params, std::string(R"({"dropout":0.)") + std::to_string(index) + R"(,"note":"é"})");
  row.processes = 1 + index;
  row.rss_peak_hwm_sum = 190'000'000 + index;
  row.process_peak_max = 170'000'000 + index;
  row.bad_event_lines = index;
  row.search = 5 + index;
  row.probe = index;
  row.axis_value = 128 + index;
  row.search_limit = 3'000'000'000 + index;
  row.full_run = index % 2;
  row.reported_oom = 1;
  row.gpu_peak = 3'000'000'000 + index;
  set_fixed(row.gpu_devices, "0,3");
  set_fixed(row.gpu_peak_source, "tree");
  row.torch_allocated_peak = 2'000'000'000;
  row.torch_reserved_peak = 2'500'000'000;
  // Not the defaults: an older file's rows read keep and 0 instead.
  set_fixed(row.memory_plan, index % 2 == 0 ? "recompute" : "reuse");
  row.recompute_every = index % 2 == 0 ? 3 + index : 0;
  // Schema 10: what the analysis reads instead of working it out.
  row.parameters = 123'456 + index;
  row.train_examples = 60'000 - static_cast<std::int64_t>(index);
  record_estimate_part(row, estimate_part::kParameters, 493'824 + index);
  record_estimate_part(row, estimate_part::kScratchpad, 65'536);
  record_estimate_part(row, estimate_part::kResidentDataset, 219'520'000);
  return row;
}

SearchRow example_search(int index, std::string_view status) {
  SearchRow row;
  row.search = 3 + index;
  row.configuration = 1 + index;
  row.limit_index = index % 2;
  row.run = 2;
  set_fixed(row.configuration_id, example_id(20 + index));
  set_fixed(row.trainer, "pytorch");
  set_fixed(row.dataset, "fashion-mnist");
  set_fixed(row.model, "cnn");
  set_fixed(row.optimizer, "adam");
  row.learning_rate = 0.003;
  row.epochs = 4;
  row.batch_size = 16;
  row.depth = 2;
  row.hidden[0] = 300 + index;
  row.hidden[1] = 100;
  row.channels[0] = 8;
  row.repeat = 1;
  set_fixed(row.params, R"({"width":2,"note":"é"})");
  set_fixed(row.definition, "trainer=pytorch;dataset=fashion-mnist;model=cnn;index=" + std::to_string(index));
  set_fixed(row.axis, "batch_size");
  row.range_low = 16;
  row.range_high = 4096;
  row.limit = 2'147'483'648LL * (index + 1);
  set_fixed(row.enforced_by, "cgroup2");
  set_fixed(row.strategy, "bisect");
  set_fixed(row.status, status);
  row.fits = 700 + index;
  row.fits_verified = 1;
  row.does_not_fit = 768 + index;
  row.fit_a_mib = 512.25;
  row.fit_b_mib = 1.5;
  row.predicted = 650;
  row.trials = 7;
  row.seconds = 93.5;
  set_fixed(row.message, std::string(kMessageChars, 's'));  // fills every byte
  set_fixed(row.memory_plan, "recompute");                  // not the default: an older file's rows read keep
  row.recompute_every = 4 + index;
  return row;
}

EpochRow example_epoch(int index) {
  EpochRow row;
  set_fixed(row.trial_id, example_id(index));
  row.attempt = 1;
  row.epoch = index + 1;
  row.train_loss = 2.0 / (index + 1);
  row.test_accuracy = 0.5 + 0.01 * index;
  row.seconds = 1.75;
  row.rss = 150'000'000 + index;
  row.sys_used = 4'000'000'000;
  return row;
}

RunRow example_run(std::string_view command_line) {
  RunRow run;
  run.run = 99;  // the store numbers runs itself
  run.start_time = 1714570000.5;
  run.ranks = 4;
  set_fixed(run.hosts, "node-c,node-d");
  set_fixed(run.command_line, command_line);
  set_fixed(run.memsweep_version, "0.1.1");
  return run;
}

std::vector<SampleRow> example_samples(std::string_view trial_id, std::int32_t attempt, std::size_t count,
                                       std::int64_t first_rss) {
  std::vector<SampleRow> rows(count);
  for (std::size_t i = 0; i < count; ++i) {
    SampleRow& row = rows[i];
    set_fixed(row.trial_id, trial_id);
    row.attempt = attempt;
    row.rank = 1;
    row.epoch = static_cast<std::int32_t>(i / 100);
    row.phase = static_cast<std::int32_t>(i % 3);  // setup, training, evaluating: any of them
    row.t = 0.01 * static_cast<double>(i);
    row.rss = first_rss + 4096 * static_cast<std::int64_t>(i);
    row.anon_rss = row.rss - 500'000;
    row.pss = row.rss - 1000;
    row.sys_used = 4'000'000'000 + static_cast<std::int64_t>(i);
    row.sys_total = 16'000'000'000;
    row.sys_available = 12'000'000'000;
    row.sys_active = 6'000'000'000;
    row.gpu_used = 40'000'000'000 + static_cast<std::int64_t>(i);
    row.gpu_tree_used = 30'000'000'000;
    for (std::size_t c = 0; c < kCounterColumns.size(); ++c)
      row.counters[c] = static_cast<std::int64_t>(1000 * (c + 1) + i);
  }
  return rows;
}

void expect_same(const FileHeader& expected, const FileHeader& actual) {
  EXPECT_EQ(actual.format, expected.format);
  EXPECT_EQ(actual.schema_version, expected.schema_version);
  EXPECT_EQ(actual.sweep_name, expected.sweep_name);
  EXPECT_EQ(actual.sweep_file, expected.sweep_file);
  EXPECT_EQ(actual.sweep_text, expected.sweep_text);
  EXPECT_EQ(actual.sweep_hash, expected.sweep_hash);
  EXPECT_EQ(actual.part, expected.part);
  EXPECT_EQ(actual.command_line, expected.command_line);
  EXPECT_EQ(actual.memsweep_version, expected.memsweep_version);
  EXPECT_EQ(actual.onednn_version, expected.onednn_version);
  EXPECT_EQ(actual.mpi_version, expected.mpi_version);
  EXPECT_EQ(actual.papi_version, expected.papi_version);
  EXPECT_EQ(actual.hdf5_version, expected.hdf5_version);
  EXPECT_EQ(actual.ranks, expected.ranks);
  EXPECT_EQ(actual.hosts, expected.hosts);
  EXPECT_EQ(actual.start_time, expected.start_time);
  EXPECT_EQ(actual.sampler_interval_ms, expected.sampler_interval_ms);
  EXPECT_EQ(actual.planned_trials, expected.planned_trials);
  EXPECT_EQ(actual.events_requested, expected.events_requested);
  EXPECT_EQ(actual.counter_columns, expected.counter_columns);
  EXPECT_EQ(actual.counter_sources, expected.counter_sources);
  EXPECT_EQ(actual.counter_encodings, expected.counter_encodings);
  EXPECT_EQ(actual.event_notes, expected.event_notes);
  EXPECT_EQ(actual.swmr, expected.swmr);
}

void expect_same(const TrialRow& expected, const TrialRow& actual) {
  EXPECT_EQ(actual.trial_id, expected.trial_id);
  EXPECT_EQ(actual.attempt, expected.attempt);
  EXPECT_EQ(actual.repeat, expected.repeat);
  EXPECT_EQ(actual.run, expected.run);
  EXPECT_EQ(actual.plan_index, expected.plan_index);
  EXPECT_EQ(actual.dataset, expected.dataset);
  EXPECT_EQ(actual.model, expected.model);
  EXPECT_EQ(actual.optimizer, expected.optimizer);
  EXPECT_EQ(actual.learning_rate, expected.learning_rate);
  EXPECT_EQ(actual.epochs, expected.epochs);
  EXPECT_EQ(actual.batch_size, expected.batch_size);
  EXPECT_EQ(actual.depth, expected.depth);
  EXPECT_EQ(actual.hidden, expected.hidden);
  EXPECT_EQ(actual.channels, expected.channels);
  EXPECT_EQ(actual.seed, expected.seed);
  EXPECT_EQ(actual.rank, expected.rank);
  EXPECT_EQ(actual.host, expected.host);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.message, expected.message);
  EXPECT_EQ(actual.start_time, expected.start_time);
  EXPECT_EQ(actual.end_time, expected.end_time);
  EXPECT_EQ(actual.wall_seconds, expected.wall_seconds);
  EXPECT_EQ(actual.rss_baseline, expected.rss_baseline);
  EXPECT_EQ(actual.rss_peak, expected.rss_peak);
  EXPECT_EQ(actual.rss_mean, expected.rss_mean);
  EXPECT_EQ(actual.rss_footprint, expected.rss_footprint);
  EXPECT_EQ(actual.sys_used_mean, expected.sys_used_mean);
  EXPECT_EQ(actual.predicted_bytes, expected.predicted_bytes);
  EXPECT_EQ(actual.epochs_done, expected.epochs_done);
  EXPECT_EQ(actual.final_train_loss, expected.final_train_loss);
  EXPECT_EQ(actual.test_accuracy, expected.test_accuracy);
  EXPECT_EQ(actual.samples, expected.samples);
  EXPECT_EQ(actual.dropped_samples, expected.dropped_samples);
  EXPECT_EQ(actual.definition, expected.definition);
  EXPECT_EQ(actual.pid, expected.pid);
  EXPECT_EQ(actual.end_signal, expected.end_signal);
  EXPECT_EQ(actual.oom_killed, expected.oom_killed);
  EXPECT_EQ(actual.end_cause, expected.end_cause);
  EXPECT_EQ(actual.isolation, expected.isolation);
  EXPECT_EQ(actual.start_seconds, expected.start_seconds);
  EXPECT_EQ(actual.cgroup_peak, expected.cgroup_peak);
  EXPECT_EQ(actual.trainer, expected.trainer);
  EXPECT_EQ(actual.params, expected.params);
  EXPECT_EQ(actual.processes, expected.processes);
  EXPECT_EQ(actual.rss_peak_hwm_sum, expected.rss_peak_hwm_sum);
  EXPECT_EQ(actual.process_peak_max, expected.process_peak_max);
  EXPECT_EQ(actual.bad_event_lines, expected.bad_event_lines);
  EXPECT_EQ(actual.search, expected.search);
  EXPECT_EQ(actual.probe, expected.probe);
  EXPECT_EQ(actual.axis_value, expected.axis_value);
  EXPECT_EQ(actual.search_limit, expected.search_limit);
  EXPECT_EQ(actual.full_run, expected.full_run);
  EXPECT_EQ(actual.reported_oom, expected.reported_oom);
  EXPECT_EQ(actual.gpu_peak, expected.gpu_peak);
  EXPECT_EQ(get_fixed(actual.gpu_devices), get_fixed(expected.gpu_devices));
  EXPECT_EQ(get_fixed(actual.gpu_peak_source), get_fixed(expected.gpu_peak_source));
  EXPECT_EQ(actual.torch_allocated_peak, expected.torch_allocated_peak);
  EXPECT_EQ(actual.torch_reserved_peak, expected.torch_reserved_peak);
  EXPECT_EQ(get_fixed(actual.memory_plan), get_fixed(expected.memory_plan));
  EXPECT_EQ(actual.recompute_every, expected.recompute_every);
  EXPECT_EQ(actual.parameters, expected.parameters);
  EXPECT_EQ(actual.estimate_parts, expected.estimate_parts);
  EXPECT_EQ(actual.train_examples, expected.train_examples);
}

void expect_same(const SampleRow& expected, const SampleRow& actual, std::size_t counters) {
  EXPECT_EQ(actual.trial_id, expected.trial_id);
  EXPECT_EQ(actual.attempt, expected.attempt);
  EXPECT_EQ(actual.rank, expected.rank);
  EXPECT_EQ(actual.epoch, expected.epoch);
  EXPECT_EQ(actual.phase, expected.phase);
  EXPECT_EQ(actual.t, expected.t);
  EXPECT_EQ(actual.rss, expected.rss);
  EXPECT_EQ(actual.anon_rss, expected.anon_rss);
  EXPECT_EQ(actual.pss, expected.pss);
  EXPECT_EQ(actual.sys_used, expected.sys_used);
  EXPECT_EQ(actual.sys_total, expected.sys_total);
  EXPECT_EQ(actual.sys_available, expected.sys_available);
  EXPECT_EQ(actual.sys_active, expected.sys_active);
  EXPECT_EQ(actual.gpu_used, expected.gpu_used);
  EXPECT_EQ(actual.gpu_tree_used, expected.gpu_tree_used);
  for (std::size_t c = 0; c < counters; ++c) EXPECT_EQ(actual.counters[c], expected.counters[c]) << "counter " << c;
}

void expect_same(const EpochRow& expected, const EpochRow& actual) {
  EXPECT_EQ(actual.trial_id, expected.trial_id);
  EXPECT_EQ(actual.attempt, expected.attempt);
  EXPECT_EQ(actual.epoch, expected.epoch);
  EXPECT_EQ(actual.train_loss, expected.train_loss);
  EXPECT_EQ(actual.test_accuracy, expected.test_accuracy);
  EXPECT_EQ(actual.seconds, expected.seconds);
  EXPECT_EQ(actual.rss, expected.rss);
  EXPECT_EQ(actual.sys_used, expected.sys_used);
}

void expect_same(const RunRow& expected, const RunRow& actual) {
  EXPECT_EQ(actual.run, expected.run);
  EXPECT_EQ(actual.start_time, expected.start_time);
  EXPECT_EQ(actual.ranks, expected.ranks);
  EXPECT_EQ(actual.hosts, expected.hosts);
  EXPECT_EQ(actual.command_line, expected.command_line);
  EXPECT_EQ(actual.memsweep_version, expected.memsweep_version);
}

void expect_same(const SearchRow& expected, const SearchRow& actual) {
  EXPECT_EQ(actual.search, expected.search);
  EXPECT_EQ(actual.configuration, expected.configuration);
  EXPECT_EQ(actual.limit_index, expected.limit_index);
  EXPECT_EQ(actual.run, expected.run);
  EXPECT_EQ(actual.configuration_id, expected.configuration_id);
  EXPECT_EQ(actual.trainer, expected.trainer);
  EXPECT_EQ(actual.dataset, expected.dataset);
  EXPECT_EQ(actual.model, expected.model);
  EXPECT_EQ(actual.optimizer, expected.optimizer);
  EXPECT_EQ(actual.learning_rate, expected.learning_rate);
  EXPECT_EQ(actual.epochs, expected.epochs);
  EXPECT_EQ(actual.batch_size, expected.batch_size);
  EXPECT_EQ(actual.depth, expected.depth);
  EXPECT_EQ(actual.hidden, expected.hidden);
  EXPECT_EQ(actual.channels, expected.channels);
  EXPECT_EQ(actual.repeat, expected.repeat);
  EXPECT_EQ(actual.params, expected.params);
  EXPECT_EQ(actual.definition, expected.definition);
  EXPECT_EQ(actual.axis, expected.axis);
  EXPECT_EQ(actual.range_low, expected.range_low);
  EXPECT_EQ(actual.range_high, expected.range_high);
  EXPECT_EQ(actual.limit, expected.limit);
  EXPECT_EQ(actual.enforced_by, expected.enforced_by);
  EXPECT_EQ(actual.strategy, expected.strategy);
  EXPECT_EQ(actual.status, expected.status);
  EXPECT_EQ(actual.fits, expected.fits);
  EXPECT_EQ(actual.fits_verified, expected.fits_verified);
  EXPECT_EQ(actual.does_not_fit, expected.does_not_fit);
  EXPECT_EQ(actual.fit_a_mib, expected.fit_a_mib);
  EXPECT_EQ(actual.fit_b_mib, expected.fit_b_mib);
  EXPECT_EQ(actual.predicted, expected.predicted);
  EXPECT_EQ(actual.trials, expected.trials);
  EXPECT_EQ(actual.seconds, expected.seconds);
  EXPECT_EQ(actual.message, expected.message);
  EXPECT_EQ(get_fixed(actual.memory_plan), get_fixed(expected.memory_plan));
  EXPECT_EQ(actual.recompute_every, expected.recompute_every);
}

std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

namespace {

// The text attribute `name` of `object` (a variable-length string, as the
// store writes them).
std::string read_text_attribute(hid_t object, const std::string& name) {
  const hid_t attribute = H5Aopen(object, name.c_str(), H5P_DEFAULT);
  EXPECT_GE(attribute, 0) << name;
  const hid_t type = H5Aget_type(attribute);
  char* value = nullptr;
  EXPECT_GE(H5Aread(attribute, type, &value), 0) << name;
  std::string text = value != nullptr ? value : "";
  H5free_memory(value);
  H5Tclose(type);
  H5Aclose(attribute);
  return text;
}

void write_text_attribute(hid_t object, const std::string& name, const std::string& value) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attribute = H5Acreate2(object, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char* text = value.c_str();
  EXPECT_GE(H5Awrite(attribute, type, &text), 0) << name;
  H5Aclose(attribute);
  H5Sclose(space);
  H5Tclose(type);
}

// Rewrites table `name` without the columns `dropped`: the same rows, the
// other columns in their order, packed, and the same storage (chunks,
// filters) and attributes.
void drop_columns(hid_t file, const std::string& name, const std::vector<std::string>& dropped) {
  const hid_t dataset = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(dataset, 0) << name;
  const hid_t stored = H5Dget_type(dataset);
  std::vector<std::string> kept_names;
  std::vector<hid_t> kept_types;
  std::size_t row_bytes = 0;
  for (int i = 0; i < H5Tget_nmembers(stored); ++i) {
    char* member = H5Tget_member_name(stored, static_cast<unsigned>(i));
    const std::string member_name = member;
    H5free_memory(member);
    if (std::find(dropped.begin(), dropped.end(), member_name) != dropped.end()) continue;
    kept_names.push_back(member_name);
    kept_types.push_back(H5Tget_member_type(stored, static_cast<unsigned>(i)));
    row_bytes += H5Tget_size(kept_types.back());
  }
  ASSERT_EQ(kept_names.size() + dropped.size(), static_cast<std::size_t>(H5Tget_nmembers(stored)))
      << "table /" << name << " lacks a column to drop";
  const hid_t kept = H5Tcreate(H5T_COMPOUND, row_bytes);
  std::size_t offset = 0;
  for (std::size_t i = 0; i < kept_names.size(); ++i) {
    H5Tinsert(kept, kept_names[i].c_str(), offset, kept_types[i]);
    offset += H5Tget_size(kept_types[i]);
    H5Tclose(kept_types[i]);
  }

  const hid_t old_space = H5Dget_space(dataset);
  hsize_t rows = 0;
  H5Sget_simple_extent_dims(old_space, &rows, nullptr);
  H5Sclose(old_space);
  std::vector<char> data(std::max<std::size_t>(1, rows * row_bytes));
  if (rows > 0) {
    EXPECT_GE(H5Dread(dataset, kept, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  }
  std::vector<std::pair<std::string, std::string>> attributes{
      {"description", read_text_attribute(dataset, "description")}};
  for (const std::string& column : kept_names) {
    attributes.emplace_back("unit:" + column, read_text_attribute(dataset, "unit:" + column));
    if (H5Aexists(dataset, ("label:" + column).c_str()) > 0)
      attributes.emplace_back("label:" + column, read_text_attribute(dataset, "label:" + column));
  }
  const hid_t dcpl = H5Dget_create_plist(dataset);
  H5Dclose(dataset);
  H5Tclose(stored);
  ASSERT_GE(H5Ldelete(file, name.c_str(), H5P_DEFAULT), 0);

  const hsize_t unlimited = H5S_UNLIMITED;
  const hid_t space = H5Screate_simple(1, &rows, &unlimited);
  const hid_t rewritten = H5Dcreate2(file, name.c_str(), kept, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(rewritten, 0) << name;
  if (rows > 0) {
    EXPECT_GE(H5Dwrite(rewritten, kept, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()), 0);
  }
  for (const auto& [attribute, value] : attributes) write_text_attribute(rewritten, attribute, value);
  H5Dclose(rewritten);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Tclose(kept);
}

}  // namespace

TrialRow without_gpu_memory(TrialRow row) {
  row.gpu_peak = -1;
  set_fixed(row.gpu_devices, "");
  set_fixed(row.gpu_peak_source, "");
  row.torch_allocated_peak = -1;
  row.torch_reserved_peak = -1;
  return row;
}

namespace {

// Deletes the attributes of table `name` whose names begin with one of `prefixes`.
void delete_attributes(hid_t file, const char* name, std::initializer_list<std::string_view> prefixes) {
  if (H5Lexists(file, name, H5P_DEFAULT) <= 0) return;
  const hid_t dataset = H5Dopen2(file, name, H5P_DEFAULT);
  std::vector<std::string> doomed;
  H5Aiterate2(
      dataset, H5_INDEX_NAME, H5_ITER_NATIVE, nullptr,
      [](hid_t, const char* attribute, const H5A_info_t*, void* names) -> herr_t {
        static_cast<std::vector<std::string>*>(names)->emplace_back(attribute);
        return 0;
      },
      &doomed);
  for (const std::string& attribute : doomed)
    for (const std::string_view prefix : prefixes)
      if (attribute.starts_with(prefix)) {
        EXPECT_GE(H5Adelete(dataset, attribute.c_str()), 0) << attribute;
      }
  H5Dclose(dataset);
}

}  // namespace

void rewrite_as_schema_version(const std::filesystem::path& path, int version) {
  ASSERT_TRUE(version >= 1 && version <= kSchemaVersion - 1) << "no such older version: " << version;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  // Schema 12: every column's since: and missing: attributes, and /trials' train_examples.
  for (const char* table : {"trials", "samples", "epochs", "runs", "messages", "searches", "metrics"})
    delete_attributes(file, table, {"since:", "missing:"});
  std::vector<std::string> dropped{"train_examples"};
  if (version < 11) {
    EXPECT_GE(H5Ldelete(file, "metrics", H5P_DEFAULT), 0) << "schema 11's /metrics";
  }
  if (version < 10) {
    dropped.insert(dropped.end(), kTrialColumnsOfVersion10.begin(), kTrialColumnsOfVersion10.end());
    EXPECT_GE(H5Adelete(file, "final_statuses"), 0) << "schema 10's final_statuses";
  }
  if (version < 9) drop_columns(file, "runs", {"trial_process_cost"});
  if (version < 8) dropped.insert(dropped.end(), kTrialColumnsOfVersion8.begin(), kTrialColumnsOfVersion8.end());
  std::vector<std::string> dropped_samples;
  if (version < 7) {
    dropped.insert(dropped.end(), kTrialColumnsOfVersion7.begin(), kTrialColumnsOfVersion7.end());
    dropped_samples = kSampleColumnsOfVersion7;
  }
  if (version < 8 && version >= 6) drop_columns(file, "searches", kSearchColumnsOfVersion8);
  if (version < 6) {
    EXPECT_GE(H5Ldelete(file, "searches", H5P_DEFAULT), 0) << "schema 6's /searches";
    dropped.insert(dropped.end(), kTrialColumnsOfVersion6.begin(), kTrialColumnsOfVersion6.end());
  }
  if (version < 5) {
    EXPECT_GE(H5Ldelete(file, "messages", H5P_DEFAULT), 0) << "schema 5's /messages";
    dropped.emplace_back("plan_index");  // schema 5's
    dropped_samples.emplace_back("phase");
  }
  if (version < 4) dropped.insert(dropped.end(), kTrialColumnsOfVersion4.begin(), kTrialColumnsOfVersion4.end());
  if (version < 3) dropped.insert(dropped.end(), kTrialColumnsOfVersion3.begin(), kTrialColumnsOfVersion3.end());
  drop_columns(file, "trials", dropped);
  if (version < 2) dropped_samples.emplace_back("sys_total");
  if (!dropped_samples.empty()) drop_columns(file, "samples", dropped_samples);
  const hid_t attribute = H5Aopen(file, "schema_version", H5P_DEFAULT);
  const std::int32_t value = version;
  EXPECT_GE(H5Awrite(attribute, H5T_NATIVE_INT32, &value), 0);
  H5Aclose(attribute);
  H5Fclose(file);
}

std::string store_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const StoreError& error) {
    return error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "not a StoreError: " << error.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

}  // namespace memsweep::testing
