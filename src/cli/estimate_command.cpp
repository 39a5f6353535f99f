#include "cli/estimate_command.hpp"

#include "cli/whole_number_option.hpp"
#include "common/text_table.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/calibrate.hpp"
#include "memsweep/error.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/training_runner.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string_view>
#include <utility>

namespace memsweep::cli {
namespace {

constexpr std::string_view kCommandLineSource = "command line";
constexpr std::string_view kRuleFull = "full";
constexpr std::string_view kRuleQa = "qa";

// Sweep-file keys of a trial and the options that set them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 9> kOptionOfKey{
    {{"dataset", "--dataset"},
     {"model", "--model"},
     {"optimizer", "--optimizer"},
     {"hidden", "--hidden"},
     {"channels", "--channels"},
     {"batch_size", "--batch"},
     {"epochs", "--epochs"},
     {"memory_plan", "--memory-plan"},
     {"recompute_every", "--recompute-every"}}};

bool describes_a_trial(const EstimateOptions& o) {
  return o.dataset || o.model || o.optimizer || o.hidden || o.channels || o.batch || o.epochs;
}

// "trial[0].hidden[2]: expected ..." -> "--hidden: expected ...".
InputError option_error(const ConfigError& error) {
  std::string_view key = std::string_view(error.key()).substr(error.key().find('.') + 1);
  key = key.substr(0, key.find('['));
  for (const auto& [name, option] : kOptionOfKey)
    if (key == name) return InputError(fmt::format("{}: {}", option, error.detail()));
  return InputError(error.detail());
}

// "--hidden 128,64" as the sweep file's list: every item a whole number
// (the sweep file's parser checks the range and names the option). CLI11's
// own splitting dropped an empty item: "8,,8" was the trial [8, 8].
std::vector<std::int64_t> whole_numbers(std::string_view option, const std::string& text) {
  const auto refuse = [&](std::size_t item, const std::string& why) {
    return InputError(fmt::format("{} {}: item {} {}; expected whole numbers separated by commas, e.g. 128,64", option,
                                  text, item, why));
  };
  std::vector<std::int64_t> numbers;
  std::string_view rest = text;
  for (std::size_t item = 1;; ++item) {
    const std::string_view piece = rest.substr(0, rest.find(','));
    if (piece.empty()) throw refuse(item, "is empty");
    std::int64_t number = 0;
    const auto [end, error] = std::from_chars(piece.data(), piece.data() + piece.size(), number);
    if (error == std::errc::result_out_of_range) throw refuse(item, fmt::format("({}) is out of range", piece));
    if (error != std::errc() || end != piece.data() + piece.size())
      throw refuse(item, fmt::format("(\"{}\") is not a whole number", piece));
    numbers.push_back(number);
    if (piece.size() == rest.size()) return numbers;
    rest.remove_prefix(piece.size() + 1);
  }
}

// ", memory plan recompute every 4 layers": the plan, where it is not keep.
std::string plan_words(const TrialSpec& trial) {
  if (trial.memory_plan == MemoryPlan::keep) return {};
  std::string words = fmt::format(", memory plan {}", memory_plan_name(trial.memory_plan));
  if (trial.effective_recompute_every() != kRecomputeEveryDefault)
    words += fmt::format(" every {} layers", trial.recompute_every);
  return words;
}

std::string trial_heading(const TrialSpec& trial, ExampleCounts counts) {
  return fmt::format("trial {} ({}): {}, {} {}, {}, batch {}{}, {} + {} examples", trial.id, trial.origin,
                     dataset_name(trial.dataset.kind), model_name(trial.model), describe_layers(model_spec(trial)),
                     optimizer_name(trial.optimizer.kind), trial.batch_size, plan_words(trial), counts.train,
                     counts.test);
}

// A sweep file's trial under the plan the options give: the same trial in
// every other field, so another id.
TrialSpec with_plan_options(TrialSpec trial, const EstimateOptions& o) {
  if (!o.memory_plan && !o.recompute_every) return trial;
  if (o.memory_plan) trial.memory_plan = *parse_memory_plan(*o.memory_plan);  // CLI11 checked the name
  if (o.recompute_every) trial.recompute_every = *o.recompute_every;
  trial.id = trial_id(trial);
  return trial;
}

TableRow part_row(const EstimatePart& part) {
  return {part.name, format_byte_size(part.bytes), std::to_string(part.bytes), part.note};
}

}  // namespace

