#pragma once
// A [programs.NAME] table's `metrics`: names and regular expressions over
// the program's standard output (docs/sweep-file.md, "Metrics"), checked
// when the file is read so that a bad pattern stops the run before any
// trial, naming its file, line and key.

#include "config/toml_access.hpp"
#include "memsweep/config.hpp"

#include <string>
#include <vector>

namespace memsweep::config::detail {

// `value` is the table's metrics value (place: where it is written). Each
// name must be an identifier of at most kMaxMetricName characters, each
// pattern a string that std::regex (ECMAScript) compiles, with exactly one
// capture group; sorted by name. Throws ConfigError otherwise.
std::vector<ProgramMetric> read_program_metrics(const TomlValue& value, const Place& place);

// Why `pattern` cannot be a metric's pattern ("it has 2 capture groups;
// ...", std::regex's own complaint), or empty when it can.
std::string metric_pattern_problem(const std::string& pattern);

}  // namespace memsweep::config::detail
