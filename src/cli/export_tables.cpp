#include "cli/export_tables.hpp"

#include "memsweep/config.hpp"
#include "memsweep/error.hpp"
#include "memsweep/gpu_columns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <map>

namespace memsweep::cli {
namespace {

// A "not measured" figure (docs/results-file.md).
constexpr std::int64_t kNotMeasured = -1;

template <typename Row>
struct Column {
  const char* name;
  void (*write)(const Row& row, DelimitedWriter& out);
};

template <typename Row, std::size_t N>
std::vector<std::string> names_of(const Column<Row> (&columns)[N]) {
  std::vector<std::string> names;
  for (const Column<Row>& column : columns) names.emplace_back(column.name);
  return names;
}

void measured(std::int64_t value, DelimitedWriter& out) {
  if (value == kNotMeasured)
    out.empty();
  else
    out.integer(value);
}

void measured(std::int32_t value, DelimitedWriter& out) { measured(std::int64_t{value}, out); }

void measured(double value, DelimitedWriter& out) {
  if (value == static_cast<double>(kNotMeasured))
    out.empty();
  else
    out.real(value);
}

// A program's built-in fields that its file neither sets nor names
// (TrialSpec::shows_field): empty cells, as pandas and R read NA.
void set_real(double value, DelimitedWriter& out) {
  if (std::isnan(value))
    out.empty();
  else
    out.real(value);
}
void set_count(std::int32_t value, DelimitedWriter& out) {
  if (value <= 0)
    out.empty();
  else
    out.integer(value);
}
void set_depth(std::int32_t depth, DelimitedWriter& out) {
  if (depth == kBlankDepth)
    out.empty();
  else
    out.integer(depth);
}

// "64-32": the widths of the layers there are; empty for none.
template <std::size_t N>
std::string joined_sizes(const std::array<std::int32_t, N>& sizes, int count) {
  std::vector<std::int32_t> present;
  for (int i = 0; i < count && i < static_cast<int>(N) && sizes[i] > 0; ++i) present.push_back(sizes[i]);
  return fmt::format("{}", fmt::join(present, "-"));
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

// The trial's columns, except its message (a parameter of write_trial,
// after "status").
const Column<TrialRow> kTrialIdentity[] = {
    {"trial_id", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.trial_id)); }},
    {"attempt", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.attempt); }},
    {"repeat", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.repeat); }},
    {"run", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.run); }},
    {"plan_index", [](const TrialRow& r, DelimitedWriter& o) { measured(r.plan_index, o); }},
    {"dataset", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.dataset)); }},
    {"model", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.model)); }},
    {"optimizer", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.optimizer)); }},
    {"learning_rate", [](const TrialRow& r, DelimitedWriter& o) { set_real(r.learning_rate, o); }},
    {"epochs", [](const TrialRow& r, DelimitedWriter& o) { set_count(r.epochs, o); }},
    {"batch_size", [](const TrialRow& r, DelimitedWriter& o) { set_count(r.batch_size, o); }},
    {"depth", [](const TrialRow& r, DelimitedWriter& o) { set_depth(r.depth, o); }},
    {"hidden", [](const TrialRow& r, DelimitedWriter& o) { o.text(joined_sizes(r.hidden, r.depth)); }},
    {"channels", [](const TrialRow& r, DelimitedWriter& o) { o.text(joined_sizes(r.channels, kMaxConvBlocks)); }},
    {"memory_plan", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.memory_plan)); }},
    {"recompute_every", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.recompute_every); }},
    {"seed", [](const TrialRow& r, DelimitedWriter& o) { o.unsigned_integer(r.seed); }},
    {"trainer", [](const TrialRow& r, DelimitedWriter& o) { o.text(trainer_of(r)); }},
    {"params", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.params)); }},
    {"rank", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rank, o); }},
    {"host", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.host)); }},
    {"status", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.status)); }},
};

