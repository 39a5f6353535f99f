#include "config/expand.hpp"
#include "config/program_fields.hpp"

#include "memsweep/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace memsweep::config::detail {
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
  return name == "epochs" || name == "batch_size" || name == "seed" || name == "recompute_every" || name == kDepth ||
         name == kWidth || name.starts_with("params.");
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

// A value as `plan` prints a section's fields: 0.001, 64, "mnist", [128, 64].
std::string value_text(const TomlValue& value) {
  if (value.is_integer()) return std::to_string(value.as_integer());
  if (value.is_floating()) return fmt::format("{}", value.as_floating());
  if (value.is_boolean()) return value.as_boolean() ? "true" : "false";
  if (value.is_string()) return value.as_string().str;
  if (value.is_array()) {
    std::vector<std::string> items;
    for (const TomlValue& item : value.as_array()) items.push_back(value_text(item));
    return fmt::format("[{}]", fmt::join(items, ", "));
  }
  if (value.is_table()) {
    std::vector<std::string> items;
    for (const auto& [key, item] : value.as_table()) items.push_back(fmt::format("{} = {}", key, value_text(item)));
    return fmt::format("{{ {} }}", fmt::join(items, ", "));
  }
  return describe(value);
}

// "3 values: 16, 32, 64", or the first and last of many.
template <typename Texts>
std::string listed_values(const Texts& texts) {
  constexpr std::size_t kShown = 6;
  const std::vector<std::string> all(texts.begin(), texts.end());
  const std::string count = all.size() == 1 ? "1 value" : fmt::format("{} values", all.size());
  if (all.size() <= kShown) return fmt::format("{}: {}", count, fmt::join(all, ", "));
  return fmt::format("{}: {}, {}, {} … {}", count, all[0], all[1], all[2], all.back());
}

