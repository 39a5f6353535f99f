// [search]: which axis, over which range, under which limits, how.

#include "config/search_section.hpp"

#include "config/trial_fields.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace memsweep {

std::string_view strategy_name(SearchStrategy strategy) {
  switch (strategy) {
    case SearchStrategy::model: return "model";
    case SearchStrategy::bisect: return "bisect";
    case SearchStrategy::doubling: return "double";
  }
  return "unknown";
}

std::string_view search_device_name(SearchDevice device) { return device == SearchDevice::gpu ? "gpu" : "host"; }

std::optional<SearchStrategy> parse_strategy(std::string_view name) {
  for (const SearchStrategy strategy : {SearchStrategy::model, SearchStrategy::bisect, SearchStrategy::doubling})
    if (strategy_name(strategy) == name) return strategy;
  return std::nullopt;
}

namespace config::detail {
namespace {

const std::vector<std::string_view> kSearchKeys{"axis",         "range",    "limit",  "resolution", "max_trials",
                                                "probe_epochs", "strategy", "verify", "device"};

// A params.NAME axis goes into a program's command as text: any whole
// number a double holds exactly, so that its JSON reads back the same.
constexpr std::int64_t kMaxParamsAxisValue = std::int64_t{1} << 53;

// The largest value an axis may take: the field's own bound.
std::optional<std::int64_t> axis_maximum(std::string_view axis) {
  if (axis == search_axis::kBatchSize) return kMaxBatchSize;
  if (axis == search_axis::kEpochs) return kMaxEpochs;
  if (axis == search_axis::kWidth) return kMaxLayerWidth;
  if (axis.starts_with(search_axis::kParamsPrefix) && axis.size() > search_axis::kParamsPrefix.size())
    return kMaxParamsAxisValue;
  return std::nullopt;
}

Place key_place(const TomlTable& table, const Place& table_place, std::string_view key) {
  const auto it = table.find(std::string(key));
  if (it == table.end()) return Place{table_place.file, table_place.line, "search." + std::string(key)};
  Place place = place_of(it->second, "search." + std::string(key));
  if (place.file.empty()) place.file = table_place.file;
  return place;
}

std::uint64_t limit_bytes(const TomlValue& value, const Place& place, SearchDevice device) {
  if (device == SearchDevice::gpu && value.is_string() && value.as_string().str == "device")
    return TrialSpec::kWholeDevice;
  std::optional<std::uint64_t> bytes;
  if (value.is_integer() && !beyond_64_bits(value) && value.as_integer() > 0)
    bytes = static_cast<std::uint64_t>(value.as_integer());
  else if (value.is_string() && !is_too_large_byte_size(value.as_string().str))
    bytes = parse_byte_size(value.as_string().str);
  if (!bytes || *bytes == 0 || *bytes > kMaxByteSize)
    fail(place, fmt::format("expected a memory size of at most {} ({}){}, or a list of them; found {}",
                            kMaxByteSizeText, kByteSizeHelp,
                            device == SearchDevice::gpu ? ", or \"device\" (the whole GPU)" : "", describe(value)));
  return *bytes;
}

std::vector<std::uint64_t> read_limits(const TomlValue& value, const Place& place, SearchDevice device) {
  std::vector<std::uint64_t> limits;
  if (!value.is_array()) return {limit_bytes(value, place, device)};
  const TomlArray& items = value.as_array();
  if (items.empty()) fail(place, "expected a memory size, or a non-empty list of them; found an empty list");
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::uint64_t bytes =
        limit_bytes(items[i], Place{place.file, place.line, fmt::format("{}[{}]", place.key, i)}, device);
    if (std::find(limits.begin(), limits.end(), bytes) != limits.end())
      fail(place, fmt::format("the limit {} is listed twice; expected each limit once",
                              bytes == TrialSpec::kWholeDevice ? std::string("\"device\"") : format_byte_size(bytes)));
    limits.push_back(bytes);
  }
  return limits;
}

void read_range(const TomlValue& value, const Place& place, std::int64_t maximum, SearchSpec& search) {
  const TomlArray& ends = expect_array(value, place);
  if (ends.size() != 2)
    fail(place, fmt::format("expected [smallest, largest], two whole numbers; found {} values", ends.size()));
  search.low = expect_integer(ends[0], Place{place.file, place.line, place.key + "[0]"}, 1, maximum);
  search.high = expect_integer(ends[1], Place{place.file, place.line, place.key + "[1]"}, 1, maximum);
  if (search.high < search.low)
    fail(place, fmt::format("the range [{}, {}] is empty; expected the smallest value first, then the largest",
                            search.low, search.high));
}

}  // namespace