const Column<TrialRow> kTrialFigures[] = {
    {"start_time_unix_s", [](const TrialRow& r, DelimitedWriter& o) { o.real(r.start_time); }},
    {"end_time_unix_s", [](const TrialRow& r, DelimitedWriter& o) { o.real(r.end_time); }},
    {"wall_seconds", [](const TrialRow& r, DelimitedWriter& o) { o.real(r.wall_seconds); }},
    {"rss_baseline_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rss_baseline, o); }},
    {"rss_peak_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rss_peak, o); }},
    {"rss_mean_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rss_mean, o); }},
    {"rss_footprint_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rss_footprint, o); }},
    {"sys_used_mean_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.sys_used_mean, o); }},
    {"predicted_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.predicted_bytes, o); }},
    {"epochs_done", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.epochs_done); }},
    {"final_train_loss", [](const TrialRow& r, DelimitedWriter& o) { measured(r.final_train_loss, o); }},
    {"test_accuracy", [](const TrialRow& r, DelimitedWriter& o) { measured(r.test_accuracy, o); }},
    {"samples", [](const TrialRow& r, DelimitedWriter& o) { o.unsigned_integer(r.samples); }},
    {"dropped_samples", [](const TrialRow& r, DelimitedWriter& o) { o.unsigned_integer(r.dropped_samples); }},
    {"pid", [](const TrialRow& r, DelimitedWriter& o) { measured(r.pid, o); }},
    {"end_signal", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.end_signal); }},
    {"oom_killed", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.oom_killed); }},
    {"end_cause", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.end_cause)); }},
    {"isolation", [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.isolation)); }},
    {"start_seconds", [](const TrialRow& r, DelimitedWriter& o) { measured(r.start_seconds, o); }},
    {"cgroup_peak_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.cgroup_peak, o); }},
    {"processes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.processes, o); }},
    {"rss_peak_hwm_sum_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.rss_peak_hwm_sum, o); }},
    {"process_peak_max_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.process_peak_max, o); }},
    {"bad_event_lines", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.bad_event_lines); }},
    // Schema 6: the search the trial is a probe of; empty outside searches.
    {"search", [](const TrialRow& r, DelimitedWriter& o) { measured(r.search, o); }},
    {"probe", [](const TrialRow& r, DelimitedWriter& o) { measured(r.probe, o); }},
    {"axis_value", [](const TrialRow& r, DelimitedWriter& o) { measured(r.axis_value, o); }},
    {"search_limit_bytes", [](const TrialRow& r, DelimitedWriter& o) { measured(r.search_limit, o); }},
    {"full_run", [](const TrialRow& r, DelimitedWriter& o) { measured(r.full_run, o); }},
    {"reported_oom", [](const TrialRow& r, DelimitedWriter& o) { o.integer(r.reported_oom); }},
    // Schema 7: GPU memory (src/sampler/gpu/gpu_columns.hpp names them); empty where not measured.
    {gpu::kTrialGpuPeak.export_name.data(), [](const TrialRow& r, DelimitedWriter& o) { measured(r.gpu_peak, o); }},
    {gpu::kTrialGpuDevices.export_name.data(),
     [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.gpu_devices)); }},
    {gpu::kTrialGpuPeakSource.export_name.data(),
     [](const TrialRow& r, DelimitedWriter& o) { o.text(get_fixed(r.gpu_peak_source)); }},
    {gpu::kTrialTorchAllocatedPeak.export_name.data(),
     [](const TrialRow& r, DelimitedWriter& o) { measured(r.torch_allocated_peak, o); }},
    {gpu::kTrialTorchReservedPeak.export_name.data(),
     [](const TrialRow& r, DelimitedWriter& o) { measured(r.torch_reserved_peak, o); }},
    {"definition", [](const TrialRow& r, DelimitedWriter& o) { o.text(exported_definition(r)); }},
};

constexpr char kMessageColumn[] = "message";

