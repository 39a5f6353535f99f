#pragma once
// The sweep file's side of program trials (docs/sweep-file.md, "Programs"):
// [programs.NAME] tables, and the trial fields program, trainer, env,
// workdir and params, from the values the layers give to the trial's
// ProgramSpec and [params].
//
// A draft holds env and params one key at a time ("env.OMP_NUM_THREADS",
// "params.dropout"), so that layers merge them key by key and a grid or a
// random search varies each key as a field of its own.

#include "config/trial_fields.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::config::detail {

// The results file's trainer column is 16 bytes wide.
inline constexpr std::size_t kMaxTrainerName = 16;

// The fields handled here, as a sweep file names them.
inline constexpr std::string_view kProgramFieldNames[] = {"program", "trainer", "env", "workdir", "params"};
bool is_program_field(std::string_view draft_key);  // one of those, or "env.X", "params.X"

// The tables whose keys are held one at a time in a draft.
bool is_keyed_field(std::string_view name);  // env, params

// "params.dropout" for a key of `field` (env or params), after checking the
// key's name (place: where the key is written, for messages).
std::string keyed_field_name(std::string_view field, const std::string& key, const Place& place);

// Checks a draft entry (program, trainer, workdir, env.X, params.X) as the
// trial will use it, except what needs the whole trial (placeholder names,
// [programs] names).
void check_program_field(std::string_view draft_key, const FieldValue& field);

// A [programs.NAME] table, checked.
struct ProgramTable {
  std::string name;
  FieldValue command;
  std::map<std::string, FieldValue> env;
  std::optional<FieldValue> workdir;
  std::vector<ProgramMetric> metrics;                     // program_metrics.hpp
  KeepTrialDir keep_trial_dir = KeepTrialDir::failed;     // keep_trial_dir
  std::uint64_t log_limit_bytes = kDefaultLogLimitBytes;  // log_limit
};

// The top-level [programs] table, if any.
ProgramTables read_program_tables(const TomlTable& root, const std::string& file);

// Sets trial.program and trial.params from the draft, after the other
// fields, and checks every placeholder against the trial's names. A trial
// of memsweep's own trainer keeps neither [params] nor env, workdir or
// trainer: they mean something only to a program.
void apply_program_fields(const TrialDraft& draft, const ProgramTables& programs, TrialSpec& trial);

}  // namespace memsweep::config::detail
