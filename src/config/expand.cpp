#include "config/expand.hpp"
#include "config/program_fields.hpp"

#include "memsweep/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace memsweep::config_detail {
namespace {

// `depth` and `width` are not trial fields: together they make `hidden`.
constexpr std::string_view kDepth = "depth";
constexpr std::string_view kWidth = "width";

// A [params] value is whatever its program reads: real and whole numbers both.
bool is_real_field(std::string_view name) {
  return name == "learning_rate" || name == "momentum" || name == "beta1" || name == "beta2" || name == "epsilon" ||
         name.starts_with("params.");
}
bool is_whole_field(std::string_view name) {
  return name == "epochs" || name == "batch_size" || name == "seed" || name == kDepth || name == kWidth ||
         name.starts_with("params.");
}

std::vector<std::string_view> section_keys(std::initializer_list<std::string_view> extra) {
  std::vector<std::string_view> keys = trial_field_names();
  keys.insert(keys.end(), extra.begin(), extra.end());
  return keys;
}

std::string dotted(const Place& parent, std::string_view key) { return fmt::format("{}.{}", parent.key, key); }

struct SectionEntry {
  std::string name;  // a field, or a key of env or params: "params.dropout"
  const TomlValue* value;
  Place place;
};

// The section's keys, with `env` and `params` opened into an entry per key,
// since each of their keys is a field of its own. `example` shows the
// section's way of writing one, for the message when they are not tables.
std::vector<SectionEntry> section_entries(const TomlTable& section, const Place& section_place,
                                          std::string_view example) {
  std::vector<SectionEntry> entries;
  for (const auto& [key, value] : section) {
    const Place place = place_of(value, dotted(section_place, key));
    if (!is_keyed_field(key)) {
      entries.push_back({key, &value, place});
      continue;
    }
    if (!value.is_table())
      fail(place,
           fmt::format("expected a table of {}, one key each (e.g. {}), found {}",
                       key == "env" ? "environment variables" : "parameters",
                       fmt::format(fmt::runtime(example), key == "env" ? "env.OMP_NUM_THREADS" : "params.dropout",
                                   key == "env" ? "\"1\"" : "0.1"),
                       describe(value)));
    for (const auto& [name, setting] : value.as_table()) {
      const Place at = place_of(setting, dotted(place, name));
      entries.push_back({keyed_field_name(key, name, at), &setting, at});
    }
  }
  return entries;
}

// Checks a value of `name`, where depth and width are checked as the hidden
// lists they build.
void check_value(std::string_view name, const FieldValue& field) {
  if (name == kDepth)
    expect_integer(field.value, field.place, 1, kMaxHiddenLayers);
  else if (name == kWidth)
    expect_integer(field.value, field.place, 1, kMaxLayerWidth);
  else
    check_field_value(name, field);
}

FieldValue hidden_of(int depth, const std::vector<int>& widths, const Place& place) {
  TomlArray layers;
  for (int layer = 0; layer < depth; ++layer) layers.emplace_back(widths[static_cast<std::size_t>(layer)]);
  return FieldValue{TomlValue(std::move(layers)), place};
}

// Both or neither of depth and width, and not together with hidden.
void check_depth_width_pair(const TomlTable& section, const Place& section_place) {
  const bool depth = section.count(std::string(kDepth)) > 0;
  const bool width = section.count(std::string(kWidth)) > 0;
  if (depth != width) {
    const auto& present = section.at(std::string(depth ? kDepth : kWidth));
    fail(place_of(present, dotted(section_place, depth ? kDepth : kWidth)),
         fmt::format("`depth` and `width` go together (hidden = depth layers of width units); add `{}`",
                     depth ? kWidth : kDepth));
  }
  if (depth && section.count("hidden") > 0)
    fail(place_of(section.at("hidden"), dotted(section_place, "hidden")),
         "give either `hidden` or `depth` and `width`, not both");
}

// ---------------------------------------------------------------- grid

struct GridAxis {
  std::string name;
  int line = 0;
  std::vector<FieldValue> values;
};

GridAxis grid_axis(const std::string& name, const TomlValue& list, const Place& grid_place) {
  const Place place = place_of(list, dotted(grid_place, name));
  const TomlArray& items = expect_array(list, place);
  if (items.empty()) fail(place, "expected a non-empty array of values to combine");
  GridAxis axis{name, place.line, {}};
  for (const TomlValue& item : items) {
    FieldValue value{item, place};
    check_value(name, value);
    axis.values.push_back(std::move(value));
  }
  return axis;
}

// The depth × width pairs as one axis of hidden lists, where depth stands.
GridAxis depth_width_axis(const TomlTable& grid, const Place& grid_place) {
  const GridAxis depths = grid_axis(std::string(kDepth), grid.at(std::string(kDepth)), grid_place);
  const GridAxis widths = grid_axis(std::string(kWidth), grid.at(std::string(kWidth)), grid_place);
  GridAxis hidden{"hidden", std::min(depths.line, widths.line), {}};
  for (const FieldValue& depth : depths.values)
    for (const FieldValue& width : widths.values) {
      const int layers = static_cast<int>(depth.value.as_integer());
      hidden.values.push_back(hidden_of(
          layers, std::vector<int>(static_cast<std::size_t>(layers), static_cast<int>(width.value.as_integer())),
          depth.place));
    }
  return hidden;
}

// ---------------------------------------------------------------- random

enum class Distribution { uniform, log_uniform, int_uniform, choice };

struct RandomField {
  std::string name;
  Place place;
  std::optional<Distribution> distribution;  // nullopt: a fixed value
  FieldValue fixed;                          // the fixed value
  double low = 0.0, high = 0.0;              // uniform, log_uniform
  std::vector<FieldValue> choices;
  // int_uniform: integers, since a double holds them exactly only up to
  // 2^53, and INT64_MAX rounds up to 2^63, which no int64 holds.
  std::int64_t whole_low = 0, whole_high = 0;
};

std::optional<Distribution> distribution_named(std::string_view name) {
  if (name == "uniform") return Distribution::uniform;
  if (name == "log_uniform") return Distribution::log_uniform;
  if (name == "int_uniform") return Distribution::int_uniform;
  if (name == "choice") return Distribution::choice;
  return std::nullopt;
}

// A table with one key naming a distribution; anything else is a fixed value
// (so `synthetic = { shape = … }` stays a value).
bool is_distribution(const TomlValue& value) {
  return value.is_table() && value.as_table().size() == 1 &&
         distribution_named(value.as_table().begin()->first).has_value();
}

const TomlArray& bounds_pair(const TomlValue& range, const Place& place, const std::string& field) {
  const TomlArray& pair = expect_array(range, place);
  if (pair.size() != 2) fail(place, fmt::format("expected [low, high], found {} values", pair.size()));
  for (const TomlValue& end : pair) check_value(field, FieldValue{end, place});
  return pair;
}

std::pair<double, double> real_bounds(const TomlValue& range, const Place& place, const std::string& field) {
  const TomlArray& pair = bounds_pair(range, place, field);
  const double low = expect_number(pair[0], place);
  const double high = expect_number(pair[1], place);
  if (!(low < high)) fail(place, fmt::format("expected low < high, found [{}, {}]", low, high));
  return {low, high};
}

std::pair<std::int64_t, std::int64_t> whole_bounds(const TomlValue& range, const Place& place,
                                                   const std::string& field) {
  const TomlArray& pair = bounds_pair(range, place, field);
  const std::int64_t low = expect_integer(pair[0], place, INT64_MIN, INT64_MAX);
  const std::int64_t high = expect_integer(pair[1], place, INT64_MIN, INT64_MAX);
  if (low > high) fail(place, fmt::format("expected low ≤ high, found [{}, {}]", low, high));
  return {low, high};
}

RandomField random_field(const std::string& name, const TomlValue& spec, const Place& random_place) {
  RandomField field{name, place_of(spec, dotted(random_place, name)), std::nullopt, {}, 0.0, 0.0, {}};
  if (!is_distribution(spec)) {
    field.fixed = FieldValue{spec, field.place};
    check_value(name, field.fixed);
    return field;
  }
  const auto& [kind_name, argument] = *spec.as_table().begin();
  const Distribution kind = *distribution_named(kind_name);
  const bool real = is_real_field(name), whole = is_whole_field(name);
  if ((kind == Distribution::uniform || kind == Distribution::log_uniform) && !real)
    fail(field.place,
         fmt::format("`{}` draws real numbers, and {} takes {}; use {}", kind_name, name,
                     whole ? "whole numbers" : "other values", whole ? "int_uniform or choice" : "choice"));
  if (kind == Distribution::int_uniform && !whole)
    fail(field.place, fmt::format("`int_uniform` draws whole numbers, and {} does not take them; use {}", name,
                                  real ? "uniform, log_uniform or choice" : "choice"));
  field.distribution = kind;
  if (kind == Distribution::choice) {
    const TomlArray& options = expect_array(argument, field.place);
    if (options.empty()) fail(field.place, "expected a non-empty array to choose from");
    field.choices.reserve(options.size());  // no copies as it grows: a choice may hold 10^5 values
    for (const TomlValue& option : options) {
      field.choices.push_back(FieldValue{option, field.place});
      check_value(name, field.choices.back());
    }
    return field;
  }
  if (kind == Distribution::int_uniform) {
    std::tie(field.whole_low, field.whole_high) = whole_bounds(argument, field.place, name);
    return field;
  }
  std::tie(field.low, field.high) = real_bounds(argument, field.place, name);
  if (kind == Distribution::log_uniform && !(field.low > 0.0))
    fail(field.place, fmt::format("log_uniform needs low > 0, found {}", field.low));
  return field;
}

FieldValue draw(const RandomField& field, ShortStreamRng& rng) {
  if (!field.distribution) return field.fixed;
  switch (*field.distribution) {
    case Distribution::uniform: return FieldValue{TomlValue(rng.uniform(field.low, field.high)), field.place};
    case Distribution::log_uniform:
      return FieldValue{TomlValue(std::exp(rng.uniform(std::log(field.low), std::log(field.high)))), field.place};
    case Distribution::int_uniform:
      return FieldValue{TomlValue(rng.uniform_int(field.whole_low, field.whole_high)), field.place};
    case Distribution::choice: {
      const auto last = static_cast<std::int64_t>(field.choices.size()) - 1;
      return field.choices[static_cast<std::size_t>(rng.uniform_int(0, last))];
    }
  }
  return field.fixed;
}

// A stream per (draw, field) makes a few draws: a hidden list's widths at most.
ShortStreamRng field_stream(std::uint64_t sweep_seed, std::size_t draw_index, std::string_view field) {
  return ShortStreamRng(mix_seed(mix_seed(sweep_seed, draw_index), stable_hash(field)));
}

}  // namespace