// /searches: the configuration as the trials' columns name it, then the
// search and its answer. -1 (no such value, no fit) is an empty cell.
const Column<SearchRow> kSearchColumns[] = {
    {"search", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.search); }},
    {"configuration", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.configuration); }},
    {"limit_index", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.limit_index); }},
    {"run", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.run); }},
    {"configuration_id", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.configuration_id)); }},
    {"trainer", [](const SearchRow& r, DelimitedWriter& o) { o.text(trainer_of(r)); }},
    {"dataset", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.dataset)); }},
    {"model", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.model)); }},
    {"optimizer", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.optimizer)); }},
    {"learning_rate", [](const SearchRow& r, DelimitedWriter& o) { o.real(r.learning_rate); }},
    {"epochs", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.epochs); }},
    {"batch_size", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.batch_size); }},
    {"depth", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.depth); }},
    {"hidden", [](const SearchRow& r, DelimitedWriter& o) { o.text(joined_sizes(r.hidden, r.depth)); }},
    {"channels", [](const SearchRow& r, DelimitedWriter& o) { o.text(joined_sizes(r.channels, kMaxConvBlocks)); }},
    {"repeat", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.repeat); }},
    {"params", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.params)); }},
    {"memory_plan", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.memory_plan)); }},
    {"recompute_every", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.recompute_every); }},
    {"axis", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.axis)); }},
    {"range_low", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.range_low); }},
    {"range_high", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.range_high); }},
    {"limit_bytes", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.limit); }},
    {"enforced_by", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.enforced_by)); }},
    {"strategy", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.strategy)); }},
    {"status", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.status)); }},
    {"fits", [](const SearchRow& r, DelimitedWriter& o) { measured(r.fits, o); }},
    {"fits_verified", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.fits_verified); }},
    {"does_not_fit", [](const SearchRow& r, DelimitedWriter& o) { measured(r.does_not_fit, o); }},
    {"fit_a_mib", [](const SearchRow& r, DelimitedWriter& o) { measured(r.fit_a_mib, o); }},
    {"fit_b_mib", [](const SearchRow& r, DelimitedWriter& o) { measured(r.fit_b_mib, o); }},
    {"predicted", [](const SearchRow& r, DelimitedWriter& o) { measured(r.predicted, o); }},
    {"trials", [](const SearchRow& r, DelimitedWriter& o) { o.integer(r.trials); }},
    {"seconds", [](const SearchRow& r, DelimitedWriter& o) { o.real(r.seconds); }},
    {"message", [](const SearchRow& r, DelimitedWriter& o) { o.text(get_fixed(r.message)); }},
    {"definition", [](const SearchRow& r, DelimitedWriter& o) { o.text(exported_definition(r)); }},
};

const Column<EpochRow> kEpochColumns[] = {
    {"trial_id", [](const EpochRow& r, DelimitedWriter& o) { o.text(get_fixed(r.trial_id)); }},
    {"attempt", [](const EpochRow& r, DelimitedWriter& o) { o.integer(r.attempt); }},
    {"epoch", [](const EpochRow& r, DelimitedWriter& o) { o.integer(r.epoch); }},
    {"train_loss", [](const EpochRow& r, DelimitedWriter& o) { o.real(r.train_loss); }},
    {"test_accuracy", [](const EpochRow& r, DelimitedWriter& o) { o.real(r.test_accuracy); }},
    {"seconds", [](const EpochRow& r, DelimitedWriter& o) { o.real(r.seconds); }},
    {"rss_bytes", [](const EpochRow& r, DelimitedWriter& o) { measured(r.rss, o); }},
    {"sys_used_bytes", [](const EpochRow& r, DelimitedWriter& o) { measured(r.sys_used, o); }},
};

