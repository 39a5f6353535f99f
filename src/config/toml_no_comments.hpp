#pragma once
// toml11 3.7 collects the comments of every value it parses, even for a
// value type that discards them (toml::discard_comments), and collecting
// them scans the value's whole line: back to its start and on to its end.
// A line of n values so cost n times the line, quadratic in n: 65,536
// numbers on one line took 10 s, four such lines did not finish in a minute.
// memsweep keeps no comments, so for its value type each value is made
// without looking for them: explicit specialisations of toml11's
// parse_value_helper, which its parse_value calls for every value. The
// specialisations must be seen wherever toml::parse is instantiated for
// this value type (they are, through toml_access.hpp, which defines it);
// other versions of toml11 are left as they are.

#include <toml.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#if TOML11_VERSION_MAJOR == 3 && TOML11_VERSION_MINOR == 7
#define MEMSWEEP_TOML_SKIPS_COMMENTS 1

namespace toml::detail {

using MemsweepValue = basic_value<discard_comments, std::map, std::vector>;

template <typename T>
result<MemsweepValue, std::string> memsweep_value_without_comments(result<std::pair<T, region>, std::string> parsed) {
  if (parsed.is_err()) return err(std::move(parsed.unwrap_err()));
  return ok(MemsweepValue(std::move(parsed.unwrap()), std::vector<std::string>{}));
}

#define MEMSWEEP_VALUE_WITHOUT_COMMENTS(T)                                        \
  template <>                                                                     \
  inline result<MemsweepValue, std::string> parse_value_helper<MemsweepValue, T>( \
      result<std::pair<T, region>, std::string> parsed) {                         \
    return memsweep_value_without_comments<T>(std::move(parsed));                 \
  }

MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::boolean_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::integer_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::floating_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::string_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::offset_datetime_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::local_datetime_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::local_date_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::local_time_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::array_type)
MEMSWEEP_VALUE_WITHOUT_COMMENTS(MemsweepValue::table_type)

#undef MEMSWEEP_VALUE_WITHOUT_COMMENTS

}  // namespace toml::detail

#endif