std::string distribution_text(const RandomField& field) {
  if (!field.distribution) return fmt::format("fixed: {}", value_text(field.fixed.value));
  switch (*field.distribution) {
    case Distribution::uniform: return fmt::format("uniform [{}, {}]", field.low, field.high);
    case Distribution::log_uniform: return fmt::format("log_uniform [{}, {}]", field.low, field.high);
    case Distribution::int_uniform: return fmt::format("int_uniform [{}, {}]", field.whole_low, field.whole_high);
    case Distribution::choice: {
      std::vector<std::string> texts;
      for (const FieldValue& choice : field.choices) texts.push_back(value_text(choice.value));
      return "choice of " + listed_values(texts);
    }
  }
  return "";
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

namespace {

bool is_number_or_numbers(const TomlValue& value) {
  if (value.is_integer() || value.is_floating()) return true;
  if (!value.is_array()) return false;
  const TomlArray& items = value.as_array();
  return std::all_of(items.begin(), items.end(), [](const TomlValue& item) { return is_number_or_numbers(item); });
}

// Which of a field's values a cover gives (Cover): each, or, for a field of
// numbers under Cover::kinds, kCoveredNumbers of them from first to last.
std::vector<std::size_t> covered(const std::vector<FieldValue>& values, Cover which) {
  std::vector<std::size_t> indices;
  const bool thinned = which == Cover::kinds && values.size() > kCoveredNumbers &&
                       std::all_of(values.begin(), values.end(),
                                   [](const FieldValue& value) { return is_number_or_numbers(value.value); });
  const std::size_t count = thinned ? kCoveredNumbers : values.size();
  for (std::size_t k = 0; k < count; ++k) indices.push_back(thinned ? k * (values.size() - 1) / (count - 1) : k);
  return indices;
}

class TableSection final : public TrialSection {
 public:
  explicit TableSection(const TomlArray& tables) {
    drafts_.reserve(tables.size());
    for (std::size_t i = 0; i < tables.size(); ++i) {
      const TomlValue& table = tables[i];
      const Place at = place_of(table, fmt::format("trial[{}]", i));
      drafts_.push_back({table_draft(expect_table(table, at), at), at});
    }
  }
  std::uint64_t size() const override { return drafts_.size(); }
  DraftWithOrigin draft(std::uint64_t index) const override { return drafts_[static_cast<std::size_t>(index)]; }
  void cover(Cover, const EachDraft& each) const override {
    for (const DraftWithOrigin& draft : drafts_) each(draft);
  }
  std::string name() const override { return "[[trial]]"; }
  std::vector<FieldSummary> fields() const override {
    std::map<std::string, std::set<std::string>> values;
    for (const DraftWithOrigin& trial : drafts_)
      for (const auto& [field, value] : trial.draft) values[field].insert(value_text(value.value));
    std::vector<FieldSummary> summaries;
    for (const auto& [field, texts] : values) summaries.push_back({field, listed_values(texts)});
    return summaries;
  }

 private:
  std::vector<DraftWithOrigin> drafts_;
};

class GridSection final : public TrialSection {
 public:
  GridSection(const TomlTable& grid, const Place& grid_place) : place_(grid_place) {
    size_ = grid_size(grid, grid_place);  // before depth x width is built
    for (const SectionEntry& entry : section_entries(grid, grid_place, "{} = [{}]"))
      if (entry.name != kDepth && entry.name != kWidth)
        axes_.push_back(grid_axis(entry.name, *entry.value, grid_place));
    if (grid.count(std::string(kDepth)) > 0) axes_.push_back(depth_width_axis(grid, grid_place));
    // The file's order: the first axis written varies slowest, as nested loops would.
    std::stable_sort(axes_.begin(), axes_.end(), [](const GridAxis& a, const GridAxis& b) { return a.line < b.line; });
  }
  std::uint64_t size() const override { return size_; }
  DraftWithOrigin draft(std::uint64_t index) const override {
    DraftWithOrigin trial{{}, Place{place_.file, place_.line, fmt::format("grid[{}]", index)}};
    std::uint64_t rest = index;
    for (auto axis = axes_.rbegin(); axis != axes_.rend(); ++axis) {
      trial.draft.insert_or_assign(axis->name, axis->values[rest % axis->values.size()]);
      rest /= axis->values.size();
    }
    return trial;
  }
  void cover(Cover which, const EachDraft& each) const override {
    std::uint64_t inner = size_;
    for (const GridAxis& axis : axes_) {
      inner /= axis.values.size();
      for (const std::size_t value : covered(axis.values, which)) each(draft(value * inner));
    }
  }
  std::string name() const override { return "[grid]"; }
  std::vector<FieldSummary> fields() const override {
    std::vector<FieldSummary> summaries;
    for (const GridAxis& axis : axes_) {
      std::vector<std::string> texts;
      for (const FieldValue& value : axis.values) texts.push_back(value_text(value.value));
      summaries.push_back({axis.name, listed_values(texts)});
    }
    return summaries;
  }
  std::optional<AxisLayout> axis_layout(std::string_view field) const override {
    std::uint64_t inner = size_;
    for (const GridAxis& axis : axes_) {
      inner /= axis.values.size();
      if (axis.name == field) return AxisLayout{axis.values.size(), inner};
    }
    return std::nullopt;
  }

 private:
  Place place_;
  std::uint64_t size_ = 0;
  std::vector<GridAxis> axes_;
};

class RandomSection final : public TrialSection {
 public:
  RandomSection(const TomlTable& random, const Place& random_place, std::uint64_t sweep_seed)
      : place_(random_place), seed_(sweep_seed) {
    reject_unknown_keys(random, random_place, section_keys({"count", kDepth, kWidth}));
    const auto count_entry = random.find("count");
    if (count_entry == random.end())
      fail(random_place,
           fmt::format("missing key `count`: expected the number of trials to draw, 1 to {}", kMaxRandomCount));
    count_ = static_cast<std::uint64_t>(expect_integer(
        count_entry->second, place_of(count_entry->second, dotted(random_place, "count")), 1, kMaxRandomCount));
    check_depth_width_pair(random, random_place);
    for (const SectionEntry& entry : section_entries(random, random_place, "{} = {{ choice = [{}] }}"))
      if (entry.name != "count") fields_.push_back(random_field(entry.name, *entry.value, random_place));
    for (std::size_t k = 0; k < fields_.size(); ++k) {
      if (fields_[k].name == kDepth) depth_ = k;
      if (fields_[k].name == kWidth) width_ = k;
    }
  }
  std::uint64_t size() const override { return count_; }
  DraftWithOrigin draft(std::uint64_t index) const override { return drawn(index, std::nullopt); }
  void cover(Cover which, const EachDraft& each) const override {
    each(drawn(0, std::nullopt));
    for (std::size_t k = 0; k < fields_.size(); ++k)
      for (const std::size_t choice : covered(fields_[k].choices, which)) each(drawn(0, Forced{k, choice}));
  }
  std::string name() const override { return "[random]"; }
  std::vector<FieldSummary> fields() const override {
    std::vector<FieldSummary> summaries;
    for (const RandomField& field : fields_) summaries.push_back({field.name, distribution_text(field)});
    return summaries;
  }

 private:
  // One field's draw replaced by one of its choices (cover()).
  struct Forced {
    std::size_t field = 0;
    std::size_t choice = 0;
  };
  FieldValue draw_of(std::size_t k, ShortStreamRng& rng, const std::optional<Forced>& forced) const {
    if (forced && forced->field == k) return fields_[k].choices[forced->choice];
    return draw(fields_[k], rng);
  }
  DraftWithOrigin drawn(std::uint64_t index, const std::optional<Forced>& forced) const {
    DraftWithOrigin trial{{}, Place{place_.file, place_.line, fmt::format("random[{}]", index)}};
    for (std::size_t k = 0; k < fields_.size(); ++k) {
      if (k == depth_ || k == width_) continue;
      ShortStreamRng rng = field_stream(seed_, index, fields_[k].name);
      trial.draft.insert_or_assign(fields_[k].name, draw_of(k, rng, forced));
    }
    if (depth_ != kNone) {
      // Each layer gets its own width, as in the source paper's random search.
      ShortStreamRng depth_rng = field_stream(seed_, index, kDepth);
      ShortStreamRng width_rng = field_stream(seed_, index, kWidth);
      const int layers = static_cast<int>(draw_of(depth_, depth_rng, forced).value.as_integer());
      std::vector<int> widths;
      for (int layer = 0; layer < layers; ++layer)
        widths.push_back(static_cast<int>(draw_of(width_, width_rng, forced).value.as_integer()));
      trial.draft.insert_or_assign("hidden", hidden_of(layers, widths, fields_[depth_].place));
    }
    return trial;
  }

  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  Place place_;
  std::uint64_t seed_ = 0;
  std::uint64_t count_ = 0;
  std::vector<RandomField> fields_;
  std::size_t depth_ = kNone, width_ = kNone;
};

}  // namespace

std::unique_ptr<TrialSection> table_section(const TomlArray& tables) { return std::make_unique<TableSection>(tables); }

std::unique_ptr<TrialSection> grid_section(const TomlTable& grid, const Place& grid_place) {
  return std::make_unique<GridSection>(grid, grid_place);
}

std::unique_ptr<TrialSection> random_section(const TomlTable& random, const Place& random_place,
                                             std::uint64_t sweep_seed) {
  return std::make_unique<RandomSection>(random, random_place, sweep_seed);
}

}  // namespace memsweep::config::detail
