#include "cli/plan_command.hpp"

#include "cli/table.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

namespace memsweep::cli {
namespace {

using Row = TableRow;

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

// The full estimate's total (docs/estimate.md) for the published dataset
// sizes: what the trial itself should allocate, the dataset excluded.
std::string predicted_text(EstimateCache& cache, const TrialSpec& trial) {
  try {
    return format_byte_size(cache.estimate(trial, canonical_example_counts(trial.dataset)).total());
  } catch (const std::exception& error) {
    // A shape oneDNN cannot plan fails when the trial runs; plan still lists it.
    fmt::print(stderr, "memsweep plan: note: trial {}: no prediction: {}\n", trial.id, error.what());
    return "?";
  }
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
  header.push_back("predicted");
  EstimateCache estimates;
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
    row.push_back(predicted_text(estimates, t));
    rows.push_back(std::move(row));
  }
  const std::size_t distinct = sweep.trials.size() / static_cast<std::size_t>(sweep.repeats);
  return fmt::format("sweep \"{}\" ({}): {} ({} distinct x {}), seed {}, sampling every {} ms\n", sweep.name,
                     sweep.source_name, counted(sweep.trials.size(), "trial"), distinct,
                     counted(static_cast<std::size_t>(sweep.repeats), "repeat"), sweep.seed,
                     sweep.sampler.interval_ms) +
         render_table(rows) + counted(sweep.trials.size(), "trial") +
         "\npredicted: each trial's own memory, dataset excluded, for the published dataset sizes "
         "(memsweep estimate shows the parts)\n";
}

int run_plan_command(const PlanOptions& options) {
  const SweepSpec sweep = load_sweep_file(options.sweep_file);
  for (const std::string& note : sweep.notes) fmt::print(stderr, "memsweep plan: note: {}\n", note);
  fmt::print("{}", format_plan(sweep));
  return exit_status::kOk;
}

}  // namespace memsweep::cli
