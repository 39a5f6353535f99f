#pragma once
// Typed access to toml11 values that reports problems as ConfigError with
// file, line and key. toml11's own type errors are multi-line and name C++
// types; users of a sweep file need "expected a whole number ≥ 1".

#include "memsweep/config.hpp"

#include <toml.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::config_detail {

// std::map keeps key iteration independent of hashing; the file's own order
// is recovered from line numbers where it matters (grid axes).
using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;
using TomlTable = TomlValue::table_type;
using TomlArray = TomlValue::array_type;

// Where a value came from. Values drawn by the random search have no place in
// the file, so they carry the place of the distribution they were drawn from.
struct Place {
  std::string file;
  int line = 0;
  std::string key;  // dotted, e.g. "grid.batch_size" or "trial[2].hidden"
};

Place place_of(const TomlValue& value, std::string key);

[[noreturn]] void fail(const Place& place, const std::string& message);

// Human names of TOML types for "found …" in messages.
std::string describe(const TomlValue& value);

// Each returns the value or throws ConfigError naming `place` and the expectation.
std::int64_t expect_integer(const TomlValue& value, const Place& place, std::int64_t min, std::int64_t max);
double expect_number(const TomlValue& value, const Place& place);  // integer or float, finite
const std::string& expect_string(const TomlValue& value, const Place& place);
const TomlTable& expect_table(const TomlValue& value, const Place& place);
const TomlArray& expect_array(const TomlValue& value, const Place& place);

// Rejects keys of `table` not in `allowed`, naming the first unknown one and the allowed set.
void reject_unknown_keys(const TomlTable& table, const Place& table_place,
                         const std::vector<std::string_view>& allowed);

}  // namespace memsweep::config_detail