std::optional<SearchSpec> read_search_section(const TomlTable& top, const std::string& file) {
  const auto it = top.find("search");
  if (it == top.end()) return std::nullopt;
  Place table_place = place_of(it->second, "search");
  if (table_place.file.empty()) table_place.file = file;
  const TomlTable& table = expect_table(it->second, table_place);
  reject_unknown_keys(table, table_place, kSearchKeys);
  const auto required = [&](std::string_view key, std::string_view what) -> const TomlValue& {
    const auto found = table.find(std::string(key));
    if (found == table.end())
      fail(Place{table_place.file, table_place.line, "search"}, fmt::format("expected `{}` ({})", key, what));
    return found->second;
  };

  SearchSpec search;
  search.place = fmt::format("{}:{}: [search]", table_place.file, table_place.line);
  search.line = table_place.line;
  const Place axis_place = key_place(table, table_place, "axis");
  search.axis = expect_string(required("axis", "the trial field to search along"), axis_place);
  const std::optional<std::int64_t> maximum = axis_maximum(search.axis);
  if (!maximum)
    fail(axis_place, fmt::format("expected an integer trial field to search along: batch_size, epochs, width (every "
                                 "hidden layer's), or params.NAME; found \"{}\"",
                                 search.axis));
  read_range(required("range", "[smallest, largest]"), key_place(table, table_place, "range"), *maximum, search);
  if (const auto found = table.find("device"); found != table.end()) {
    const Place place = key_place(table, table_place, "device");
    const std::string& name = expect_string(found->second, place);
    if (name != "host" && name != "gpu")
      fail(place, fmt::format("expected \"host\" (the trial's memory) or \"gpu\" (its GPU's), found {}",
                              describe(found->second)));
    search.device = name == "gpu" ? SearchDevice::gpu : SearchDevice::host;
  }
  search.limits = read_limits(required("limit", "the memory each trial may use"),
                              key_place(table, table_place, "limit"), search.device);
  if (const auto found = table.find("resolution"); found != table.end()) {
    const Place place = key_place(table, table_place, "resolution");
    search.resolution = expect_number(found->second, place);
    if (search.resolution < 0.0 || search.resolution >= 1.0)
      fail(place,
           fmt::format("expected a fraction from 0 to below 1 (0.02: within 2 %), found {}", describe(found->second)));
  }
  if (const auto found = table.find("max_trials"); found != table.end())
    search.max_trials =
        static_cast<int>(expect_integer(found->second, key_place(table, table_place, "max_trials"), 1, 1000));
  if (const auto found = table.find("probe_epochs"); found != table.end())
    search.probe_epochs =
        static_cast<int>(expect_integer(found->second, key_place(table, table_place, "probe_epochs"), 1, kMaxEpochs));
  if (const auto found = table.find("verify"); found != table.end()) {
    if (!found->second.is_boolean())
      fail(key_place(table, table_place, "verify"),
           fmt::format("expected true or false, found {}", describe(found->second)));
    search.verify = found->second.as_boolean();
  }
  if (const auto found = table.find("strategy"); found != table.end()) {
    const Place place = key_place(table, table_place, "strategy");
    const std::optional<SearchStrategy> strategy = parse_strategy(expect_string(found->second, place));
    if (!strategy) fail(place, fmt::format("expected one of {}, found {}", kStrategyNames, describe(found->second)));
    search.strategy = *strategy;
  }
  return search;
}

