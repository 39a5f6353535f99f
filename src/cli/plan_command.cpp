#include "cli/plan_command.hpp"

#include "cli/results_path.hpp"
#include "common/duration_text.hpp"
#include "common/text_table.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/dataset_preflight.hpp"
#include "memsweep/estimate.hpp"
#include "memsweep/program.hpp"
#include "memsweep/rank_gpus.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

namespace memsweep::cli {
namespace {

using Row = TableRow;

// "keep", "reuse", "recompute", or "recompute:4" where the file sets its
// layers per segment.
std::string memory_plan_text(const TrialSpec& trial) {
  const int every = trial.effective_recompute_every();
  const std::string_view plan = memory_plan_name(trial.memory_plan);
  return every == kRecomputeEveryDefault ? std::string(plan) : fmt::format("{}:{}", plan, every);
}

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

// A distinct shape beyond any machine gets a note of its own, up to this
// many: a grid of such shapes needs no line for each.
constexpr std::size_t kMaxBeyondNotes = 20;
// An estimate that takes longer is named (docs/estimate.md): the sizes are
// screened (kEstimateLimitBytes), but oneDNN's choices are its own.
constexpr double kSlowEstimateSeconds = 2.0;

// Under reuse and recompute the activations are in the step arena.
std::string beyond_note(const TrialSpec& trial, const MemoryEstimate& estimate) {
  namespace part = estimate_part;
  const auto has = [&](std::string_view name) {
    return std::any_of(estimate.parts.begin(), estimate.parts.end(),
                       [&](const EstimatePart& p) { return p.name == name; });
  };
  const std::string_view transient = has(part::kActivations) ? part::kActivations : part::kStepArena;
  return fmt::format(
      "trial {}: needs at least {} (parameters {}, {} {}), more than any machine has ({}); "
      "the full estimate is not worked out for it",
      trial.id, format_byte_size(estimate.total()), format_byte_size(estimate.part(part::kParameters).bytes), transient,
      format_byte_size(estimate.part(transient).bytes), format_byte_size(kEstimateLimitBytes));
}

// The full estimate's total (docs/estimate.md) for the published dataset
// sizes and the trial process's cost: the trial's predicted peak -
// baseline, the dataset excluded. A shape beyond any machine shows its
// floor (">= X") and a note.
std::string predicted_text(EstimateCache& cache, const TrialSpec& trial, const TrialProcessCost& process_cost) {
  try {
    const std::size_t shapes_before = cache.distinct_shapes();
    const auto start = std::chrono::steady_clock::now();
    const ExampleCounts counts = canonical_example_counts(trial.dataset);
    const MemoryEstimate& estimate = cache.estimate(trial, counts);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (took.count() > kSlowEstimateSeconds)
      fmt::print(stderr, "memsweep plan: note: trial {}: its estimate took {:.1f} s ({})\n", trial.id, took.count(),
                 describe_layers(model_spec(trial)));
    if (!estimate.at_least)
      return format_byte_size(estimate.total() + trial_process_bytes(process_cost, trial_process_shape(trial, counts)));
    if (cache.distinct_shapes() > shapes_before) {
      const std::size_t beyond = cache.beyond_limit_shapes();
      if (beyond <= kMaxBeyondNotes) fmt::print(stderr, "memsweep plan: note: {}\n", beyond_note(trial, estimate));
      if (beyond == kMaxBeyondNotes + 1)
        fmt::print(stderr, "memsweep plan: note: more shapes need more than {}; their rows show \">= \" a floor\n",
                   format_byte_size(kEstimateLimitBytes));
    }
    return ">= " + format_byte_size(estimate.total());
  } catch (const std::exception& error) {
    // A shape oneDNN cannot plan fails when the trial runs; plan still lists it.
    fmt::print(stderr, "memsweep plan: note: trial {}: no prediction: {}\n", trial.id, error.what());
    return "?";
  }
}

// Every [params] name any trial has, sorted: a column each.
std::vector<std::string> param_names(const std::vector<TrialSpec>& every_value) {
  std::set<std::string> names;
  for (const TrialSpec& trial : every_value)
    for (const auto& [name, value] : trial.params) names.insert(name);
  return {names.begin(), names.end()};
}

std::string param_text(const TrialSpec& trial, const std::string& name) {
  for (const auto& [param, value] : trial.params)
    if (param == name) return value.text.empty() ? "\"\"" : value.text;
  return "-";
}

// Each distinct program once (a sweep may have 10^6 trials of one
// program), unless its path depends on the trial: then each trial's.
void check_programs(const SweepSpec& sweep) {
  std::set<std::string> checked;
  for (const TrialSpec& trial : sweep.trials.every_value()) {
    if (!trial.program || trial.program->command.empty()) {
      check_program(trial);  // nothing, or an error for an empty command
      continue;
    }
    const ProgramSpec& program = *trial.program;
    std::string key = program.command.front() + '\0' + program.workdir + '\0' + program.place;
    if (key.find('{') != std::string::npos) key += '\0' + trial.id;
    if (checked.insert(std::move(key)).second) check_program(trial);
  }
}

// The parts table: one line per part, with the file its run writes.
std::string format_parts(const std::vector<PlannedPart>& parts) {
  const std::string& field = parts.front().part.field;
  std::vector<Row> rows{{"part", "field=value", "trials", "results"}};
  for (std::size_t index = 0; index < parts.size(); ++index)
    rows.push_back({std::to_string(index), parts[index].part.name(), std::to_string(parts[index].part.trials.size()),
                    parts[index].results});
  return fmt::format("{} by {}: memsweep run --split-by {} --part K runs part K (a Slurm array: --array=0-{})\n",
                     counted(parts.size(), "part"), field, field, parts.size() - 1) +
         render_table(rows);
}

// What the trials' data are when none has files to read: which kinds of
// trial the sweep has.
struct DataKinds {
  bool synthetic = false;  // memsweep's synthetic data (a program's too, through {synthetic.*} or the label)
  bool labels = false;     // a program trial names a real dataset it does not read through {data_dir}
  bool unnamed = false;    // a program trial names no dataset at all: it reads its own, or none
};

DataKinds data_kinds(const std::vector<TrialSpec>& trials) {
  DataKinds kinds;
  for (const TrialSpec& trial : trials) {
    if (!trial.shows_field("dataset"))
      kinds.unnamed = true;
    else if (trial.dataset.kind == DatasetKind::synthetic)
      kinds.synthetic = true;
    else if (trial.program && !reads_dataset_files(trial))
      kinds.labels = true;
  }
  return kinds;
}

// "none to read (...)": each kind the sweep has, in words. A program trial
// without a dataset is not said to be synthetic (issue 43): memsweep
// gives it no data at all.
std::string nothing_to_read(const DataKinds& kinds) {
  if (!kinds.labels && !kinds.unnamed) return "datasets: none to read (every trial's data are synthetic)\n";
  std::vector<std::string> said;
  if (kinds.labels) said.emplace_back("the programs' datasets are labels: no command, env or workdir uses {data_dir}");
  if (kinds.unnamed)
    said.emplace_back(kinds.labels || kinds.synthetic ? "some program trials name no dataset: they read none that "
                                                        "memsweep knows"
                                                      : "no trial names a dataset: the programs read none that "
                                                        "memsweep knows");
  if (kinds.synthetic) said.emplace_back("the rest are synthetic");
  return fmt::format("datasets: none to read ({})\n", fmt::join(said, "; "));
}

// The "datasets" section: where `memsweep run` would look, and what it
// would find there for each real dataset the trials read.
std::string format_datasets(const std::vector<std::filesystem::path>& search_dirs,
                            const std::vector<DatasetReport>& reports, const DataKinds& kinds) {
  std::vector<std::string> dirs;
  for (const std::filesystem::path& dir : search_dirs) dirs.push_back(dir.string());
  if (reports.empty()) return nothing_to_read(kinds);
  std::string out = fmt::format("datasets (looked for in {}):\n", fmt::join(dirs, ", "));
  for (const DatasetReport& report : reports) out += "  " + report_line(report) + "\n";
  return out;
}

}  // namespace

void add_plan_command(CLI::App& app, PlanOptions& options) {
  CLI::App* plan = app.add_subcommand("plan", "Print the trials a sweep file expands to (no MPI, nothing is run)");
  plan->add_option("sweep", options.sweep_file, "The sweep file (TOML)")->required();
  plan->add_option("--split-by", options.split_by,
                   fmt::format("List the parts the sweep splits into by this field, one per value (for an array job: "
                               "memsweep run --split-by FIELD --part K); one of: {}",
                               kSplitFields));
  plan->add_option("-o,--output", options.output,
                   "The results file as memsweep run's -o takes it (with --split-by it must contain {part}); "
                   "default: the sweep file's name with .h5, or with .LABEL.h5 per part");
  plan->add_flag("--outputs", options.outputs,
                 "Print only the results file(s) memsweep run would write, one line per part in part order (one line "
                 "without --split-by); notes go to stderr; the datasets are not looked for");
  plan->add_flag("--all", options.all,
                 fmt::format("List every trial, however many (without it, a sweep of more than {} trials shows its "
                             "first and last {} and the values of each section's fields)",
                             kPlanListedTrials, kPlanShownAtEachEnd));
  plan->add_option("--data-dir", options.data_dir,
                   "Where the real datasets are, as for memsweep run (default: $MEMSWEEP_DATA, else ./data): plan "
                   "says which of the sweep's datasets are there, and exits 2 if one is missing");
}

// The sections' fields and their values: what a large sweep's plan shows
// instead of every trial.
std::string format_sections(const SweepSpec& sweep) {
  std::string out;
  for (const SectionSummary& section : sweep.sections) {
    out += fmt::format("{}: {}\n", section.name, counted(section.trials, "trial"));
    for (const auto& [field, values] : section.fields) out += fmt::format("  {}: {}\n", field, values);
  }
  return out;
}

// The positions whose lines are shown: all, or the first and last few.
std::vector<std::size_t> listed_positions(std::size_t trials, bool all) {
  std::vector<std::size_t> positions;
  if (all || trials <= kPlanListedTrials) {
    for (std::size_t p = 0; p < trials; ++p) positions.push_back(p);
    return positions;
  }
  for (std::size_t p = 0; p < kPlanShownAtEachEnd; ++p) positions.push_back(p);
  for (std::size_t p = trials - kPlanShownAtEachEnd; p < trials; ++p) positions.push_back(p);
  return positions;
}

// Which trials need GPUs, and how many this node offers: how many
// training ranks it can run (docs/runner.md, "A trial's GPUs").
void write_gpu_line(std::FILE* out, const std::vector<TrialSpec>& trials, const RankGpus& node) {
  std::size_t needing = 0;
  int most = 0;
  for (const TrialSpec& trial : trials) {
    const int gpus = trial.gpus_needed(node.node_has_gpus);
    needing += gpus > 0 ? 1 : 0;
    most = std::max(most, gpus);
  }
  const std::size_t offered =
      node.node_has_gpus
          ? static_cast<std::size_t>(std::count(node.node_devices.begin(), node.node_devices.end(), ',') + 1)
          : 0;
  const std::string here =
      offered == 0 ? std::string("this node has no GPU")
                   : fmt::format("this node offers {} ({} from {})", offered, node.node_devices, node.source);
  if (needing == 0) {
    fmt::print(out, "gpus: no trial needs a GPU here; {}\n", here);
    return;
  }
  fmt::print(out, "gpus: {} need{} {} GPU{} each at most; {}{}\n", counted(needing, "trial"), needing == 1 ? "s" : "",
             most, most == 1 ? "" : "s", here,
             offered == 0 ? ": memsweep run refuses them here"
                          : fmt::format(": at most {} training rank{} on a node like it",
                                        offered / static_cast<std::size_t>(most),
                                        offered / static_cast<std::size_t>(most) == 1 ? "" : "s"));
}

void write_plan(std::FILE* out, const SweepSpec& sweep, const std::vector<PlannedPart>& parts, bool all) {
  const std::vector<TrialSpec> every_value = sweep.trials.every_value();
  const auto any = [&](const auto& has) { return std::any_of(every_value.begin(), every_value.end(), has); };
  const bool any_cnn = any([](const TrialSpec& t) { return t.model == ModelKind::cnn; });
  const bool any_budget = any([](const TrialSpec& t) { return t.mem_budget_bytes.has_value(); });
  const bool any_timeout = any([](const TrialSpec& t) { return t.timeout_seconds.has_value(); });
  // A sweep that never leaves the default plan lists as it did before there were others.
  const bool any_plan = any([](const TrialSpec& t) { return t.memory_plan != MemoryPlan::keep; });
  const bool any_program = any([](const TrialSpec& t) { return t.program.has_value(); });
  const bool any_gpu_limit = any([](const TrialSpec& t) { return t.gpu_limit_bytes.has_value(); });
  // This node's GPUs, as a rank alone here would be given them: what
  // `gpus` counts against (a login node often has none).
  const RankGpus node = assign_rank_gpus({"this node"}, 0, [](bool) { return 0; });
  // Shown where GPUs play a part: a trial needs one, or the node has some.
  const bool any_gpus =
      node.node_has_gpus || any([&](const TrialSpec& t) { return t.gpus_needed(node.node_has_gpus) > 0; });
  const std::vector<std::string> params = param_names(every_value);
  std::map<std::string, std::size_t> part_of_value;
  for (std::size_t index = 0; index < parts.size(); ++index) part_of_value.emplace(parts[index].part.value, index);
  const bool split = !parts.empty();
  // "trial": the number summary and the report give the trial (plan_index + 1).
  Row header{"id", "trial"};
  if (split) header.push_back("part");
  if (any_program) header.push_back("trainer");
  for (const char* name : {"repeat", "dataset", "model", "optimizer", "lr", "epochs", "batch", "hidden"})
    header.push_back(name);
  if (any_cnn) header.push_back("channels");
  if (any_plan) header.push_back("memory_plan");
  if (any_budget) header.push_back("budget");
  if (any_timeout) header.push_back("timeout");
  if (any_gpus) header.push_back("gpus");
  if (any_gpu_limit) header.push_back("gpu_limit");
  header.insert(header.end(), params.begin(), params.end());
  header.push_back("predicted");
  EstimateCache estimates;
  const TrialProcessCost process_cost = machine_trial_process_cost();
  PackedTable table;
  table.add(header);
  const std::vector<std::size_t> positions = listed_positions(sweep.trials.size(), all);
  for (std::size_t k = 0; k < positions.size(); ++k) {
    if (k > 0 && positions[k] != positions[k - 1] + 1) {
      Row gap{"…", fmt::format("{} more", positions[k] - positions[k - 1] - 1)};
      gap.resize(header.size(), "");
      table.add(gap);
    }
    const TrialSpec t = sweep.trials[positions[k]];
    Row row{t.id, std::to_string(t.plan_index + 1)};
    if (split) row.push_back(std::to_string(part_of_value.at(split_value(t, parts.front().part.field))));
    if (any_program) row.push_back(std::string(t.trainer()));
    row.push_back(std::to_string(t.repeat));
    // A program's built-in fields that its file neither sets nor names: blank.
    const auto field = [&](std::string_view name, std::string text) {
      row.push_back(t.shows_field(name) ? std::move(text) : std::string());
    };
    field("dataset", dataset_text(t.dataset));
    field("model", std::string(model_name(t.model)));
    field("optimizer", std::string(optimizer_name(t.optimizer.kind)));
    field("learning_rate", fmt::format("{:.6g}", t.learning_rate));
    field("epochs", std::to_string(t.epochs));
    field("batch_size", std::to_string(t.batch_size));
    field("hidden", hidden_text(t.hidden));
    if (any_cnn) field("channels", t.model == ModelKind::cnn ? hidden_text(t.channels) : "-");
    if (any_plan) field("memory_plan", memory_plan_text(t));
    if (any_budget) row.push_back(t.mem_budget_bytes ? format_byte_size(*t.mem_budget_bytes) : "-");
    if (any_timeout) row.push_back(t.timeout_seconds ? format_duration(*t.timeout_seconds) : "-");
    if (any_gpus) row.push_back(std::to_string(t.gpus_needed(node.node_has_gpus)));
    if (any_gpu_limit)
      row.push_back(!t.gpu_limit_bytes                              ? "-"
                    : *t.gpu_limit_bytes == TrialSpec::kWholeDevice ? "device"
                                                                    : format_byte_size(*t.gpu_limit_bytes));
    for (const std::string& name : params) row.push_back(param_text(t, name));
    // The estimate is of memsweep's own trainer; another program's memory is its own.
    row.push_back(t.program ? "-" : predicted_text(estimates, t, process_cost));
    table.add(row);
  }
  const std::size_t distinct = sweep.trials.size() / static_cast<std::size_t>(sweep.repeats);
  fmt::print(out, "sweep \"{}\" ({}): {} ({} {} x {}), seed {}, sampling every {} ms\n", sweep.name, sweep.source_name,
             counted(sweep.trials.size(), "trial"), distinct, sweep.trials.duplicates_known() ? "distinct" : "defined",
             counted(static_cast<std::size_t>(sweep.repeats), "repeat"), sweep.seed, sweep.sampler.interval_ms);
  if (!sweep.trials.duplicates_known())
    fmt::print(out,
               "more than {} trials per repeat: a trial defined twice is not looked for here (memsweep run hands each "
               "id out once, and says which it skipped)\n",
               kWalkedTrials);
  if (split) fmt::print(out, "{}\n", format_parts(parts));
  if (positions.size() < sweep.trials.size()) fmt::print(out, "{}", format_sections(sweep));
  table.write(out);
  fmt::print(out,
             "{}\npredicted: each trial's peak - baseline in a fresh trial process (its buffers and the trial "
             "process's cost), dataset excluded, for the published dataset sizes (memsweep estimate shows the "
             "parts){}",
             counted(sweep.trials.size(), "trial"), any_program ? "; for memsweep's own trainer only\n" : "\n");
  if (any_gpus) write_gpu_line(out, every_value, node);
}

// [search]: what each configuration is searched for, and the estimate's
// answer where memsweep's trainer is the trainer.
void write_searches(std::FILE* out, const SweepSpec& sweep) {
  const SearchSpec& search = *sweep.search;
  std::vector<std::string> limits;
  for (const std::uint64_t limit : search.limits) limits.push_back(format_byte_size(limit));
  const std::size_t searches = sweep.trials.size() * search.limits.size();
  fmt::print(
      out,
      "\nsearch ({}): the largest {} in [{}, {}] that trains within {}; {} configuration{} x {} = {}; strategy "
      "{}, resolution {:g} %, at most {} trials each; probes train {} epoch{}{}\n",
      search.place, search.axis, search.low, search.high, fmt::join(limits, ", "), sweep.trials.size(),
      sweep.trials.size() == 1 ? "" : "s", counted(search.limits.size(), "limit"),
      fmt::format("{} search{}", searches, searches == 1 ? "" : "es"), strategy_name(search.strategy),
      search.resolution * 100.0, search.max_trials, search.probe_epochs, search.probe_epochs == 1 ? "" : "s",
      search.verify ? ", and the answer trains in full before it is one" : " (verify = false: answers untested)");
  PackedTable table;
  table.add(Row{"search", "trial", "id", "limit", "estimate's answer"});
  for (std::size_t position = 0; position < sweep.trials.size() && position < kPlanListedTrials; ++position) {
    const TrialSpec configuration = sweep.trials[position];
    const std::optional<AxisEstimate> line =
        estimate_along_axis(configuration, search, canonical_example_counts(configuration.dataset));
    for (std::size_t limit = 0; limit < search.limits.size(); ++limit) {
      std::string answer = "-";
      if (line && line->slope > 0.0) {
        const double value = std::floor((static_cast<double>(search.limits[limit]) - line->intercept) / line->slope);
        answer = value < static_cast<double>(search.low)    ? fmt::format("< {}", search.low)
                 : value > static_cast<double>(search.high) ? fmt::format("> {}", search.high)
                                                            : fmt::format("{:.0f}", value);
      }
      table.add(Row{std::to_string(position * search.limits.size() + limit), std::to_string(position + 1),
                    configuration.id, limits[limit], answer});
    }
  }
  table.write(out);
  fmt::print(out,
             "estimate's answer: where the estimated footprint meets the limit, memsweep's own trainer only; it leaves "
             "out the trial process's own baseline, so the search starts from it and tests the answer\n");
}

int run_plan_command(const PlanOptions& options) {
  const SweepSpec sweep = load_sweep_file(options.sweep_file);
  check_programs(sweep);
  std::vector<PlannedPart> parts;
  std::vector<std::string> outputs;
  if (options.split_by) {
    for (SweepPart& part : split_sweep(sweep, *options.split_by)) {
      std::string results = results_path(options.sweep_file, options.output, part.label).string();
      outputs.push_back(results);
      parts.push_back({std::move(part), std::move(results)});
    }
  } else {
    outputs.push_back(results_path(options.sweep_file, options.output, std::nullopt).string());
  }
  for (const std::string& note : sweep.notes) fmt::print(stderr, "memsweep plan: note: {}\n", note);
  if (options.outputs) {
    // For job scripts: the files and nothing else.
    for (const std::string& output : outputs) fmt::print("{}\n", output);
    return exit_status::kOk;
  }
  write_plan(stdout, sweep, parts, options.all);
  if (sweep.search) write_searches(stdout, sweep);
  // After the plan, so that the user sees what was looked for before the
  // error (main prints it; exit 2) says what is missing.
  const std::vector<std::filesystem::path> search_dirs = dataset_search_dirs_from_environment(options.data_dir);
  const std::vector<TrialSpec> every_value = sweep.trials.every_value();
  const std::vector<DatasetReport> reports = check_datasets(every_value, search_dirs);
  fmt::print("\n{}", format_datasets(search_dirs, reports, data_kinds(every_value)));
  std::fflush(stdout);
  require_datasets(reports);
  return exit_status::kOk;
}

}  // namespace memsweep::cli