void add_estimate_command(CLI::App& app, EstimateOptions& options) {
  CLI::App* estimate = app.add_subcommand(
      "estimate", "Print a trial's predicted memory, part by part (a sweep file's trials, or one trial from options)");
  estimate->add_option("sweep", options.sweep_file, "A sweep file (TOML); or describe one trial with the options");
  estimate->add_option("--trial", options.trial_id, "With a sweep file: only the trial with this id");
  estimate->add_option("--dataset", options.dataset, "mnist, fashion-mnist, cifar-10 or synthetic");
  estimate->add_option("--model", options.model, "mlp, cnn or alexnet");
  estimate->add_option("--hidden", options.hidden, "Hidden widths, input side first: 128,64");
  estimate->add_option("--channels", options.channels, "CNN: channels of each convolution block: 16,32");
  estimate->add_option("--batch", options.batch, "Batch size");
  estimate->add_option("--optimizer", options.optimizer, "sgd, momentum or adam");
  estimate->add_option("--epochs", options.epochs, "Epochs (the estimate does not depend on them)");
  estimate
      ->add_option("--memory-plan", options.memory_plan,
                   "keep, reuse or recompute (with a sweep file: instead of each trial's own)")
      ->check(CLI::IsMember({"keep", "reuse", "recompute"}));
  estimate
      ->add_option("--recompute-every", options.recompute_every,
                   "recompute: layers per segment (0, the default: ceil(sqrt(layers)))")
      ->check(whole_number_from(kRecomputeEveryDefault, kMaxRecomputeEvery));
  estimate->add_option("--rule", options.rule, "full (the trainer's own layouts) or qa (the Q&A rule)")
      ->check(CLI::IsMember({std::string(kRuleFull), std::string(kRuleQa)}));
  estimate->add_flag("--calibrate", options.calibrate,
                     "Measure what a fresh trial process takes beyond its buffers on this machine, and keep it "
                     "(docs/estimate.md)");
  estimate->add_flag("--if-uncalibrated", options.only_if_uncalibrated,
                     "--calibrate: only when no calibration of this CPU model is kept yet (else say where it is)");
  estimate
      ->add_option("--calibration-runs", options.calibration_repeats,
                   "--calibrate: runs of each calibration trial (default 5; the median counts)")
      ->check(whole_number_from(1, 100));
  estimate->add_option("--train-examples", options.train_examples, "Training examples (default: the published size)")
      ->check(whole_number_from(1, INT64_MAX));
  estimate->add_option("--test-examples", options.test_examples, "Test examples (default: the published size)")
      ->check(whole_number_from(1, INT64_MAX));
}

TrialSpec trial_from_options(const EstimateOptions& o) {
  std::vector<TrialField> fields;
  if (o.dataset) fields.push_back({"dataset", *o.dataset});
  if (o.model) fields.push_back({"model", *o.model});
  if (o.optimizer) fields.push_back({"optimizer", *o.optimizer});
  if (o.hidden) fields.push_back({"hidden", whole_numbers("--hidden", *o.hidden)});
  if (o.channels) fields.push_back({"channels", whole_numbers("--channels", *o.channels)});
  if (o.batch) fields.push_back({"batch_size", std::int64_t{*o.batch}});
  if (o.epochs) fields.push_back({"epochs", std::int64_t{*o.epochs}});
  if (o.memory_plan) fields.push_back({"memory_plan", *o.memory_plan});
  if (o.recompute_every) fields.push_back({"recompute_every", std::int64_t{*o.recompute_every}});
  try {
    return trial_from_fields(fields, std::string(kCommandLineSource));
  } catch (const ConfigError& error) {
    throw option_error(error);
  }
}

