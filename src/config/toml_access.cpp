#include "config/toml_access.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace memsweep::config_detail {

Place place_of(const TomlValue& value, std::string key) {
  const toml::source_location where = value.location();
  return Place{where.file_name(), static_cast<int>(where.line()), std::move(key)};
}

void fail(const Place& place, const std::string& message) {
  throw ConfigError(place.file, place.line, place.key, message);
}

std::string describe(const TomlValue& value) {
  switch (value.type()) {
    case toml::value_t::boolean: return fmt::format("the boolean {}", value.as_boolean());
    case toml::value_t::integer: return fmt::format("the integer {}", value.as_integer());
    case toml::value_t::floating: return fmt::format("the number {}", value.as_floating());
    case toml::value_t::string: return fmt::format("the string \"{}\"", value.as_string().str);
    case toml::value_t::array: return "an array";
    case toml::value_t::table: return "a table";
    case toml::value_t::offset_datetime:
    case toml::value_t::local_datetime:
    case toml::value_t::local_date:
    case toml::value_t::local_time: return "a date or time";
    case toml::value_t::empty: return "nothing";
  }
  return "an unknown value";
}

std::int64_t expect_integer(const TomlValue& value, const Place& place, std::int64_t min, std::int64_t max) {
  const std::string range = max == INT64_MAX ? fmt::format("≥ {}", min) : fmt::format("from {} to {}", min, max);
  if (!value.is_integer()) fail(place, fmt::format("expected a whole number {}, found {}", range, describe(value)));
  const std::int64_t number = value.as_integer();
  if (number < min || number > max) fail(place, fmt::format("expected a whole number {}, found {}", range, number));
  return number;
}

double expect_number(const TomlValue& value, const Place& place) {
  double number = 0.0;
  if (value.is_floating())
    number = value.as_floating();
  else if (value.is_integer())
    number = static_cast<double>(value.as_integer());
  else
    fail(place, fmt::format("expected a number, found {}", describe(value)));
  if (!std::isfinite(number)) fail(place, fmt::format("expected a finite number, found {}", number));
  return number;
}

const std::string& expect_string(const TomlValue& value, const Place& place) {
  if (!value.is_string()) fail(place, fmt::format("expected a string, found {}", describe(value)));
  return value.as_string().str;
}

const TomlTable& expect_table(const TomlValue& value, const Place& place) {
  if (!value.is_table()) fail(place, fmt::format("expected a table, found {}", describe(value)));
  return value.as_table();
}

const TomlArray& expect_array(const TomlValue& value, const Place& place) {
  if (!value.is_array()) fail(place, fmt::format("expected an array, found {}", describe(value)));
  return value.as_array();
}

void reject_unknown_keys(const TomlTable& table, const Place& table_place,
                         const std::vector<std::string_view>& allowed) {
  for (const auto& [key, value] : table) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    const std::string dotted = table_place.key.empty() ? key : table_place.key + "." + key;
    fail(place_of(value, dotted), fmt::format("unknown key; expected one of: {}", fmt::join(allowed, ", ")));
  }
}

}  // namespace memsweep::config_detail
