#include "cli/summary_command.hpp"

#include "cli/table.hpp"
#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/run_record.hpp"
#include "memsweep/sweep_split.hpp"

#include <fmt/format.h>

#include <string.h>  // sigabbrev_np
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

namespace memsweep::cli {
namespace {

// The paper's "MB" is psutil's bytes / 2^20; the per-process columns use the same unit.
constexpr double kBytesPerMiB = 1024.0 * 1024.0;

std::string mib(double bytes) { return bytes < 0 ? "-" : fmt::format("{:.1f}", bytes / kBytesPerMiB); }
std::string mib(std::int64_t bytes) { return mib(static_cast<double>(bytes)); }

std::string hidden_text(const TrialRow& row) {
  std::vector<int> widths;
  for (int layer = 0; layer < row.depth && layer < kMaxHiddenLayers; ++layer) widths.push_back(row.hidden[layer]);
  return widths.empty() ? "-" : fmt::format("{}", fmt::join(widths, "-"));
}

// A CNN's convolution channels, "16-32"; "-" for other models.
std::string channels_text(const TrialRow& row) {
  if (get_fixed(row.model) != model_name(ModelKind::cnn)) return "-";
  std::vector<int> channels;
  for (const std::int32_t count : row.channels)
    if (count > 0) channels.push_back(count);
  return channels.empty() ? "-" : fmt::format("{}", fmt::join(channels, "-"));
}

// A synthetic dataset's image shape, "1x28x28", from the row's definition
// (TrialSpec::canonical_text(), whose format the trial ids fix); empty for
// other datasets.
std::string synthetic_shape(const TrialRow& row) {
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

// The row that stands for each trial (stands_for_trial), and how many
// attempts the trial took, in the order the trials first appear.
struct StandingRows {
  std::vector<TrialRow> rows;
  std::map<std::string, int> attempts;
};
StandingRows one_row_per_trial(const std::vector<TrialRow>& rows) {
  std::map<std::string, std::size_t> chosen;
  std::vector<std::string> order;
  StandingRows standing;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string id = get_fixed(rows[i].trial_id);
    ++standing.attempts[id];
    auto found = chosen.find(id);
    if (found == chosen.end()) {
      chosen.emplace(id, i);
      order.push_back(id);
    } else if (stands_for_trial(rows[i], rows[found->second])) {
      found->second = i;
    }
  }
  for (const std::string& id : order) standing.rows.push_back(rows[chosen[id]]);
  return standing;
}

// The sweep's own order, from the sweep text kept in the file, with only
// the trials of the file's part when it holds one (`with_part`); the file's
// order when that text no longer parses (a newer memsweep wrote it).
std::optional<std::vector<std::string>> sweep_order(const FileHeader& header, bool with_part) {
  try {
    SweepSpec sweep = parse_sweep(header.sweep_text, header.sweep_file);
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

std::string dataset_table(const std::vector<ShownRow>& shown, bool several_files) {
  std::vector<const TrialRow*> rows;
  for (const ShownRow& s : shown) rows.push_back(s.row);
  const bool any_repeat = std::any_of(rows.begin(), rows.end(), [](const TrialRow* r) { return r->repeat > 0; });
  const bool any_cnn = std::any_of(rows.begin(), rows.end(),
                                   [](const TrialRow* r) { return get_fixed(r->model) == model_name(ModelKind::cnn); });
  // The dataset is the table's heading; a synthetic one's shape is shown
  // when it varies.
  std::set<std::string> shapes;
  for (const TrialRow* r : rows) shapes.insert(synthetic_shape(*r));
  const bool shape_varies = shapes.size() > 1;
  // Files before program trials have no trainer: memsweep's own trained them.
  const auto trainer_of = [](const TrialRow* r) {
    const std::string trainer = get_fixed(r->trainer);
    return trainer.empty() ? std::string(kBuiltinTrainer) : trainer;
  };
  const auto params_of = [](const TrialRow* r) {
    const std::string params = get_fixed(r->params);
    return params == "{}" ? std::string() : params;
  };
  const bool any_program =
      std::any_of(rows.begin(), rows.end(), [&](const TrialRow* r) { return trainer_of(r) != kBuiltinTrainer; });
  const bool any_params =
      std::any_of(rows.begin(), rows.end(), [&](const TrialRow* r) { return !params_of(r).empty(); });
  const bool any_retried = std::any_of(shown.begin(), shown.end(), [](const ShownRow& s) { return s.attempts > 1; });
  TableRow header{"trial"};
  if (several_files) header.push_back("file");
  header.push_back("id");
  if (any_repeat) header.push_back("repeat");
  if (any_program) header.push_back("trainer");
  header.push_back("model");
  header.push_back("optimizer");
  if (any_cnn) header.push_back("channels");
  if (shape_varies) header.push_back("shape");
  if (any_params) header.push_back("params");
  for (const char* name : {"lr", "epochs", "batch", "hidden", "used MB", "rss mean", "rss peak", "peak-base",
                           "predicted", "accuracy", "status"})
    header.push_back(name);
  if (any_retried) header.push_back("attempts");
  std::vector<TableRow> table{header};
  for (const ShownRow& s : shown) {
    const TrialRow* row = s.row;
    TableRow line{s.number};
    if (several_files) line.push_back(std::to_string(s.file));
    line.push_back(get_fixed(row->trial_id));
    if (any_repeat) line.push_back(std::to_string(row->repeat));
    if (any_program) line.push_back(trainer_of(row));
    line.push_back(get_fixed(row->model));
    line.push_back(get_fixed(row->optimizer));
    if (any_cnn) line.push_back(channels_text(*row));
    if (shape_varies) {
      const std::string shape = synthetic_shape(*row);
      line.push_back(shape.empty() ? "-" : shape);
    }
    if (any_params) line.push_back(params_of(row));
    line.push_back(fmt::format("{:.6g}", row->learning_rate));
    line.push_back(std::to_string(row->epochs));
    line.push_back(std::to_string(row->batch_size));
    line.push_back(hidden_text(*row));
    line.push_back(mib(row->sys_used_mean));
    line.push_back(mib(row->rss_mean));
    line.push_back(mib(row->rss_peak));
    line.push_back(mib(row->rss_footprint));
    line.push_back(mib(row->predicted_bytes));
    line.push_back(row->test_accuracy < 0 ? "-" : fmt::format("{:.4f}", row->test_accuracy));
    line.push_back(get_fixed(row->status));
    if (any_retried) line.push_back(std::to_string(s.attempts));
    table.push_back(std::move(line));
  }
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

}  // namespace

void add_summary_command(CLI::App& app, SummaryOptions& options) {
  CLI::App* summary = app.add_subcommand(
      "summary",
      "Tables of results files: memory per trial, per dataset (several files, e.g. an array job's parts: "
      "one table per dataset across them)");
  summary->add_option("results", options.results_files, "The results file(s) (HDF5) written by memsweep run")
      ->required();
}

std::string format_summary(const std::vector<SummaryInput>& files) {
  const bool several = files.size() > 1;
  // Parts of one sweep (the same text in every file) are shown in that
  // sweep's order across the files; other files one after the other.
  const bool one_sweep = std::all_of(files.begin(), files.end(), [&](const SummaryInput& file) {
    return file.header.sweep_text == files.front().header.sweep_text;
  });
  std::optional<std::map<std::string, std::size_t>> whole_position;
  if (!files.empty() && one_sweep)
    if (const auto order = sweep_order(files.front().header, false)) whole_position = positions(*order);

  std::string out;
  std::vector<StandingRows> rows_of_file;
  struct Keyed {
    std::size_t whole;  // position in the sweep all files share (0 when they do not)
    std::size_t file;
    std::size_t own;  // position in the file's sweep, or part
    ShownRow shown;
  };
  std::vector<Keyed> keyed;
  std::map<std::string, std::size_t> total_by_status;
  std::int64_t total_planned = 0;
  std::size_t total_without_record = 0;
  rows_of_file.reserve(files.size());
  for (std::size_t f = 0; f < files.size(); ++f) {
    const FileHeader& header = files[f].header;
    rows_of_file.push_back(one_row_per_trial(files[f].rows));
    const std::vector<TrialRow>& rows = rows_of_file.back().rows;
    const std::map<std::string, int>& attempts = rows_of_file.back().attempts;
    std::set<std::string> recorded;
    for (const TrialRow& row : rows) recorded.insert(get_fixed(row.trial_id));
    std::size_t without_record = 0;
    std::map<std::string, std::size_t> own_position;
    std::map<std::string, std::size_t> plan_position;
    if (const auto order = sweep_order(header, false)) plan_position = positions(*order);
    if (const auto order = sweep_order(header, true)) {
      own_position = positions(*order);
      for (const std::string& id : *order) without_record += recorded.count(id) == 0 ? 1 : 0;
    }
    const auto position_in = [](const std::map<std::string, std::size_t>& position, const std::string& id) {
      const auto found = position.find(id);
      return found == position.end() ? position.size() : found->second;
    };
    for (const TrialRow& row : rows) {
      const std::string id = get_fixed(row.trial_id);
      keyed.push_back({whole_position ? position_in(*whole_position, id) : 0,
                       f,
                       position_in(own_position, id),
                       {&row, f + 1, attempts.at(id), plan_number(row, plan_position)}});
    }

    std::map<std::string, std::size_t> by_status;
    for (const TrialRow& row : rows) ++by_status[get_fixed(row.status)];
    std::vector<std::string> counts;
    for (const auto& [status, count] : by_status) {
      counts.push_back(fmt::format("{} {}", count, status));
      total_by_status[status] += count;
    }
    if (without_record > 0) counts.push_back(fmt::format("{} not run yet", without_record));
    const std::size_t to_run_again = std::count_if(rows.begin(), rows.end(), [](const TrialRow& row) {
      const std::optional<TrialStatus> status = parse_status(get_fixed(row.status));
      return !status || *status == TrialStatus::interrupted;
    });
    total_planned += header.planned_trials;
    total_without_record += without_record;

    const std::string indent = several ? "  " : "";
    if (several) out += fmt::format("file {}: {}\n", f + 1, files[f].path);
    out += fmt::format("{}sweep \"{}\" ({}){}, started {} on {} rank{}; memsweep {}\n", indent, header.sweep_name,
                       header.sweep_file, header.part.empty() ? "" : ", part " + header.part, header.start_time,
                       header.ranks, header.ranks == 1 ? "" : "s", header.memsweep_version);
    out += fmt::format("{}trials: {} planned; {}\n", indent, header.planned_trials, fmt::join(counts, ", "));
    out += fmt::format("{}counters recorded: {}\n", indent, recorded_counters(header));
    // Files before schema 5 do not say how their run was started.
    if (without_record + to_run_again > 0 && !files[f].runs.empty() &&
        !get_fixed(files[f].runs.back().sweep_file).empty())
      out += fmt::format("{}continue with: {}\n", indent,
                         continue_command(files[f].runs.back(), files[f].path,
                                          CommandContext{::geteuid() == 0, std::thread::hardware_concurrency()}));
  }
  if (several) {
    std::vector<std::string> counts;
    for (const auto& [status, count] : total_by_status) counts.push_back(fmt::format("{} {}", count, status));
    if (total_without_record > 0) counts.push_back(fmt::format("{} not run yet", total_without_record));
    out += fmt::format("{} files: {} trials planned; {}\n", files.size(), total_planned, fmt::join(counts, ", "));
  }

  std::stable_sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.whole, a.file, a.own) < std::tie(b.whole, b.file, b.own);
  });
  std::vector<ShownRow> shown;
  for (const Keyed& entry : keyed) shown.push_back(entry.shown);