const Column<SampleRow> kSampleColumns[] = {
    {"trial_id", [](const SampleRow& r, DelimitedWriter& o) { o.text(get_fixed(r.trial_id)); }},
    {"attempt", [](const SampleRow& r, DelimitedWriter& o) { o.integer(r.attempt); }},
    {"rank", [](const SampleRow& r, DelimitedWriter& o) { measured(r.rank, o); }},
    {"epoch", [](const SampleRow& r, DelimitedWriter& o) { o.integer(r.epoch); }},
    {"phase", [](const SampleRow& r, DelimitedWriter& o) { measured(r.phase, o); }},  // -1: unknown
    {"t_s", [](const SampleRow& r, DelimitedWriter& o) { o.real(r.t); }},
    {"rss_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.rss, o); }},
    {"anon_rss_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.anon_rss, o); }},
    {"pss_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.pss, o); }},
    {"sys_used_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.sys_used, o); }},
    {"sys_total_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.sys_total, o); }},
    {"sys_available_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.sys_available, o); }},
    {"sys_active_bytes", [](const SampleRow& r, DelimitedWriter& o) { measured(r.sys_active, o); }},
    {gpu::kSampleGpuUsed.export_name.data(), [](const SampleRow& r, DelimitedWriter& o) { measured(r.gpu_used, o); }},
    {gpu::kSampleGpuTreeUsed.export_name.data(),
     [](const SampleRow& r, DelimitedWriter& o) { measured(r.gpu_tree_used, o); }},
};

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

std::vector<std::string> trial_columns() {
  std::vector<std::string> names = names_of(kTrialIdentity);
  names.emplace_back(kMessageColumn);
  for (const std::string& name : names_of(kTrialFigures)) names.push_back(name);
  return names;
}

void write_trial(const TrialRow& row, std::string_view message, DelimitedWriter& out) {
  for (const Column<TrialRow>& column : kTrialIdentity) column.write(row, out);
  out.text(message);
  for (const Column<TrialRow>& column : kTrialFigures) column.write(row, out);
}

std::vector<std::string> search_columns() { return names_of(kSearchColumns); }

void write_search(const SearchRow& row, DelimitedWriter& out) {
  for (const Column<SearchRow>& column : kSearchColumns) column.write(row, out);
}

std::vector<std::string> epoch_columns() { return names_of(kEpochColumns); }

void write_epoch(const EpochRow& row, DelimitedWriter& out) {
  for (const Column<EpochRow>& column : kEpochColumns) column.write(row, out);
}

// Values as the program printed them, parsed: no unit memsweep could know.
const Column<MetricRow> kMetricColumns[] = {
    {"trial_id", [](const MetricRow& r, DelimitedWriter& o) { o.text(get_fixed(r.trial_id)); }},
    {"attempt", [](const MetricRow& r, DelimitedWriter& o) { o.integer(r.attempt); }},
    {"epoch", [](const MetricRow& r, DelimitedWriter& o) { o.integer(r.epoch); }},
    {"name", [](const MetricRow& r, DelimitedWriter& o) { o.text(get_fixed(r.name)); }},
    {"value", [](const MetricRow& r, DelimitedWriter& o) { o.real(r.value); }},
    {"seconds", [](const MetricRow& r, DelimitedWriter& o) { o.real(r.seconds); }},
    {"matches", [](const MetricRow& r, DelimitedWriter& o) { o.integer(r.matches); }},
};

std::vector<std::string> metric_columns() { return names_of(kMetricColumns); }

void write_metric(const MetricRow& row, DelimitedWriter& out) {
  for (const Column<MetricRow>& column : kMetricColumns) column.write(row, out);
}

std::vector<std::string> sample_columns(std::span<const std::string> counters) {
  std::vector<std::string> names = names_of(kSampleColumns);
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
  for (const Column<SampleRow>& column : kSampleColumns) column.write(row, out);
  for (const int slot : slots) {
    if (slot < 0)
      out.empty();
    else
      measured(row.counters[static_cast<std::size_t>(slot)], out);
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
