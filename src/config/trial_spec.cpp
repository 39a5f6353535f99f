#include "config/json_text.hpp"
#include "config/placeholders.hpp"
#include "memsweep/config.hpp"
#include "memsweep/random.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <vector>

namespace memsweep {
namespace {

using config::detail::json_quoted;

// A program's template with what the trial knows filled in: the command it
// runs, whichever fields its placeholders name (an sgd trial's {momentum}
// too), and whatever way the file spells it. {trial_id}, which is this
// text's hash, and the run's own values stay placeholders; so do {seed} and
// {repeat}: the text has the trial's seed and repeat already, and filled in
// they would make a trial's repeats differ in their command as well, which
// a reader would take for different configurations.
std::string known_part(const TrialSpec& trial, const std::string& text) {
  return config::detail::substitute(text, [&](std::string_view name) -> std::optional<std::string> {
    if (name == "seed" || name == "repeat") return std::nullopt;
    return config::detail::trial_placeholder(trial, name, false);
  });
}

std::string program_canonical_text(const TrialSpec& trial) {
  const ProgramSpec& program = *trial.program;
  std::vector<std::string> command;
  for (const std::string& element : program.command) command.push_back(json_quoted(known_part(trial, element)));
  std::string text = fmt::format(";program={};command=[{}]", program.name, fmt::join(command, ","));
  if (!program.env.empty()) {
    std::vector<std::string> env;
    for (const auto& [name, value] : program.env)
      env.push_back(fmt::format("{}:{}", json_quoted(name), json_quoted(known_part(trial, value))));
    text += fmt::format(";env={{{}}}", fmt::join(env, ","));
  }
  if (!program.workdir.empty()) text += ";workdir=" + json_quoted(known_part(trial, program.workdir));
  return text;
}

}  // namespace

std::string_view model_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::mlp: return "mlp";
    case ModelKind::cnn: return "cnn";
    case ModelKind::alexnet: return "alexnet";
  }
  return "unknown";
}

std::string_view optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::momentum: return "momentum";
    case OptimizerKind::adam: return "adam";
  }
  return "unknown";
}

int TrialSpec::gpus_needed(bool node_has_gpus) const {
  if (gpus_per_trial) return *gpus_per_trial;
  return program && (node_has_gpus || program->uses_gpu) ? 1 : 0;
}

bool TrialSpec::shows_field(std::string_view name) const {
  return !program || std::binary_search(program->fields.begin(), program->fields.end(), name, std::less<>());
}

std::string TrialSpec::summary_text() const {
  std::vector<std::string> words;
  if (program) words.push_back(program->name);
  if (shows_field("dataset")) words.emplace_back(dataset_name(dataset.kind));
  if (shows_field("model")) words.emplace_back(model_name(model));
  if (shows_field("optimizer")) words.emplace_back(optimizer_name(optimizer.kind));
  if (shows_field("learning_rate")) words.push_back(fmt::format("lr={:g}", learning_rate));
  if (shows_field("batch_size")) words.push_back(fmt::format("batch={}", batch_size));
  if (shows_field("epochs")) words.push_back(fmt::format("epochs={}", epochs));
  if (shows_field("hidden")) words.push_back(fmt::format("hidden=[{}]", fmt::join(hidden, ",")));
  if (model == ModelKind::cnn && shows_field("channels"))
    words.push_back(fmt::format("channels=[{}]", fmt::join(channels, ",")));
  // The default plan goes unsaid, as it did before there were others.
  if (memory_plan != MemoryPlan::keep && shows_field("memory_plan"))
    words.push_back(fmt::format("plan={}", memory_plan_name(memory_plan)));
  if (effective_recompute_every() != kRecomputeEveryDefault && shows_field("recompute_every"))
    words.push_back(fmt::format("recompute_every={}", recompute_every));
  for (const auto& [name, value] : params) words.push_back(fmt::format("{}={}", name, value.text));
  if (repeat > 0) words.push_back(fmt::format("repeat={}", repeat));
  return fmt::format("{}", fmt::join(words, " "));
}

