#pragma once
// How deeply a sweep file's TOML nests, found before toml11 reads it.
//
// toml11 3.7 parses arrays and inline tables by recursion, with no limit,
// and builds, copies and destroys the nested values by recursion too: a
// file of 20,000 `[` (20 KB) ran the stack out (SIGSEGV). This pre-pass
// reads the text once, in linear time and constant stack, and finds where
// the nesting first goes past a limit, so that the file is refused with
// a line number instead.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::config::detail {

// Tables, arrays and inline tables inside one another. A sweep file needs
// about 4 (`[[trial]]` is an array of tables, 2; `hidden = [[64], [128]]`
// in [grid], 3; a [[trial]]'s `params = {…}`, 3). 64 leaves room for any
// hand-written file while staying far below the depth at which toml11 runs
// out of stack (thousands of levels under the sanitizers' larger frames).
inline constexpr int kMaxTomlNesting = 64;

struct NestingTooDeep {
  int line = 0;   // 1-based line where the nesting first goes past the limit
  int depth = 0;  // the depth reached there: limit + 1
};

// The depth of a value is the number of tables and arrays around it, the
// top-level table not counted: `a = 1` is 0, `a = [[1]]` 2, `a.b.c = 1` 2
// (tables a and b), `[a.b]` 2, `[[a]]` 2 (array a, one of its tables),
// `a = {b = [1]}` 2. Strings (basic, literal, multi-line of both kinds) and
// comments do not count. Text that is not valid TOML is read as far as it
// goes; it never makes the answer smaller than what toml11 would nest.
// Returns where the depth first exceeds `limit`, or nullopt.
std::optional<NestingTooDeep> find_nesting_deeper_than(std::string_view text, int limit = kMaxTomlNesting);

// toml11 3.7 reads a binary integer (`0b…`) by doubling a signed 64-bit
// place value past each digit: from the 63rd digit on (leading zeros
// count) that overflows, which is undefined behaviour (UBSan stops there),
// whatever the value. The same pass finds the first such literal in a
// value (not in a key, string or comment).
inline constexpr std::size_t kMaxBinaryDigits = 62;

struct LongBinaryInteger {
  int line = 0;
  std::string written;  // as in the file, underscores included
};
std::optional<LongBinaryInteger> find_long_binary_integer(std::string_view text);

// Throws ConfigError ("FILE:LINE: 0b… has 64 binary digits …") for the first.
void reject_long_binary_integers(std::string_view text, const std::string& source_name);

// Throws ConfigError ("FILE:LINE: nested deeper than 64 …") when the text
// nests deeper than kMaxTomlNesting.
void reject_deep_nesting(std::string_view text, const std::string& source_name);

}  // namespace memsweep::config::detail
