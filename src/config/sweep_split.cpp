#include "memsweep/sweep_split.hpp"

#include <fmt/format.h>

#include <array>
#include <map>
#include <optional>
#include <set>

namespace memsweep {
namespace {

enum class SplitField {
  dataset,
  model,
  optimizer,
  learning_rate,
  epochs,
  batch_size,
  hidden,
  channels,
  memory_plan,
  repeat,
  param,  // params.NAME: a program trial's parameter
};

// A field as --split-by names it: one of kFields, or params.NAME.
struct Field {
  SplitField kind;
  std::string param;  // kind param: NAME
};

constexpr std::string_view kParamsPrefix = "params.";
// A trial without the parameter (another program's, a built-in trial's):
// a part of its own, whose value no parameter's text can print alike (a
// parameter "none" is a string value a user may give).
constexpr std::string_view kNoParam = "(none)";

constexpr std::array<std::pair<std::string_view, SplitField>, 10> kFields{{
    {"dataset", SplitField::dataset},
    {"model", SplitField::model},
    {"optimizer", SplitField::optimizer},
    {"learning_rate", SplitField::learning_rate},
    {"epochs", SplitField::epochs},
    {"batch_size", SplitField::batch_size},
    {"hidden", SplitField::hidden},
    {"channels", SplitField::channels},
    {"memory_plan", SplitField::memory_plan},
    {"repeat", SplitField::repeat},
}};

Field parse_field(std::string_view field) {
  for (const auto& [name, value] : kFields)
    if (name == field) return {value, {}};
  if (field.starts_with(kParamsPrefix) && field.size() > kParamsPrefix.size())
    return {SplitField::param, std::string(field.substr(kParamsPrefix.size()))};
  throw InputError(fmt::format("--split-by: \"{}\" is not a field a sweep can be split by; expected one of: {}", field,
                               kSplitFields));
}

std::string widths_text(const std::vector<int>& widths) {
  return widths.empty() ? "none" : fmt::format("{}", fmt::join(widths, "-"));
}

std::string param_text(const TrialSpec& trial, const std::string& name) {
  for (const auto& [param, value] : trial.params)
    if (param == name) return value.text;
  return std::string(kNoParam);
}

std::string value_text(const TrialSpec& trial, const Field& field) {
  switch (field.kind) {
    case SplitField::dataset: {
      if (trial.dataset.kind != DatasetKind::synthetic) return std::string(dataset_name(trial.dataset.kind));
      const ImageShape& shape = trial.dataset.synthetic.shape;
      return fmt::format("synthetic:{}x{}x{}", shape.channels, shape.height, shape.width);
    }
    case SplitField::model: return std::string(model_name(trial.model));
    case SplitField::optimizer: return std::string(optimizer_name(trial.optimizer.kind));
    case SplitField::learning_rate: return fmt::format("{:.6g}", trial.learning_rate);
    case SplitField::epochs: return std::to_string(trial.epochs);
    case SplitField::batch_size: return std::to_string(trial.batch_size);
    case SplitField::hidden: return widths_text(trial.hidden);
    case SplitField::channels: return trial.model == ModelKind::cnn ? widths_text(trial.channels) : "none";
    case SplitField::memory_plan: return std::string(memory_plan_name(trial.memory_plan));
    case SplitField::repeat: return std::to_string(trial.repeat);
    case SplitField::param: return param_text(trial, field.param);
  }
  return "unknown";
}

bool file_name_safe(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

std::string label_of(std::string_view field, std::string_view value) {
  std::string label = fmt::format("{}-{}", field, value);
  for (char& c : label)
    if (!file_name_safe(c)) c = '_';
  return label;
}

}  // namespace

std::string split_value(const TrialSpec& trial, std::string_view field) {
  return value_text(trial, parse_field(field));
}

namespace {

SweepPart new_part(std::string_view field, std::string value) {
  SweepPart part;
  part.field = std::string(field);
  part.label = label_of(field, value);
  part.value = std::move(value);
  return part;
}

// A field that takes its values in turn (a grid axis, the repeat): each
// part is a stride of positions, found from one trial per value. nullopt
// where two values print alike (one part would be two strides).
std::optional<std::vector<SweepPart>> strided_parts(const SweepTrials& trials, std::string_view field,
                                                    const Field& which) {
  const std::optional<SweepTrials::Axis> axis = trials.axis(field);
  if (!axis || axis->values == 0 || axis->inner == 0) return std::nullopt;
  // Values that also print another field: a synthetic dataset its shape, a
  // CNN's channels only with model = cnn. Where that one varies too, a
  // stride could hold two values.
  if ((which.kind == SplitField::dataset && trials.axis("synthetic")) ||
      (which.kind == SplitField::channels && trials.axis("model")))
    return std::nullopt;
  const std::size_t period = axis->values * axis->inner;
  std::vector<SweepPart> parts;
  std::set<std::string> seen;
  for (std::size_t value = 0; value < axis->values; ++value) {
    std::string text = value_text(trials[value * axis->inner], which);
    if (!seen.insert(text).second) return std::nullopt;
    SweepPart part = new_part(field, std::move(text));
    part.trials = trials.only(StridedPositions{value * axis->inner, axis->inner, period, trials.size() / period});
    parts.push_back(std::move(part));
  }
  return parts;
}

// Any field: every trial made once, its position kept in its part.
std::vector<SweepPart> walked_parts(const SweepTrials& trials, std::string_view field, const Field& which) {
  std::vector<SweepPart> parts;
  std::vector<std::vector<std::size_t>> positions;
  std::map<std::string, std::size_t> index_of_value;
  for (std::size_t position = 0; position < trials.size(); ++position) {
    const std::optional<TrialSpec> trial = trials.made(position);
    if (!trial) continue;  // in no part: it never runs
    std::string value = value_text(*trial, which);
    auto [found, added] = index_of_value.try_emplace(value, parts.size());
    if (added) {
      parts.push_back(new_part(field, std::move(value)));
      positions.emplace_back();
    }
    positions[found->second].push_back(position);
  }
  for (std::size_t k = 0; k < parts.size(); ++k) parts[k].trials = trials.only(std::move(positions[k]));
  return parts;
}

}  // namespace

std::vector<SweepPart> split_sweep(const SweepSpec& sweep, std::string_view field) {
  // Each probe's value is the search's to choose, not a part's.
  if (sweep.search && (field == sweep.search->axis || (sweep.search->axis == search_axis::kWidth && field == "hidden")))
    throw InputError(
        fmt::format("--split-by {}: {}: axis: {} is the axis [search] moves along, which no part can "
                    "hold apart; split by another field (each part then searches its configurations)",
                    field, sweep.search->place, sweep.search->axis));
  const Field which = parse_field(field);
  std::optional<std::vector<SweepPart>> strided = strided_parts(sweep.trials, field, which);
  std::vector<SweepPart> parts = strided ? std::move(*strided) : walked_parts(sweep.trials, field, which);
  // A parameter no trial has is a typo: one part of every trial would hide it.
  if (which.kind == SplitField::param && parts.size() == 1 && parts.front().value == kNoParam)
    throw InputError(
        fmt::format("--split-by {}: no trial of the sweep has a parameter {} (a [params] key, or "
                    "params.{} in a section)",
                    field, which.param, which.param));
  // Values are names, numbers and widths, where only ':' and '+' (in
  // "synthetic:1x28x28", "1e+06") become '_': labels cannot collide. Checked
  // anyway, since two parts writing one file would mix their trials.
  std::map<std::string, std::string> value_of_label;
  for (const SweepPart& part : parts) {
    const auto [found, added] = value_of_label.emplace(part.label, part.value);
    if (!added)
      throw InputError(fmt::format(
          "--split-by {}: the values \"{}\" and \"{}\" would both write files labelled {}; split by another field",
          field, found->second, part.value, part.label));
  }
  return parts;
}

SelectedPart select_part(const SweepSpec& sweep, std::string_view field, int index) {
  std::vector<SweepPart> parts = split_sweep(sweep, field);
  const int count = static_cast<int>(parts.size());
  if (index < 0 || index >= count)
    throw InputError(count == 0 ? fmt::format("--part {}: the sweep has no trials", index)
                                : fmt::format("--part {}: the sweep has {} part{} by {} (0..{})", index, count,
                                              count == 1 ? "" : "s", field, count - 1));
  SelectedPart selected;
  selected.part = std::move(parts[static_cast<std::size_t>(index)]);
  selected.index = index;
  selected.count = count;
  selected.sweep = sweep;
  selected.sweep.trials = selected.part.trials;
  selected.sweep.part = selected.part.name();
  return selected;
}

SweepSpec select_named_part(const SweepSpec& sweep, std::string_view name) {
  const std::size_t equals = name.find('=');
  if (equals == std::string_view::npos)
    throw InputError(fmt::format("part \"{}\": expected FIELD=VALUE, e.g. dataset=mnist", name));
  const std::string_view field = name.substr(0, equals);
  const std::string_view value = name.substr(equals + 1);
  for (const SweepPart& part : split_sweep(sweep, field)) {
    if (part.value != value) continue;
    SweepSpec selected = sweep;
    selected.trials = part.trials;
    selected.part = part.name();
    return selected;
  }
  throw InputError(fmt::format("part \"{}\": no trial of the sweep has {} {}", name, field, value));
}

}  // namespace memsweep