std::string format_trial_estimate(const TrialSpec& trial, ExampleCounts counts, bool rule,
                                  const std::optional<TrialProcessCost>& process_cost) {
  std::string out = trial_heading(trial, counts) + "\n";
  std::vector<TableRow> rows{{"part", "size", "bytes", "where it comes from"}};
  if (rule) {
    const RuleCounts c = rule_counts(trial);
    const MemoryEstimate estimate = rule_estimate(c);
    out += fmt::format(
        "Q&A rule: {} parameters, {} activations and {} inputs per example ({} per example with "
        "gradients)\n",
        c.parameters, c.activations_per_example, c.input_per_example, format_byte_size(rule_bytes_per_example(c)));
    for (const EstimatePart& part : estimate.parts) rows.push_back(part_row(part));
    rows.push_back(
        {"total", format_byte_size(estimate.total()), std::to_string(estimate.total()), "the rule's training memory"});
    return out + render_table(rows);
  }
  MemoryEstimate estimate = estimate_trial(trial, counts);
  if (process_cost && !estimate.at_least) estimate.parts.push_back(trial_process_part(*process_cost, trial, counts));
  for (const EstimatePart& part : estimate.parts) rows.push_back(part_row(part));
  if (estimate.at_least)
    out += fmt::format("beyond any machine's memory (more than {}): the parts are floors, counted without oneDNN\n",
                       format_byte_size(kEstimateLimitBytes));
  rows.push_back({estimate.at_least ? "total, at least" : "total", format_byte_size(estimate.total()),
                  std::to_string(estimate.total()),
                  estimate.at_least ? "the trial's own memory is more than this"
                  : process_cost    ? "the trial's predicted peak - baseline, in a fresh trial process"
                                    : "the trial's own memory: its predicted peak - baseline"});
  rows.push_back(part_row(resident_dataset_part(trial.dataset, counts)));
  return out + render_table(rows);
}

// One table per trial: beyond this many, nobody reads them.
constexpr std::size_t kMaxEstimatedTrials = 100'000;

// --calibrate: the calibration trials' figures, the fitted cost, and where it was written.
int run_calibration(const EstimateOptions& options) {
  if (describes_a_trial(options) || !options.sweep_file.empty())
    throw InputError("--calibrate measures this machine: give it no sweep file and no trial options");
  if (options.only_if_uncalibrated) {
    const std::filesystem::path kept = calibration_file_path();
    const std::optional<TrialProcessCost> found = read_calibration_file(kept);
    if (found && found->cpu == this_cpu_model()) {
      fmt::print("memsweep estimate --calibrate: this CPU is calibrated already ({}: {}); nothing measured\n",
                 kept.string(), found->source);
      return exit_status::kOk;
    }
  }
  TrainingRunnerOptions runner_options;
  runner_options.threads = default_thread_count();
  TrainingRunner runner(runner_options);
  const int threads = runner_options.threads;
  fmt::print(
      "memsweep estimate --calibrate: {} calibration trials x {} runs, each in a fresh trial process, {} "
      "thread{}\n",
      calibration_trials().size(), options.calibration_repeats, threads, threads == 1 ? "" : "s");
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  Calibration calibration;
  try {
    calibration = calibrate_trial_process(runner, options.calibration_repeats, threads, this_cpu_model(), host);
  } catch (const std::runtime_error& error) {
    // A trial that cannot train here: nothing is written, the old calibration (if any) stays.
    fmt::print(stderr, "memsweep estimate --calibrate: {}; nothing written\n", error.what());
    return exit_status::kFailure;
  }
  std::vector<TableRow> rows{{"trial", "layers", "batch sizes", "convolutions", "estimate", "footprint (median)",
                              "beyond the estimate", "model"}};
  for (const CalibrationTrial& trial : calibration.trials)
    rows.push_back({fmt::format("{} {}", model_name(trial.trial.model), describe_layers(model_spec(trial.trial))),
                    std::to_string(trial.shape.layers), std::to_string(trial.shape.batch_sizes),
                    trial.shape.convolutions ? "yes" : "no", format_byte_size(trial.estimate_bytes),
                    format_byte_size(static_cast<std::uint64_t>(trial.median_footprint_bytes)),
                    format_byte_size(static_cast<std::uint64_t>(
                        std::max(0.0, trial.median_footprint_bytes - static_cast<double>(trial.estimate_bytes)))),
                    format_byte_size(trial_process_bytes(calibration.cost, trial.shape))});
  fmt::print("{}", render_table(rows));
  const TrialProcessCost& cost = calibration.cost;
  const auto size = [](double bytes) { return format_byte_size(static_cast<std::uint64_t>(bytes)); };
  fmt::print(
      "trial process = {} + {} a layer beyond 2 + {} a batch size beyond 2 + {} a layer and batch size beyond them + "
      "{} with convolutions\n",
      size(cost.base_bytes), size(cost.per_layer_bytes), size(cost.per_batch_size_bytes),
      size(cost.per_layer_batch_size_bytes), size(cost.convolution_bytes));
  const std::filesystem::path path = calibration_file_path();
  write_calibration_file(path, cost);
  fmt::print("written to {} (estimate, plan and run read it on this machine)\n", path.string());
  return exit_status::kOk;
}

