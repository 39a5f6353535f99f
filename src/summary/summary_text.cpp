// The summary of results files as text (summary_text.hpp): the header lines
// of each file, one table per dataset, the hosts, GPU memory, the searches'
// capacity (src/search/capacity_table.cpp), then the trials that are not ok.

#include "memsweep/summary_text.hpp"

#include "common/text_table.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/run_record.hpp"
#include "memsweep/sweep_split.hpp"
#include "results/row_text.hpp"
#include "search/capacity_table.hpp"
#include "summary/summary_hosts.hpp"

#include <fmt/format.h>

#include <string.h>  // sigabbrev_np
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

namespace memsweep {
namespace {

using results::channels_text;
using results::count_text;
using results::hidden_text;
using results::learning_rate_text;
using results::memory_plan_text;
using results::mib;
using results::params_of;
using results::trainer_of;
using search::capacity_section;
using summary::detail::hosts_section;

// A synthetic dataset's image shape, "1x28x28", from the row's definition
// (TrialSpec::canonical_text(), whose format the trial ids fix); empty for
// other datasets.
std::string synthetic_shape(const TrialRow& row) {
  if (get_fixed(row.dataset) != dataset_name(DatasetKind::synthetic)) return {};  // a program's blank one too
  const std::string definition = get_fixed(row.definition);
  constexpr std::string_view kField = ";synthetic=";
  const std::size_t start = definition.find(kField);
  if (start == std::string::npos) return {};
  const std::size_t from = start + kField.size();
  return definition.substr(from, definition.find('/', from) - from);
}

// "SIGKILL"; "signal 99" for a number the C library has no name for.
std::string signal_text(int signal) {
  const char* name = ::sigabbrev_np(signal);
  return name != nullptr ? fmt::format("SIG{}", name) : fmt::format("signal {}", signal);
}

// How the trial's process ended, where that says more than the status:
// "killed: oom, SIGKILL", "killed: timeout, SIGKILL", "no_result"; empty for
// a process that exited, none started, or a file before schema 3.
std::string process_end_text(const TrialRow& row) {
  const std::string cause = get_fixed(row.end_cause);
  if (row.end_signal > 0)
    return fmt::format("killed: {}{}", cause.empty() ? "" : cause + ", ", signal_text(row.end_signal));
  return cause == end_cause::kExited ? std::string() : cause;
}

// The sweep's own order, from the sweep text kept in the file, with only
// the trials of the file's part when it holds one (`with_part`); the file's
// order when that text no longer parses (a newer memsweep wrote it), or
// when the sweep is too large to list (its rows come in its order anyway).
std::optional<std::vector<std::string>> sweep_order(const FileHeader& header, bool with_part) {
  try {
    SweepSpec sweep = parse_sweep(header.sweep_text, header.sweep_file);
    if (sweep.trials.size() > kWalkedTrials) return std::nullopt;
    if (with_part && !header.part.empty()) sweep = select_named_part(sweep, header.part);
    std::vector<std::string> ids;
    for (const TrialSpec& trial : sweep.trials) ids.push_back(trial.id);
    return ids;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::map<std::string, std::size_t> positions(const std::vector<std::string>& ids) {
  std::map<std::string, std::size_t> position;
  for (std::size_t i = 0; i < ids.size(); ++i) position.emplace(ids[i], i);
  return position;
}

// A trial's row and the file it comes from (1, 2, ... as listed).
struct ShownRow {
  const TrialRow* row;
  std::size_t file;
  int attempts = 1;          // rows the trial has in its file
  std::string number = "-";  // its number in `memsweep plan`'s list of the whole sweep
};

// The trial's number as `memsweep plan` lists the whole sweep, from 1: the
// row's plan_index (schema 5), else its place in the sweep text the file
// keeps (`plan_position`, empty when that text does not parse).
std::string plan_number(const TrialRow& row, const std::map<std::string, std::size_t>& plan_position) {
  if (row.plan_index >= 0) return std::to_string(row.plan_index + 1);
  const auto found = plan_position.find(get_fixed(row.trial_id));
  return found == plan_position.end() ? "-" : std::to_string(found->second + 1);
}

// Which of a dataset table's optional columns it has: those its rows fill.
struct DatasetColumns {
  bool file = false;  // several files
  bool repeat = false;
  bool trainer = false;  // a program trained some trial
  bool channels = false;
  bool shape = false;  // a synthetic dataset's shape varies
  bool params = false;
  bool plan = false;      // some trial trained with another memory plan than keep
  bool attempts = false;  // some trial was retried
};

DatasetColumns dataset_columns(const std::vector<ShownRow>& shown, bool several_files) {
  const auto any = [&](auto&& has) {
    return std::any_of(shown.begin(), shown.end(), [&](const ShownRow& s) { return has(*s.row); });
  };
  // The dataset is the table's heading; a synthetic one's shape is shown
  // when it varies.
  std::set<std::string> shapes;
  for (const ShownRow& s : shown) shapes.insert(synthetic_shape(*s.row));
  DatasetColumns columns;
  columns.file = several_files;
  columns.repeat = any([](const TrialRow& r) { return r.repeat > 0; });
  columns.trainer = any([](const TrialRow& r) { return trainer_of(r) != kBuiltinTrainer; });
  columns.channels = any([](const TrialRow& r) { return get_fixed(r.model) == model_name(ModelKind::cnn); });
  columns.shape = shapes.size() > 1;
  columns.params = any([](const TrialRow& r) { return !params_of(r).empty(); });
  // Files before memory plans, and sweeps that never name one, read keep:
  // their tables stay as they were.
  columns.plan = any([](const TrialRow& r) {
    const std::string plan = get_fixed(r.memory_plan);
    return !plan.empty() && plan != memory_plan_name(MemoryPlan::keep);
  });
  columns.attempts = std::any_of(shown.begin(), shown.end(), [](const ShownRow& s) { return s.attempts > 1; });
  return columns;
}

TableRow dataset_header(const DatasetColumns& columns) {
  TableRow header{"trial"};
  if (columns.file) header.push_back("file");
  header.push_back("id");
  if (columns.repeat) header.push_back("repeat");
  if (columns.trainer) header.push_back("trainer");
  header.push_back("model");
  header.push_back("optimizer");
  if (columns.plan) header.push_back("plan");
  if (columns.channels) header.push_back("channels");
  if (columns.shape) header.push_back("shape");
  if (columns.params) header.push_back("params");
  // The trial's own figures first; the node's used memory (every process on
  // it, noise on a shared node) after them.
  for (const char* name : {"lr", "epochs", "batch", "hidden", "rss peak", "rss mean", "peak-base", "predicted",
                           "used MB", "accuracy", "status"})
    header.push_back(name);
  if (columns.attempts) header.push_back("attempts");
  return header;
}

TableRow dataset_line(const ShownRow& s, const DatasetColumns& columns) {
  const TrialRow& row = *s.row;
  TableRow line{s.number};
  if (columns.file) line.push_back(std::to_string(s.file));
  line.push_back(get_fixed(row.trial_id));
  if (columns.repeat) line.push_back(std::to_string(row.repeat));
  if (columns.trainer) line.push_back(trainer_of(row));
  line.push_back(get_fixed(row.model));
  line.push_back(get_fixed(row.optimizer));
  if (columns.plan) line.push_back(memory_plan_text(row));
  if (columns.channels) line.push_back(channels_text(row));
  if (columns.shape) {
    const std::string shape = synthetic_shape(row);
    line.push_back(shape.empty() ? "-" : shape);
  }
  if (columns.params) line.push_back(params_of(row));
  for (std::string cell :
       {learning_rate_text(row), count_text(row.epochs), count_text(row.batch_size), hidden_text(row),
        mib(row.rss_peak), mib(row.rss_mean), mib(row.rss_footprint), mib(row.predicted_bytes), mib(row.sys_used_mean),
        row.test_accuracy < 0 ? "-" : fmt::format("{:.4f}", row.test_accuracy), get_fixed(row.status)})
    line.push_back(std::move(cell));
  if (columns.attempts) line.push_back(std::to_string(s.attempts));
  return line;
}

std::string dataset_table(const std::vector<ShownRow>& shown, bool several_files) {
  const DatasetColumns columns = dataset_columns(shown, several_files);
  std::vector<TableRow> table{dataset_header(columns)};
  for (const ShownRow& s : shown) table.push_back(dataset_line(s, columns));
  return render_table(table);
}

// "perf::PAGE-FAULTS (kernel), PAPI_L1_DCM (papi)": each column with the
// source that served it, where the file says (files before there were two
// sources do not).
std::string recorded_counters(const FileHeader& header) {
  if (header.counter_columns.empty()) return "none";
  std::vector<std::string> columns;
  for (std::size_t i = 0; i < header.counter_columns.size(); ++i)
    columns.push_back(i < header.counter_sources.size()
                          ? fmt::format("{} ({})", header.counter_columns[i], header.counter_sources[i])
                          : header.counter_columns[i]);
  return fmt::format("{}", fmt::join(columns, ", "));
}

using Positions = std::map<std::string, std::size_t>;

std::size_t position_in(const Positions& position, const std::string& id) {
  const auto found = position.find(id);
  return found == position.end() ? position.size() : found->second;
}

// Parts of one sweep (the same text in every file) are shown in that
// sweep's order across the files: the trials' positions in it; nullopt for
// other files, shown one after the other.
std::optional<Positions> shared_sweep_positions(const std::vector<SummaryInput>& files) {
  const bool one_sweep = std::all_of(files.begin(), files.end(), [&](const SummaryInput& file) {
    return file.header.sweep_text == files.front().header.sweep_text;
  });
  if (files.empty() || !one_sweep) return std::nullopt;
  if (const auto order = sweep_order(files.front().header, false)) return positions(*order);
  return std::nullopt;
}

// A shown row with what orders the tables.
struct Keyed {
  std::size_t whole;  // position in the sweep all files share (0 when they do not)
  std::size_t file;
  std::size_t own;  // position in the file's sweep, or part
  ShownRow shown;
};

// One file's rows that stand for its trials, in the order they first come.
struct FileTrials {
  std::vector<const TrialRow*> rows;
  std::size_t without_record = 0;  // trials of the file's sweep (or part) with no row
  // A search sweep's: its searches (configurations x limits) and those
  // without their /searches row. Its configurations never get rows of their
  // own (its trials are probes): they are not "not run yet".
  std::optional<std::size_t> searches;
  std::size_t searches_open = 0;
};

// Searches a file's sweep text plans (its part's); nullopt for a sweep
// without [search], or a text that no longer parses.
std::optional<std::size_t> planned_searches(const FileHeader& header) {
  try {
    SweepSpec sweep = parse_sweep(header.sweep_text, header.sweep_file);
    if (!sweep.search || sweep.trials.size() > kMaxSearches) return std::nullopt;
    if (!header.part.empty()) sweep = select_named_part(sweep, header.part);
    return sweep.trials.size() * sweep.search->limits.size();
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// The rows of files[f] that stand for its trials, each also added to
// `keyed` for the tables.
FileTrials file_trials(const std::vector<SummaryInput>& files, std::size_t f, const std::optional<Positions>& whole,
                       std::vector<Keyed>& keyed) {
  const SummaryInput& file = files[f];
  const StandingRows standing = standing_rows(file.rows);
  FileTrials trials;
  Positions own_position;
  Positions plan_position;
  if (const auto order = sweep_order(file.header, false)) plan_position = positions(*order);
  if (const auto order = sweep_order(file.header, true)) {
    own_position = positions(*order);
    for (const std::string& id : *order) trials.without_record += standing.find(id) == nullptr ? 1 : 0;
  } else if (file.header.planned_trials > static_cast<std::int64_t>(kWalkedTrials)) {
    // A large sweep: its planned count, less the trials with rows.
    const auto planned = static_cast<std::size_t>(file.header.planned_trials);
    trials.without_record = planned - std::min(planned, standing.order().size());
  }
  if ((trials.searches = planned_searches(file.header))) {
    std::set<std::int32_t> ended;
    for (const SearchRow& row : file.searches) ended.insert(row.search);
    trials.without_record = 0;
    trials.searches_open = *trials.searches - std::min(*trials.searches, ended.size());
  }
  for (const std::string& id : standing.order()) {
    const StandingRows::Trial& trial = *standing.find(id);
    const TrialRow& row = file.rows[trial.row];
    trials.rows.push_back(&row);
    keyed.push_back({whole ? position_in(*whole, id) : 0, f, position_in(own_position, id),
                     ShownRow{&row, f + 1, trial.attempts, plan_number(row, plan_position)}});
  }
  return trials;
}

// Counts across the files.
struct Totals {
  std::map<std::string, std::size_t> by_status;
  std::int64_t planned = 0;
  std::size_t without_record = 0;
};

// "continue with: memsweep run ..." when some trial is still to run.
std::string continue_line(const SummaryInput& file, const std::string& indent, const FileTrials& trials) {
  const std::size_t to_run_again = std::count_if(trials.rows.begin(), trials.rows.end(), [](const TrialRow* row) {
    const std::optional<TrialStatus> status = parse_status(get_fixed(row->status));
    return !status || *status == TrialStatus::interrupted;
  });
  // Files before schema 5 do not say how their run was started.
  if (trials.without_record + trials.searches_open + to_run_again == 0 || file.runs.empty() ||
      get_fixed(file.runs.back().sweep_file).empty())
    return {};
  return fmt::format("{}continue with: {}\n", indent,
                     continue_command(file.runs.back(), file.path,
                                      CommandContext{::geteuid() == 0, std::thread::hardware_concurrency()}));
}

// The file's lines above the tables (its number, from 1, shown when there
// are `several`); its counts are added to `totals`.
std::string file_lines(const SummaryInput& file, std::size_t number, bool several, const FileTrials& trials,
                       Totals& totals) {
  const FileHeader& header = file.header;
  std::map<std::string, std::size_t> by_status;
  for (const TrialRow* row : trials.rows) ++by_status[get_fixed(row->status)];
  std::vector<std::string> counts;
  for (const auto& [status, count] : by_status) {
    counts.push_back(fmt::format("{} {}", count, status));
    totals.by_status[status] += count;
  }
  if (trials.without_record > 0) counts.push_back(fmt::format("{} not run yet", trials.without_record));
  totals.planned += header.planned_trials;
  totals.without_record += trials.without_record;

  const std::string indent = several ? "  " : "";
  std::string out;
  if (several) out += fmt::format("file {}: {}\n", number, file.path);
  out += fmt::format("{}sweep \"{}\" ({}){}, started {} on {} rank{}; memsweep {}\n", indent, header.sweep_name,
                     header.sweep_file, header.part.empty() ? "" : ", part " + header.part, header.start_time,
                     header.ranks, header.ranks == 1 ? "" : "s", header.memsweep_version);
  if (trials.searches)
    out += fmt::format("{}searches: {} planned, {} ended; their probes: {}\n", indent, *trials.searches,
                       *trials.searches - trials.searches_open,
                       counts.empty() ? "none yet" : fmt::format("{}", fmt::join(counts, ", ")));
  else
    out += fmt::format("{}trials: {} planned; {}\n", indent, header.planned_trials, fmt::join(counts, ", "));
  out += fmt::format("{}counters recorded: {}\n", indent, recorded_counters(header));
  return out + continue_line(file, indent, trials);
}

std::string totals_line(std::size_t files, const Totals& totals) {
  std::vector<std::string> counts;
  for (const auto& [status, count] : totals.by_status) counts.push_back(fmt::format("{} {}", count, status));
  if (totals.without_record > 0) counts.push_back(fmt::format("{} not run yet", totals.without_record));
  return fmt::format("{} files: {} trials planned; {}\n", files, totals.planned, fmt::join(counts, ", "));
}

std::vector<ShownRow> in_table_order(std::vector<Keyed> keyed) {
  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.whole, a.file, a.own) < std::tie(b.whole, b.file, b.own);
  });
  std::vector<ShownRow> shown;
  for (const Keyed& entry : keyed) shown.push_back(entry.shown);
  return shown;
}

// What the memory columns mean, in the words of the trials shown: RSS is
// the trial process's for memsweep's trainer, the whole process tree's
// (summed) for a user's program (docs/runner.md, "What is summed").
std::string memory_columns_note(const std::vector<ShownRow>& shown) {
  const auto program = [](const ShownRow& s) { return trainer_of(*s.row) != kBuiltinTrainer; };
  const bool programs = std::any_of(shown.begin(), shown.end(), program);
  const bool builtin = !std::all_of(shown.begin(), shown.end(), program);
  std::string whose;
  if (builtin && programs)
    whose = "of the trial's process for memsweep's trainer, summed over the program's whole process tree for a program";
  else if (programs)
    whose = "summed over the program's whole process tree";
  else
    whose = "of the trial's process";
  return fmt::format(
      "\nrss peak, rss mean: the trial's resident memory, {} (files of schema 1 and 2: of its rank); peak-base: the "
      "trial's own footprint{}; predicted: memsweep's estimate of it. used MB: the node's memory used by every "
      "process on it, total - (free + buffers + cached), averaged over the trial's samples (the source paper's "
      "formulas 1 and 2). MB = 2^20 bytes.\n",
      whose, programs ? " (a program has no ready point: its whole peak)" : "");
}

// One table per dataset, in the order the datasets first come, then what
// the memory columns mean.
std::string dataset_tables(const std::vector<ShownRow>& shown, bool several) {
  std::vector<std::string> datasets;
  for (const ShownRow& s : shown)
    if (std::find(datasets.begin(), datasets.end(), get_fixed(s.row->dataset)) == datasets.end())
      datasets.push_back(get_fixed(s.row->dataset));
  std::string out;
  for (const std::string& dataset : datasets) {
    std::vector<ShownRow> subset;
    for (const ShownRow& s : shown)
      if (get_fixed(s.row->dataset) == dataset) subset.push_back(s);
    out += fmt::format("\n{} ({} trial{})\n", dataset.empty() ? "no dataset set (programs)" : dataset, subset.size(),
                       subset.size() == 1 ? "" : "s");
    out += dataset_table(subset, several);
  }
  if (!shown.empty()) out += memory_columns_note(shown);
  return out;
}

// GPU memory (schema 7), only where some trial has a figure: NVML's peak
// and where it came from, and the program's own PyTorch peaks.
bool has_gpu_memory(const TrialRow& row) {
  return row.gpu_peak >= 0 || row.torch_allocated_peak >= 0 || row.torch_reserved_peak >= 0;
}

std::string gpu_section(const std::vector<ShownRow>& shown) {
  if (std::none_of(shown.begin(), shown.end(), [](const ShownRow& s) { return has_gpu_memory(*s.row); })) return {};
  std::vector<TableRow> table{{"trial", "id", "gpu peak", "source", "devices", "torch reserved", "torch allocated"}};
  for (const ShownRow& s : shown) {
    const TrialRow& row = *s.row;
    if (!has_gpu_memory(row)) continue;
    const std::string source = get_fixed(row.gpu_peak_source);
    const std::string devices = get_fixed(row.gpu_devices);
    table.push_back({s.number, get_fixed(row.trial_id), mib(row.gpu_peak), source.empty() ? "-" : source,
                     devices.empty() ? "-" : devices, mib(row.torch_reserved_peak), mib(row.torch_allocated_peak)});
  }
  return "\nGPU memory (MiB)\n" + render_table(table) +
         "gpu peak: NVML's, the largest GPU memory of the trial's process tree (source tree), or the devices' rise "
         "above the trial's start where the driver gives no per-process figures (device_delta); torch: the "
         "program's own max_memory_reserved() and max_memory_allocated().\n";
}

TableRow failure_header(bool several, bool any_process_end) {
  TableRow header{"id", "attempt", "status", "rank", "host"};
  if (any_process_end) header.push_back("process end");
  header.push_back("message");
  if (several) header.insert(header.begin(), "file");
  header.insert(header.begin(), "trial");
  return header;
}

TableRow failure_line(const ShownRow& s, bool several, bool any_process_end) {
  const TrialRow& row = *s.row;
  TableRow line{get_fixed(row.trial_id), std::to_string(row.attempt), get_fixed(row.status), std::to_string(row.rank),
                get_fixed(row.host)};
  if (any_process_end) {
    const std::string ended = process_end_text(row);
    line.push_back(ended.empty() ? "-" : ended);
  }
  line.push_back(get_fixed(row.message));
  if (several) line.insert(line.begin(), std::to_string(s.file));
  line.insert(line.begin(), s.number);
  return line;
}

// Trials not ok, with a column for how their process ended when one of
// them was killed (or ended without a result); empty when all are ok.
std::string failures_table(const std::vector<ShownRow>& shown, bool several) {
  std::vector<const ShownRow*> not_ok;
  for (const ShownRow& s : shown)
    if (get_fixed(s.row->status) != status_name(TrialStatus::ok)) not_ok.push_back(&s);
  if (not_ok.empty()) return {};
  const bool any_process_end =
      std::any_of(not_ok.begin(), not_ok.end(), [](const ShownRow* s) { return !process_end_text(*s->row).empty(); });
  std::vector<TableRow> failures{failure_header(several, any_process_end)};
  for (const ShownRow* s : not_ok) failures.push_back(failure_line(*s, several, any_process_end));
  return fmt::format("\nnot ok ({})\n", failures.size() - 1) + render_table(failures);
}

}  // namespace

std::string format_summary(const std::vector<SummaryInput>& files) {
  const bool several = files.size() > 1;
  const std::optional<Positions> whole = shared_sweep_positions(files);
  std::string out;
  std::vector<Keyed> keyed;
  Totals totals;
  for (std::size_t f = 0; f < files.size(); ++f)
    out += file_lines(files[f], f + 1, several, file_trials(files, f, whole, keyed), totals);
  if (several) out += totals_line(files.size(), totals);
  const std::vector<ShownRow> shown = in_table_order(std::move(keyed));
  std::vector<const TrialRow*> rows;
  for (const ShownRow& s : shown) rows.push_back(s.row);
  return out + dataset_tables(shown, several) + hosts_section(rows) + gpu_section(shown) + capacity_section(files) +
         failures_table(shown, several);
}

}  // namespace memsweep
