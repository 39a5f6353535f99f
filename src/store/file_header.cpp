#include "store/file_header.hpp"

#include "store/attributes.hpp"

#include "memsweep/results.hpp"

#include <fmt/format.h>

namespace memsweep::store {
namespace {

// Attributes every file of the versions read has; a missing one means the
// file was damaged or written by something else.
std::string required_string(hid_t file, const char* name, const Hdf5Errors& errors) {
  std::optional<std::string> value = read_string_attribute(file, name, errors);
  if (!value) errors.fail_plain(fmt::format("damaged memsweep results file: root attribute {} is missing", name));
  return std::move(*value);
}

std::vector<std::string> required_strings(hid_t file, const char* name, const Hdf5Errors& errors) {
  std::optional<std::vector<std::string>> value = read_strings_attribute(file, name, errors);
  if (!value) errors.fail_plain(fmt::format("damaged memsweep results file: root attribute {} is missing", name));
  return std::move(*value);
}

std::int64_t required_int(hid_t file, const char* name, const Hdf5Errors& errors) {
  const std::optional<std::int64_t> value = read_int_attribute(file, name, errors);
  if (!value) errors.fail_plain(fmt::format("damaged memsweep results file: root attribute {} is missing", name));
  return *value;
}

}  // namespace

void write_header(hid_t file, const FileHeader& header, const Hdf5Errors& errors) {
  write_string_attribute(file, kFormatAttribute, header.format, errors);
  write_int_attribute(file, kSchemaVersionAttribute, header.schema_version, H5T_STD_I32LE, errors);
  write_string_attribute(file, "sweep_name", header.sweep_name, errors);
  write_string_attribute(file, "sweep_file", header.sweep_file, errors);
  write_string_attribute(file, "sweep_text", header.sweep_text, errors);
  write_string_attribute(file, "sweep_hash", header.sweep_hash, errors);
  write_string_attribute(file, "part", header.part, errors);
  write_string_attribute(file, "command_line", header.command_line, errors);
  write_string_attribute(file, "memsweep_version", header.memsweep_version, errors);
  write_string_attribute(file, "onednn_version", header.onednn_version, errors);
  write_string_attribute(file, "mpi_version", header.mpi_version, errors);
  write_string_attribute(file, "papi_version", header.papi_version, errors);
  write_string_attribute(file, "hdf5_version", header.hdf5_version, errors);
  write_int_attribute(file, "ranks", header.ranks, H5T_STD_I32LE, errors);
  write_strings_attribute(file, "hosts", header.hosts, errors);
  write_string_attribute(file, "start_time", header.start_time, errors);
  write_int_attribute(file, "sampler_interval_ms", header.sampler_interval_ms, H5T_STD_I32LE, errors);
  write_int_attribute(file, "planned_trials", header.planned_trials, H5T_STD_I64LE, errors);
  write_strings_attribute(file, "events_requested", header.events_requested, errors);
  write_strings_attribute(file, "counter_columns", header.counter_columns, errors);
  // Which statuses are final (schema 10): a reader takes them from the file, not from a copy of results.hpp.
  write_strings_attribute(file, "final_statuses", final_status_names(), errors);
  // None (not known) or one per column.
  for (const auto& [name, values] : {std::pair{"counter_sources", &header.counter_sources},
                                     std::pair{"counter_encodings", &header.counter_encodings}}) {
    if (values->empty()) continue;
    if (values->size() != header.counter_columns.size())
      errors.fail_plain(fmt::format("{} lists {} values for {} counter columns", name, values->size(),
                                    header.counter_columns.size()));
    write_strings_attribute(file, name, *values, errors);
  }
  write_strings_attribute(file, "event_notes", header.event_notes, errors);
  write_bool_attribute(file, "swmr", header.swmr, errors);
}

FileHeader read_header(hid_t file, const Hdf5Errors& errors) {
  FileHeader header;
  const std::optional<std::string> format = read_string_attribute(file, kFormatAttribute, errors);
  if (!format) errors.fail_plain("not a memsweep results file (no format attribute)");
  if (*format != kFormatName)
    errors.fail_plain(fmt::format("not a memsweep results file (its format attribute is \"{}\")", *format));
  header.format = *format;
  const std::optional<std::int64_t> version = read_int_attribute(file, kSchemaVersionAttribute, errors);
  if (!version) errors.fail_plain("damaged memsweep results file: no schema_version attribute");
  if (*version < kOldestReadableSchemaVersion || *version > kSchemaVersion)
    errors.fail_plain(fmt::format("schema version {}, this memsweep reads versions {} to {}", *version,
                                  kOldestReadableSchemaVersion, kSchemaVersion));
  header.schema_version = static_cast<int>(*version);

  header.sweep_name = required_string(file, "sweep_name", errors);
  header.sweep_file = required_string(file, "sweep_file", errors);
  header.sweep_text = required_string(file, "sweep_text", errors);
  header.sweep_hash = required_string(file, "sweep_hash", errors);
  // Optional: absent from files written before sweeps could be split.
  header.part = read_string_attribute(file, "part", errors).value_or("");
  header.command_line = required_string(file, "command_line", errors);
  header.memsweep_version = required_string(file, "memsweep_version", errors);
  header.onednn_version = required_string(file, "onednn_version", errors);
  header.mpi_version = required_string(file, "mpi_version", errors);
  header.papi_version = required_string(file, "papi_version", errors);
  header.hdf5_version = required_string(file, "hdf5_version", errors);
  header.ranks = static_cast<int>(required_int(file, "ranks", errors));
  header.hosts = required_strings(file, "hosts", errors);
  header.start_time = required_string(file, "start_time", errors);
  header.sampler_interval_ms = static_cast<int>(required_int(file, "sampler_interval_ms", errors));
  header.planned_trials = required_int(file, "planned_trials", errors);
  header.events_requested = required_strings(file, "events_requested", errors);
  header.counter_columns = required_strings(file, "counter_columns", errors);
  header.event_notes = required_strings(file, "event_notes", errors);
  // Optional: absent from files written before counters had two sources.
  header.counter_sources = read_strings_attribute(file, "counter_sources", errors).value_or(std::vector<std::string>{});
  header.counter_encodings =
      read_strings_attribute(file, "counter_encodings", errors).value_or(std::vector<std::string>{});
  const std::optional<bool> swmr = read_bool_attribute(file, "swmr", errors);
  if (!swmr) errors.fail_plain("damaged memsweep results file: root attribute swmr is missing");
  header.swmr = *swmr;
  return header;
}

void check_resumable(const FileHeader& header, const Hdf5Errors& errors) {
  if (header.schema_version == kSchemaVersion) return;
  errors.fail_plain(fmt::format(
      "schema version {}, and this memsweep writes version {}: it reads such a file but does not continue it; "
      "resume it with a memsweep that writes version {} (memsweep {} wrote it), or write to a new file",
      header.schema_version, kSchemaVersion, header.schema_version, header.memsweep_version));
}

}  // namespace memsweep::store
