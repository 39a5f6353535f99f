#pragma once
// The sweep file's [search] table (docs/search.md): read and checked, the
// axis kept out of every section that defines configurations, and the
// configurations given the range's low end so that each is a whole trial.

#include "config/trial_fields.hpp"
#include "memsweep/search_spec.hpp"

#include <optional>
#include <string>

namespace memsweep::config::detail {

// The [search] table, or nullopt when the file has none. Throws ConfigError
// naming the key for an axis that is no integer field, an empty or
// non-positive range, a limit that is no size, an unknown key.
std::optional<SearchSpec> read_search_section(const TomlTable& top, const std::string& file);

// Refuses the axis where [defaults], a [[trial]], [grid] or [random] sets
// it: a search moves it itself.
void reject_axis_in_sections(const TomlTable& top, const SearchSpec& search, const std::string& file);

// [defaults] with the axis at the range's low end: each configuration is
// then a trial that builds and checks (a program's {NAME} placeholder
// included), and its probes differ from it only in the axis.
void give_axis_its_low_end(TrialDraft& defaults, const SearchSpec& search);

}  // namespace memsweep::config::detail
