#include "config/toml_access.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <vector>

namespace memsweep::config::detail {

namespace {

// The offset of every line's first byte in one parsed source, built once.
// toml11 3.7 counts the newlines from the start of the source each time a
// value's line is asked for, which made 10^5 [[trial]] tables take minutes.
struct LineIndex {
  std::weak_ptr<const std::vector<char>> source;  // weak: a new source at the same address is not this one
  std::vector<std::size_t> line_starts;
};

bool same_source(const LineIndex& index, const std::shared_ptr<const std::vector<char>>& source) {
  return !index.source.expired() && !index.source.owner_before(source) && !source.owner_before(index.source);
}

const LineIndex& line_index_of(const std::shared_ptr<const std::vector<char>>& source) {
  // One source is read at a time; each thread keeps its own.
  thread_local LineIndex index;
  if (same_source(index, source)) return index;
  index.source = source;
  index.line_starts.assign(1, 0);
  for (std::size_t offset = 0; offset < source->size(); ++offset)
    if ((*source)[offset] == '\n') index.line_starts.push_back(offset + 1);
  return index;
}

// toml11 copies the source's name into each region it makes, several for
// every character it lexes: a name past std::string's 15 inline characters
// (most paths) cost an allocation each time, a fifth of the parse. So the
// text goes to toml11 unnamed, and each source's name is kept here, once.
struct SourceName {
  std::weak_ptr<const std::vector<char>> source;
  std::string name;
};

std::vector<SourceName>& source_names() {
  thread_local std::vector<SourceName> names;  // the sources still alive, a few at most
  return names;
}

void remember_name(const std::shared_ptr<const std::vector<char>>& source, const std::string& name) {
  std::vector<SourceName>& names = source_names();
  std::erase_if(names, [](const SourceName& entry) { return entry.source.expired(); });
  names.push_back({source, name});
}

std::string name_of(const toml::detail::region& region) {
  for (const SourceName& entry : source_names()) {
    const auto& source = region.source();
    if (!entry.source.expired() && !entry.source.owner_before(source) && !source.owner_before(entry.source))
      return entry.name;
  }
  return region.name();
}

// 1-based, as toml11 counts.
int line_number(const toml::detail::region& region) {
  const auto offset = static_cast<std::size_t>(region.first() - region.begin());
  const std::vector<std::size_t>& starts = line_index_of(region.source()).line_starts;
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), offset) - starts.begin());
}

const toml::detail::region* file_region(const TomlValue& value) {
  const auto* region = dynamic_cast<const toml::detail::region*>(toml::detail::get_region(value));
  return region != nullptr && region->is_ok() ? region : nullptr;
}

// Whether TOML integer text (decimal with a sign, or 0x, 0o, 0b; `_`
// between digits) holds a number outside int64. Read again here, with
// from_chars, which says so; anything it cannot read is toml11's to judge.
bool integer_text_overflows(std::string_view written) {
  std::string digits;
  for (const char c : written)
    if (c != '_') digits.push_back(c);
  int base = 10;
  std::size_t skip = 0;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o' || digits[1] == 'b')) {
    base = digits[1] == 'x' ? 16 : digits[1] == 'o' ? 8 : 2;
    skip = 2;
  } else if (!digits.empty() && digits[0] == '+') {
    skip = 1;  // from_chars takes '-' only
  }
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(digits.data() + skip, digits.data() + digits.size(), number, base);
  return error == std::errc::result_out_of_range;
}

// The key of a value is only put together for the one refused: a grid axis
// may hold 10^5 values.
void reject_beyond_64_bits_in(const TomlValue& value, const std::function<std::string()>& key) {
  if (value.is_table()) {
    const std::string parent = key();
    // An entry, not a structured binding: clang 14 (the fuzz build's) cannot
    // capture a binding in a lambda.
    for (const auto& entry : value.as_table()) {
      const std::string& name = entry.first;
      reject_beyond_64_bits_in(entry.second, [&] { return parent.empty() ? name : parent + "." + name; });
    }
  } else if (value.is_array()) {
    const TomlArray& items = value.as_array();
    for (std::size_t i = 0; i < items.size(); ++i)
      reject_beyond_64_bits_in(items[i], [&] { return fmt::format("{}[{}]", key(), i); });
  } else if (beyond_64_bits(value)) {
    reject_beyond_64_bits(value, place_of(value, key()), kTomlIntegerRange);
  }
}

}  // namespace

bool beyond_64_bits(const TomlValue& value) {
  if (!value.is_integer()) return false;
  const toml::detail::region* region = file_region(value);
  return region != nullptr && integer_text_overflows(region->str());
}

std::string integer_as_written(const TomlValue& value) {
  if (const toml::detail::region* region = file_region(value); region != nullptr && value.is_integer())
    return region->str();
  return value.is_integer() ? std::to_string(value.as_integer()) : std::string();
}

void reject_beyond_64_bits(const TomlValue& value, const Place& place, std::string_view expected) {
  if (beyond_64_bits(value)) fail(place, fmt::format("{} is out of range; {}", integer_as_written(value), expected));
}

void reject_integers_beyond_64_bits(const TomlValue& root) {
  reject_beyond_64_bits_in(root, [] { return std::string(); });
}

Place place_of(const TomlValue& value, std::string key) {
  const auto* region = dynamic_cast<const toml::detail::region*>(toml::detail::get_region(value));
  if (region == nullptr || !region->is_ok()) {
    // A value made in code, not read from a file.
    const toml::source_location where = value.location();
    return Place{where.file_name(), static_cast<int>(where.line()), std::move(key)};
  }
  return Place{name_of(*region), line_number(*region), std::move(key)};
}

TomlValue parse_toml(std::string_view text, const std::string& source_name) {
  std::istringstream stream{std::string(text)};
  TomlValue root = toml::parse<toml::discard_comments, std::map, std::vector>(stream, "");
  // The root's region spans the file (or is empty for an empty one).
  if (const auto* region = dynamic_cast<const toml::detail::region*>(toml::detail::get_region(root));
      region != nullptr && region->is_ok())
    remember_name(region->source(), source_name);
  return root;
}

void fail(const Place& place, const std::string& message) {
  throw ConfigError(place.file, place.line, place.key, message);
}

std::string describe(const TomlValue& value) {
  switch (value.type()) {
    case toml::value_t::boolean: return fmt::format("the boolean {}", value.as_boolean());
    case toml::value_t::integer:
      // As written: toml11 holds one beyond 64 bits as INT64_MAX or INT64_MIN.
      if (beyond_64_bits(value)) return fmt::format("the integer {}, beyond 64 bits", integer_as_written(value));
      return fmt::format("the integer {}", value.as_integer());
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
  // The whole range, not "≥ 0": 2^64 is ≥ 0, and too large all the same.
  reject_beyond_64_bits(value, place, fmt::format("expected a whole number from {} to {}", min, max));
  const std::int64_t number = value.as_integer();
  if (number < min || number > max) fail(place, fmt::format("expected a whole number {}, found {}", range, number));
  return number;
}

double expect_number(const TomlValue& value, const Place& place) {
  double number = 0.0;
  if (value.is_floating())
    number = value.as_floating();
  else if (value.is_integer() && beyond_64_bits(value))
    fail(place, fmt::format("{} is out of range for a whole number, 64 bits in TOML; expected a number (write "
                            "it with a decimal point or an exponent, such as 1.8e19, for a real one)",
                            integer_as_written(value)));
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

std::string place_text(const Place& place) { return fmt::format("{}:{}: {}", place.file, place.line, place.key); }

}  // namespace memsweep::config::detail
