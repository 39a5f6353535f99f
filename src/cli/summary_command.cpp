#include "cli/summary_command.hpp"

#include "cli/table.hpp"
#include "memsweep/config.hpp"
#include "memsweep/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
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

// The row that stands for a trial: its final one, else its latest attempt.
std::vector<TrialRow> one_row_per_trial(const std::vector<TrialRow>& rows) {
  std::map<std::string, std::size_t> chosen;
  std::vector<std::string> order;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string id = get_fixed(rows[i].trial_id);
    auto found = chosen.find(id);
    if (found == chosen.end()) {
      chosen.emplace(id, i);
      order.push_back(id);
      continue;
    }
    const TrialRow& current = rows[found->second];
    const auto status = parse_status(get_fixed(current.status));
    const bool current_final = status && is_final(*status);
    if (!current_final && rows[i].attempt >= current.attempt) found->second = i;
  }
  std::vector<TrialRow> result;
  for (const std::string& id : order) result.push_back(rows[chosen[id]]);
  return result;
}

// The sweep's own order, from the sweep text kept in the file; the file's
// order when that text no longer parses (a newer memsweep wrote it).
std::optional<std::vector<std::string>> sweep_order(const FileHeader& header) {
  try {
    std::vector<std::string> ids;
    for (const TrialSpec& trial : parse_sweep(header.sweep_text, header.sweep_file).trials) ids.push_back(trial.id);
    return ids;
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::string dataset_table(const std::vector<const TrialRow*>& rows) {
  const bool any_repeat = std::any_of(rows.begin(), rows.end(), [](const TrialRow* r) { return r->repeat > 0; });
  const bool any_other_model =
      std::any_of(rows.begin(), rows.end(), [](const TrialRow* r) { return get_fixed(r->model) != "mlp"; });
  TableRow header{"trial", "id"};
  if (any_repeat) header.push_back("repeat");
  if (any_other_model) header.push_back("model");
  for (const char* name : {"lr", "epochs", "batch", "hidden", "used MB", "rss mean", "rss peak", "peak-base",
                           "predicted", "accuracy", "status"})
    header.push_back(name);
  std::vector<TableRow> table{header};
  int number = 0;
  for (const TrialRow* row : rows) {
    TableRow line{std::to_string(++number), get_fixed(row->trial_id)};
    if (any_repeat) line.push_back(std::to_string(row->repeat));
    if (any_other_model) line.push_back(get_fixed(row->model));
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
    table.push_back(std::move(line));
  }
  return render_table(table);
}

}  // namespace

void add_summary_command(CLI::App& app, SummaryOptions& options) {
  CLI::App* summary = app.add_subcommand("summary", "Tables of a results file: memory per trial, per dataset");
  summary->add_option("results", options.results_file, "The results file (HDF5) written by memsweep run")->required();
}

std::string format_summary(const FileHeader& header, const std::vector<TrialRow>& all_rows) {
  std::vector<TrialRow> rows = one_row_per_trial(all_rows);
  std::set<std::string> recorded;
  for (const TrialRow& row : rows) recorded.insert(get_fixed(row.trial_id));
  std::size_t without_record = 0;
  if (const auto order = sweep_order(header)) {
    std::map<std::string, std::size_t> position;
    for (std::size_t i = 0; i < order->size(); ++i) position.emplace((*order)[i], i);
    std::stable_sort(rows.begin(), rows.end(), [&](const TrialRow& a, const TrialRow& b) {
      const auto pa = position.find(get_fixed(a.trial_id));
      const auto pb = position.find(get_fixed(b.trial_id));
      const std::size_t ia = pa == position.end() ? order->size() : pa->second;
      const std::size_t ib = pb == position.end() ? order->size() : pb->second;
      return ia < ib;
    });
    for (const std::string& id : *order) without_record += recorded.count(id) == 0 ? 1 : 0;
  }

  std::map<std::string, std::size_t> by_status;
  for (const TrialRow& row : rows) ++by_status[get_fixed(row.status)];
  std::vector<std::string> counts;
  for (const auto& [status, count] : by_status) counts.push_back(fmt::format("{} {}", count, status));
  if (without_record > 0) counts.push_back(fmt::format("{} not run yet", without_record));

  std::string out =
      fmt::format("sweep \"{}\" ({}), started {} on {} rank{}; memsweep {}\n", header.sweep_name, header.sweep_file,
                  header.start_time, header.ranks, header.ranks == 1 ? "" : "s", header.memsweep_version);
  out += fmt::format("trials: {} planned; {}\n", header.planned_trials, fmt::join(counts, ", "));
  out +=
      fmt::format("counters recorded: {}\n",
                  header.counter_columns.empty() ? "none" : fmt::format("{}", fmt::join(header.counter_columns, ", ")));

  std::vector<std::string> datasets;
  for (const TrialRow& row : rows)
    if (std::find(datasets.begin(), datasets.end(), get_fixed(row.dataset)) == datasets.end())
      datasets.push_back(get_fixed(row.dataset));
  for (const std::string& dataset : datasets) {
    std::vector<const TrialRow*> subset;
    for (const TrialRow& row : rows)
      if (get_fixed(row.dataset) == dataset) subset.push_back(&row);
    out += fmt::format("\n{} ({} trial{})\n", dataset, subset.size(), subset.size() == 1 ? "" : "s");
    out += dataset_table(subset);
  }
  if (!rows.empty())
    out +=
        "\nused MB: the node's memory used, total - (free + buffers + cached), averaged over the trial's samples "
        "(the source paper's formulas 1 and 2); rss: the rank's own resident memory; peak-base: the trial's own "
        "footprint; predicted: memsweep's estimate of it. MB = 2^20 bytes.\n";

  std::vector<TableRow> failures{{"id", "attempt", "status", "rank", "host", "message"}};
  for (const TrialRow& row : rows)
    if (get_fixed(row.status) != status_name(TrialStatus::ok))
      failures.push_back({get_fixed(row.trial_id), std::to_string(row.attempt), get_fixed(row.status),
                          std::to_string(row.rank), get_fixed(row.host), get_fixed(row.message)});
  if (failures.size() > 1) out += fmt::format("\nnot ok ({})\n", failures.size() - 1) + render_table(failures);
  return out;
}

int run_summary_command(const SummaryOptions& options) {
  ResultReader reader(options.results_file);
  fmt::print("{}", format_summary(reader.header(), reader.trials()));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