  std::vector<std::string> datasets;
  for (const ShownRow& s : shown)
    if (std::find(datasets.begin(), datasets.end(), get_fixed(s.row->dataset)) == datasets.end())
      datasets.push_back(get_fixed(s.row->dataset));
  for (const std::string& dataset : datasets) {
    std::vector<ShownRow> subset;
    for (const ShownRow& s : shown)
      if (get_fixed(s.row->dataset) == dataset) subset.push_back(s);
    out += fmt::format("\n{} ({} trial{})\n", dataset, subset.size(), subset.size() == 1 ? "" : "s");
    out += dataset_table(subset, several);
  }
  if (!shown.empty())
    out +=
        "\nused MB: the node's memory used, total - (free + buffers + cached), averaged over the trial's samples "
        "(the source paper's formulas 1 and 2); rss: the resident memory of the trial's process (files of schema 1 and "
        "2: of its rank); peak-base: the trial's own footprint; predicted: memsweep's estimate of it. MB = 2^20 "
        "bytes.\n";

  // Trials not ok, with a column for how their process ended when one of
  // them was killed (or ended without a result).
  std::vector<const ShownRow*> not_ok;
  for (const ShownRow& s : shown)
    if (get_fixed(s.row->status) != status_name(TrialStatus::ok)) not_ok.push_back(&s);
  const bool any_process_end =
      std::any_of(not_ok.begin(), not_ok.end(), [](const ShownRow* s) { return !process_end_text(*s->row).empty(); });
  TableRow failure_header{"id", "attempt", "status", "rank", "host"};
  if (any_process_end) failure_header.push_back("process end");
  failure_header.push_back("message");
  if (several) failure_header.insert(failure_header.begin(), "file");
  failure_header.insert(failure_header.begin(), "trial");
  std::vector<TableRow> failures{failure_header};
  for (const ShownRow* s : not_ok) {
    const TrialRow& row = *s->row;
    TableRow line{get_fixed(row.trial_id), std::to_string(row.attempt), get_fixed(row.status), std::to_string(row.rank),
                  get_fixed(row.host)};
    if (any_process_end) {
      const std::string ended = process_end_text(row);
      line.push_back(ended.empty() ? "-" : ended);
    }
    line.push_back(get_fixed(row.message));
    if (several) line.insert(line.begin(), std::to_string(s->file));
    line.insert(line.begin(), s->number);
    failures.push_back(std::move(line));
  }
  if (failures.size() > 1) out += fmt::format("\nnot ok ({})\n", failures.size() - 1) + render_table(failures);
  return out;
}

int run_summary_command(const SummaryOptions& options) {
  std::vector<SummaryInput> files;
  for (const std::string& path : options.results_files) {
    ResultReader reader(path);
    files.push_back({path, reader.header(), reader.trials(), reader.runs()});
  }
  fmt::print("{}", format_summary(files));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