namespace {

// Where `table` sets the axis (a field, or a key of its params), if it does.
const TomlValue* axis_in(const TomlTable& table, const SearchSpec& search) {
  if (search.axis.starts_with(search_axis::kParamsPrefix)) {
    const auto params = table.find("params");
    if (params == table.end() || !params->second.is_table()) return nullptr;
    const TomlTable& keys = params->second.as_table();
    const auto found = keys.find(search.axis.substr(search_axis::kParamsPrefix.size()));
    return found == keys.end() ? nullptr : &found->second;
  }
  const auto found = table.find(search.axis);
  return found == table.end() ? nullptr : &found->second;
}

void reject_axis_in(const TomlValue* value, const std::string& key, const std::string& file, const SearchSpec& search) {
  if (value == nullptr) return;
  Place place = place_of(*value, key);
  if (place.file.empty()) place.file = file;
  fail(place, fmt::format("{} is the axis of [search] ({}), which sets it for each probe; expected it left out of "
                          "[defaults], [[trial]], [grid] and [random]",
                          search.axis, search.place));
}

}  // namespace

void reject_axis_in_sections(const TomlTable& top, const SearchSpec& search, const std::string& file) {
  for (const std::string_view section : {"defaults", "grid", "random"}) {
    const auto it = top.find(std::string(section));
    if (it == top.end() || !it->second.is_table()) continue;
    reject_axis_in(axis_in(it->second.as_table(), search), fmt::format("{}.{}", section, search.axis), file, search);
  }
  const auto trials = top.find("trial");
  if (trials == top.end() || !trials->second.is_array()) return;
  const TomlArray& tables = trials->second.as_array();
  for (std::size_t i = 0; i < tables.size(); ++i)
    if (tables[i].is_table())
      reject_axis_in(axis_in(tables[i].as_table(), search), fmt::format("trial[{}].{}", i, search.axis), file, search);
}

void give_axis_its_low_end(TrialDraft& defaults, const SearchSpec& search) {
  // width sets every hidden layer: the configurations keep their own
  // depths, and their probes get the widths.
  if (search.axis == search_axis::kWidth) return;
  defaults[search.axis] = FieldValue{TomlValue(search.low), Place{search.place, 0, "search.range"}};
}

}  // namespace config::detail

TrialSpec search_trial(const TrialSpec& configuration, const SearchSpec& search, const SearchPoint& point) {
  TrialSpec trial = configuration;
  const auto value = point.value;
  const auto as_int = [&] { return static_cast<int>(value); };
  if (search.axis == search_axis::kBatchSize) {
    trial.batch_size = as_int();
  } else if (search.axis == search_axis::kEpochs) {
    trial.epochs = as_int();
  } else if (search.axis == search_axis::kWidth) {
    std::fill(trial.hidden.begin(), trial.hidden.end(), as_int());
  } else {
    const std::string name = search.axis.substr(search_axis::kParamsPrefix.size());
    const auto param =
        std::find_if(trial.params.begin(), trial.params.end(), [&](const auto& p) { return p.first == name; });
    const ParamValue text{std::to_string(value), std::to_string(value)};
    if (param == trial.params.end()) {
      trial.params.emplace_back(name, text);
      std::sort(trial.params.begin(), trial.params.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
    } else {
      param->second = text;
    }
  }
  if (!point.full && search.axis != search_axis::kEpochs) trial.epochs = std::min(trial.epochs, search.probe_epochs);
  // A GPU search's limit is the trial's GPU limit (held by a reserve: docs/search.md);
  // the host's limit, its budget. Either way the other limit stays as the file gives it.
  if (point.gpu)
    trial.gpu_limit_bytes = point.limit_bytes;
  else
    trial.mem_budget_bytes = std::min(trial.mem_budget_bytes.value_or(point.limit_bytes), point.limit_bytes);
  trial.search = point;
  trial.id = trial_id(trial);
  return trial;
}

}  // namespace memsweep
