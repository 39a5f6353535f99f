#pragma once
// Typed access to toml11 values that reports problems as ConfigError with
// file, line and key. toml11's own type errors are multi-line and name C++
// types; users of a sweep file need "expected a whole number ≥ 1".

#include "config/toml_no_comments.hpp"
#include "memsweep/config.hpp"

#include <toml.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace memsweep::config::detail {

// std::map keeps key iteration independent of hashing; the file's own order
// is recovered from line numbers where it matters (grid axes).
using TomlValue = toml::basic_value<toml::discard_comments, std::map, std::vector>;
#ifdef MEMSWEEP_TOML_SKIPS_COMMENTS
static_assert(std::is_same_v<TomlValue, toml::detail::MemsweepValue>, "toml_no_comments.hpp: the same value type");
#endif
using TomlTable = TomlValue::table_type;
using TomlArray = TomlValue::array_type;

// Where a value came from. Values drawn by the random search have no place in
// the file, so they carry the place of the distribution they were drawn from.
struct Place {
  std::string file;
  int line = 0;
  std::string key;  // dotted, e.g. "grid.batch_size" or "trial[2].hidden"
};

// "file:line: key", as a message or a program's metric names the place.
std::string place_text(const Place& place);

// `text` parsed by toml11, which throws toml::syntax_error; values' places
// name `source_name`.
TomlValue parse_toml(std::string_view text, const std::string& source_name);

Place place_of(const TomlValue& value, std::string key);

[[noreturn]] void fail(const Place& place, const std::string& message);

// Human names of TOML types for "found …" in messages.
std::string describe(const TomlValue& value);

// TOML integers are 64-bit; toml11 3.7 reads a longer one with
// istringstream, which gives INT64_MAX or INT64_MIN (binary ones wrap), and
// keeps no sign of it. Whether `value` is an integer of the file whose text
// does not fit 64 bits, and that text ("18_446_744_073_709_551_616",
// "0xFFFF_FFFF_FFFF_FFFF"). A value made in code always fits.
bool beyond_64_bits(const TomlValue& value);
std::string integer_as_written(const TomlValue& value);

// What a TOML integer may be, for a value no field gives a narrower range.
inline constexpr std::string_view kTomlIntegerRange =
    "expected a whole number from -9223372036854775808 to 9223372036854775807, what a TOML integer holds (a "
    "larger number can be a string)";

// Throws "TEXT is out of range; expected …" for an integer beyond 64 bits.
void reject_beyond_64_bits(const TomlValue& value, const Place& place, std::string_view expected);

// Every integer in `root` (a whole parsed file), at any depth: refuses the
// first beyond 64 bits, naming its key. The fields check their own first,
// with their own range; this catches what no field reads as a number
// (parameters handed to programs, values left for later).
void reject_integers_beyond_64_bits(const TomlValue& root);

// Each returns the value or throws ConfigError naming `place` and the expectation.
std::int64_t expect_integer(const TomlValue& value, const Place& place, std::int64_t min, std::int64_t max);
double expect_number(const TomlValue& value, const Place& place);  // integer or float, finite
const std::string& expect_string(const TomlValue& value, const Place& place);
const TomlTable& expect_table(const TomlValue& value, const Place& place);
const TomlArray& expect_array(const TomlValue& value, const Place& place);

// Rejects keys of `table` not in `allowed`, naming the first unknown one and the allowed set.
void reject_unknown_keys(const TomlTable& table, const Place& table_place,
                         const std::vector<std::string_view>& allowed);

}  // namespace memsweep::config::detail