std::string TrialSpec::canonical_text() const {
  // fmt's "{}" prints the shortest text that reads back as the same double,
  // so equal values always give equal text. Written into one string: a
  // sweep of 10^6 trials hashes 10^6 of these, its formats compiled.
  std::string text;
  text.reserve(160);
  auto out = std::back_inserter(text);
  fmt::format_to(out, FMT_COMPILE("dataset={}"), dataset_name(dataset.kind));
  if (dataset.kind == DatasetKind::synthetic) {
    const SyntheticSpec& s = dataset.synthetic;
    fmt::format_to(out, FMT_COMPILE(";synthetic={}x{}x{}/{}/{}/{}/{}/{}"), s.shape.channels, s.shape.height,
                   s.shape.width, s.classes, s.train_size, s.test_size, s.noise, s.seed);
  }
  fmt::format_to(out, FMT_COMPILE(";model={}"), model_name(model));
  if (model == ModelKind::cnn) fmt::format_to(out, FMT_COMPILE(";channels={}"), fmt::join(channels, "-"));
  fmt::format_to(out, FMT_COMPILE(";optimizer={}"), optimizer_name(optimizer.kind));
  if (optimizer.kind == OptimizerKind::momentum) fmt::format_to(out, FMT_COMPILE(";momentum={}"), optimizer.momentum);
  if (optimizer.kind == OptimizerKind::adam)
    fmt::format_to(out, FMT_COMPILE(";beta1={};beta2={};epsilon={}"), optimizer.beta1, optimizer.beta2,
                   optimizer.epsilon);
  fmt::format_to(out, FMT_COMPILE(";learning_rate={};epochs={};batch_size={};hidden={};seed={};repeat={}"),
                 learning_rate, epochs, batch_size, fmt::join(hidden, "-"), seed, repeat);
  // Appended, and only when not the default: a trial's text, and so its
  // id, is what it was before there were memory plans (or programs).
  if (memory_plan != MemoryPlan::keep)
    fmt::format_to(out, FMT_COMPILE(";memory_plan={}"), memory_plan_name(memory_plan));
  if (effective_recompute_every() != kRecomputeEveryDefault)
    fmt::format_to(out, FMT_COMPILE(";recompute_every={}"), recompute_every);
  if (program) text += program_canonical_text(*this);
  if (!params.empty()) text += ";params=" + params_json();
  // A search's probe: the same values under another limit are another trial.
  if (search) fmt::format_to(out, FMT_COMPILE(";search_limit={}"), search->limit_bytes);
  if (search && search->gpu) fmt::format_to(out, FMT_COMPILE(";search_device=gpu"));
  return text;
}

std::string TrialSpec::params_json() const {
  std::vector<std::pair<std::string_view, std::string_view>> sorted;
  for (const auto& [name, value] : params) sorted.emplace_back(name, value.json);
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::string> members;
  for (const auto& [name, json] : sorted) members.push_back(fmt::format("{}:{}", json_quoted(name), json));
  return fmt::format("{{{}}}", fmt::join(members, ","));
}

ModelSpec model_spec(const TrialSpec& trial) {
  ModelSpec model{input_shape(trial.dataset), class_count(trial.dataset), {}, trial.hidden};
  switch (trial.model) {
    case ModelKind::mlp: break;
    case ModelKind::cnn:
      for (const int channels : trial.channels) model.conv.push_back({channels, true});
      break;
    case ModelKind::alexnet: model.conv = alexnet_conv_blocks(); break;
  }
  return model;
}

TrainingSpec training_spec(const TrialSpec& trial) {
  return {model_spec(trial), trial.optimizer,       trial.learning_rate, trial.batch_size,
          trial.epochs,      trial.training_seed(), trial.memory_plan,   trial.effective_recompute_every()};
}

std::uint64_t TrialSpec::training_seed() const {
  return repeat == 0 ? seed : mix_seed(seed, static_cast<std::uint64_t>(repeat));
}

std::string trial_id(const TrialSpec& trial) {
  constexpr int kIdHexDigits = 12;  // 48 bits: collisions stay improbable far past 10^5 trials
  const std::uint64_t hash = stable_hash(trial.canonical_text());
  return fmt::format(FMT_COMPILE("{:0{}x}"), hash >> (64 - 4 * kIdHexDigits), kIdHexDigits);
}

ConfigError::ConfigError(std::string file, int line, std::string key, std::string detail)
    : InputError(key.empty() ? fmt::format("{}:{}: {}", file, line, detail)
                             : fmt::format("{}:{}: {}: {}", file, line, key, detail)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      detail_(std::move(detail)) {}

}  // namespace memsweep
