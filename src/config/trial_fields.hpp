#pragma once
// The fields of a trial, as the sweep file names them, and how a trial is
// built from the values that [defaults], [[trial]], [grid] and [random] give.

#include "config/toml_access.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::config::detail {

struct FieldValue {
  TomlValue value;
  Place place;
};

// Field name → value. Layers are merged by assignment: a trial's own value
// replaces the default's whole (a `synthetic` table is not merged key by
// key); `env` and `params` are held key by key ("params.dropout",
// program_fields.hpp), so they merge key by key.
using TrialDraft = std::map<std::string, FieldValue, std::less<>>;

struct ProgramTable;
using ProgramTables = std::map<std::string, ProgramTable, std::less<>>;

// Every key a trial may set, in the order tables print them.
const std::vector<std::string_view>& trial_field_names();
bool is_trial_field(std::string_view name);
// mem_budget, timeout, gpus_per_trial, gpu_limit: limits on a trial and where it runs,
// not what it is (neither its id nor the sweep's hash holds them).
bool is_placement_field(std::string_view name);

// Checks one value as the named field (or draft key: "params.dropout")
// would use it, so a grid list or a random distribution is rejected where it
// is written, not at expansion.
void check_field_value(std::string_view name, const FieldValue& field);

// The built-in defaults with [defaults]' values applied (its whole-trial
// checks wait for each trial's own values): built once per sweep.
TrialSpec apply_defaults(const TrialDraft& defaults, std::uint64_t sweep_seed);

// A trial's own values applied over `defaults_applied` (apply_defaults of
// `defaults`), then checks of what only the whole trial can tell (an MLP
// without hidden layers, more pooling blocks than the input has pixels
// for). The result is that of the two drafts merged, the trial's values
// replacing the defaults'. `origin` is where the trial was defined, for
// messages about fields that no layer set. `programs` are the file's
// [programs.NAME] tables, which `program = "NAME"` names.
TrialSpec build_trial(const TrialDraft& defaults, const TrialSpec& defaults_applied, const TrialDraft& own,
                      const Place& origin, const ProgramTables& programs);

}  // namespace memsweep::config::detail
