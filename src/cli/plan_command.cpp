#include "cli/plan_command.hpp"

#include "memsweep/byte_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

namespace memsweep::cli {
namespace {

using Row = std::vector<std::string>;

std::string hidden_text(const std::vector<int>& widths) {
  return widths.empty() ? "-" : fmt::format("{}", fmt::join(widths, "-"));
}

std::string dataset_text(const DatasetSpec& dataset) {
  if (dataset.kind != DatasetKind::synthetic) return std::string(dataset_name(dataset.kind));
  const ImageShape& shape = dataset.synthetic.shape;
  return fmt::format("synthetic:{}x{}x{}", shape.channels, shape.height, shape.width);
}

std::string counted(std::size_t count, std::string_view noun) {
  return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

std::string render(const std::vector<Row>& rows) {
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  std::string out;
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) line += fmt::format("{:<{}}  ", row[c], widths[c]);
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

}  // namespace

void add_plan_command(CLI::App& app, PlanOptions& options) {
  CLI::App* plan = app.add_subcommand("plan", "Print the trials a sweep file expands to (no MPI, nothing is run)");
  plan->add_option("sweep", options.sweep_file, "The sweep file (TOML)")->required();
}

std::string format_plan(const SweepSpec& sweep) {
  const bool any_cnn = std::any_of(sweep.trials.begin(), sweep.trials.end(),
                                   [](const TrialSpec& t) { return t.model == ModelKind::cnn; });
  const bool any_budget = std::any_of(sweep.trials.begin(), sweep.trials.end(),
                                      [](const TrialSpec& t) { return t.mem_budget_bytes.has_value(); });
  Row header{"id", "repeat", "dataset", "model", "optimizer", "lr", "epochs", "batch", "hidden"};
  if (any_cnn) header.push_back("channels");
  if (any_budget) header.push_back("budget");
  std::vector<Row> rows{header};
  for (const TrialSpec& t : sweep.trials) {
    Row row{t.id,
            std::to_string(t.repeat),
            dataset_text(t.dataset),
            std::string(model_name(t.model)),
            std::string(optimizer_name(t.optimizer.kind)),
            fmt::format("{:.6g}", t.learning_rate),
            std::to_string(t.epochs),
            std::to_string(t.batch_size),
            hidden_text(t.hidden)};
    if (any_cnn) row.push_back(t.model == ModelKind::cnn ? hidden_text(t.channels) : "-");
    if (any_budget) row.push_back(t.mem_budget_bytes ? format_byte_size(*t.mem_budget_bytes) : "-");
    rows.push_back(std::move(row));
  }
  const std::size_t distinct = sweep.trials.size() / static_cast<std::size_t>(sweep.repeats);
  return fmt::format("sweep \"{}\" ({}): {} ({} distinct x {}), seed {}, sampling every {} ms\n", sweep.name,
                     sweep.source_name, counted(sweep.trials.size(), "trial"), distinct,
                     counted(static_cast<std::size_t>(sweep.repeats), "repeat"), sweep.seed,
                     sweep.sampler.interval_ms) +
         render(rows) + counted(sweep.trials.size(), "trial") + "\n";
}

int run_plan_command(const PlanOptions& options) {
  const SweepSpec sweep = load_sweep_file(options.sweep_file);
  for (const std::string& note : sweep.notes) fmt::print(stderr, "memsweep plan: note: {}\n", note);
  fmt::print("{}", format_plan(sweep));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