TrialDraft table_draft(const TomlTable& table, const Place& table_place) {
  reject_unknown_keys(table, table_place, trial_field_names());
  TrialDraft draft;
  for (const SectionEntry& entry : section_entries(table, table_place, "{} = {}")) {
    FieldValue field{*entry.value, entry.place};
    check_field_value(entry.name, field);
    draft.emplace(entry.name, std::move(field));
  }
  return draft;
}

std::uint64_t grid_size(const TomlTable& grid, const Place& grid_place) {
  reject_unknown_keys(grid, grid_place, section_keys({kDepth, kWidth}));
  check_depth_width_pair(grid, grid_place);
  // Exact while it fits in 64 bits; past that, only its order of magnitude
  // is of use to anyone.
  std::uint64_t total = 1;
  double approximate = 1.0;
  bool overflowed = false;
  bool any = false;
  for (const SectionEntry& entry : section_entries(grid, grid_place, "{} = [{}]")) {
    const TomlArray& items = expect_array(*entry.value, entry.place);
    if (items.empty()) fail(entry.place, "expected a non-empty array of values to combine");
    any = true;
    overflowed = overflowed || __builtin_mul_overflow(total, items.size(), &total);
    approximate *= static_cast<double>(items.size());
  }
  if (!any) fail(grid_place, "expected at least one field to vary, e.g. batch_size = [16, 64]");
  if (overflowed)
    fail(grid_place, fmt::format("the grid expands to about {:.2g} trials, more than {}; split the sweep", approximate,
                                 kMaxGridTrials));
  if (total > kMaxGridTrials)
    fail(grid_place,
         fmt::format("the grid expands to {} trials, more than {}; split the sweep", total, kMaxGridTrials));
  return total;
}