int run_estimate_command(const EstimateOptions& options) {
  if (options.calibrate) return run_calibration(options);
  if (options.only_if_uncalibrated) throw InputError("--if-uncalibrated goes with --calibrate");
  const bool from_options = describes_a_trial(options);
  if (!options.sweep_file.empty() && from_options)
    throw InputError("give a sweep file or a trial's options (--dataset, --hidden, ...), not both");
  if (options.sweep_file.empty() && !options.trial_id.empty())
    throw InputError("--trial selects a trial of a sweep file; no sweep file was given");
  if (options.sweep_file.empty() && !from_options)
    throw InputError("a sweep file or a trial's options (--dataset, --hidden, --batch, ...) are required");

  std::vector<TrialSpec> trials;
  if (from_options) {
    trials.push_back(trial_from_options(options));
    // A sweep file reads recompute_every under any plan (a grid may cross
    // the two); one trial on the command line has no such reason.
    if (options.recompute_every && trials.front().memory_plan != MemoryPlan::recompute)
      throw InputError("--recompute-every: only memory plan recompute has segments; add --memory-plan recompute");
  } else {
    SweepSpec sweep = load_sweep_file(options.sweep_file);
    if (options.trial_id.empty()) {
      // A repeat trains the same shapes: its estimate is its first run's.
      if (sweep.trials.size() / static_cast<std::size_t>(sweep.repeats) > kMaxEstimatedTrials)
        throw InputError(fmt::format(
            "{}: {} trials, more than the {} that estimate lists; give --trial ID (memsweep "
            "plan lists the ids) or split the sweep",
            options.sweep_file, sweep.trials.size() / static_cast<std::size_t>(sweep.repeats), kMaxEstimatedTrials));
      for (const TrialSpec& trial : sweep.trials)
        if (trial.repeat == 0) trials.push_back(trial);
    } else {
      for (const TrialSpec& trial : sweep.trials)
        if (trial.id == options.trial_id) trials.push_back(trial);
      if (trials.empty())
        throw InputError(fmt::format("{}: no trial has the id \"{}\" (memsweep plan {} lists them)", options.sweep_file,
                                     options.trial_id, options.sweep_file));
    }
  }
  const std::optional<TrialProcessCost> process_cost =
      options.rule == kRuleQa ? std::nullopt : std::optional<TrialProcessCost>(machine_trial_process_cost());
  std::string out;
  for (TrialSpec& trial : trials) {
    trial = with_plan_options(std::move(trial), options);
    ExampleCounts counts = canonical_example_counts(trial.dataset);
    if (options.train_examples) counts.train = *options.train_examples;
    if (options.test_examples) counts.test = *options.test_examples;
    if (!out.empty()) out += "\n";
    out += format_trial_estimate(trial, counts, options.rule == kRuleQa, process_cost);
  }
  fmt::print("{}", out);
  return exit_status::kOk;
}

}  // namespace memsweep::cli