void grid_drafts(const TomlTable& grid, const Place& grid_place, const DraftSink& sink) {
  const std::uint64_t total = grid_size(grid, grid_place);  // before depth x width is built
  std::vector<GridAxis> axes;
  for (const SectionEntry& entry : section_entries(grid, grid_place, "{} = [{}]"))
    if (entry.name != kDepth && entry.name != kWidth) axes.push_back(grid_axis(entry.name, *entry.value, grid_place));
  if (grid.count(std::string(kDepth)) > 0) axes.push_back(depth_width_axis(grid, grid_place));
  // The file's order: the first axis written varies slowest, as nested loops would.
  std::stable_sort(axes.begin(), axes.end(), [](const GridAxis& a, const GridAxis& b) { return a.line < b.line; });

  for (std::uint64_t index = 0; index < total; ++index) {
    DraftWithOrigin trial{{}, Place{grid_place.file, grid_place.line, fmt::format("grid[{}]", index)}};
    std::uint64_t rest = index;
    for (auto axis = axes.rbegin(); axis != axes.rend(); ++axis) {
      trial.draft.insert_or_assign(axis->name, axis->values[rest % axis->values.size()]);
      rest /= axis->values.size();
    }
    sink(std::move(trial));
  }
}

void random_drafts(const TomlTable& random, const Place& random_place, std::uint64_t sweep_seed,
                   const DraftSink& sink) {
  reject_unknown_keys(random, random_place, section_keys({"count", kDepth, kWidth}));
  const auto count_entry = random.find("count");
  if (count_entry == random.end())
    fail(random_place,
         fmt::format("missing key `count`: expected the number of trials to draw, 1 to {}", kMaxRandomCount));
  const auto count = static_cast<std::size_t>(expect_integer(
      count_entry->second, place_of(count_entry->second, dotted(random_place, "count")), 1, kMaxRandomCount));
  check_depth_width_pair(random, random_place);

  std::vector<RandomField> fields;
  for (const SectionEntry& entry : section_entries(random, random_place, "{} = {{ choice = [{}] }}"))
    if (entry.name != "count") fields.push_back(random_field(entry.name, *entry.value, random_place));
  const auto find = [&](std::string_view name) -> const RandomField* {
    for (const RandomField& field : fields)
      if (field.name == name) return &field;
    return nullptr;
  };
  const RandomField* depth = find(kDepth);
  const RandomField* width = find(kWidth);

  for (std::size_t index = 0; index < count; ++index) {
    DraftWithOrigin trial{{}, Place{random_place.file, random_place.line, fmt::format("random[{}]", index)}};
    for (const RandomField& field : fields) {
      if (&field == depth || &field == width) continue;
      ShortStreamRng rng = field_stream(sweep_seed, index, field.name);
      trial.draft.insert_or_assign(field.name, draw(field, rng));
    }
    if (depth != nullptr) {
      // Each layer gets its own width, as in the source paper's random search.
      ShortStreamRng depth_rng = field_stream(sweep_seed, index, kDepth);
      ShortStreamRng width_rng = field_stream(sweep_seed, index, kWidth);
      const int layers = static_cast<int>(draw(*depth, depth_rng).value.as_integer());
      std::vector<int> widths;
      for (int layer = 0; layer < layers; ++layer)
        widths.push_back(static_cast<int>(draw(*width, width_rng).value.as_integer()));
      trial.draft.insert_or_assign("hidden", hidden_of(layers, widths, depth->place));
    }
    sink(std::move(trial));
  }
}

}  // namespace memsweep::config_detail
