#include "config/program_fields.hpp"

#include "config/json_text.hpp"
#include "config/placeholders.hpp"
#include "config/program_metrics.hpp"
#include "config/trial_fields.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

namespace memsweep::config::detail {
namespace {

const std::vector<std::string_view> kProgramTableKeys{"command",        "env",      "workdir", "metrics",
                                                      "keep_trial_dir", "log_limit"};
constexpr std::string_view kProgramHelp =
    "expected a command (an array of strings, e.g. [\"python3\", \"train.py\", \"--lr={learning_rate}\"]), the name "
    "of a [programs] table, or \"memsweep\" (the built-in trainer)";

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

bool is_identifier(std::string_view text) {
  const auto word = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  return !text.empty() && word(text.front()) &&
         std::all_of(text.begin(), text.end(), [&](char c) { return word(c) || (c >= '0' && c <= '9'); });
}

Place element_place(const Place& place, std::size_t index) {
  return Place{place.file, place.line, fmt::format("{}[{}]", place.key, index)};
}

// A program's name goes into the results file's trainer column and into
// file names (--split-by labels), so it is short and plain; "memsweep" is
// the built-in trainer's.
void check_trainer_name(const std::string& name, const Place& place) {
  if (name.empty() || name.size() > kMaxTrainerName || !std::all_of(name.begin(), name.end(), is_name_char))
    fail(place, fmt::format("expected a name of 1 to {} characters from A-Z a-z 0-9 _ . - (the results file's "
                            "trainer column), found \"{}\"",
                            kMaxTrainerName, name));
  if (name == kBuiltinTrainer)
    fail(place, fmt::format("\"{}\" is the built-in trainer's name; give the program another one", kBuiltinTrainer));
}

void check_template_syntax(const std::string& text, const Place& place) {
  const ParsedTemplate parsed = parse_template(text);
  if (!parsed.error.empty()) fail(place, fmt::format("in \"{}\": {}", text, parsed.error));
}

void check_command(const FieldValue& field) {
  const TomlArray& items = expect_array(field.value, field.place);
  if (items.empty()) fail(field.place, fmt::format("{}, found an empty array", kProgramHelp));
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Place at = element_place(field.place, i);
    const std::string& element = expect_string(items[i], at);
    if (i == 0 && element.empty()) fail(at, "expected the program to run, found an empty string");
    check_template_syntax(element, at);
  }
}

void check_program_value(const FieldValue& field) {
  if (field.value.is_array()) return check_command(field);
  if (!field.value.is_string()) fail(field.place, fmt::format("{}, found {}", kProgramHelp, describe(field.value)));
  if (field.value.as_string().str.empty()) fail(field.place, fmt::format("{}, found an empty string", kProgramHelp));
}

// A scalar parameter as {name} writes it and as JSON.
std::pair<std::string, std::string> param_scalar(const TomlValue& value, const Place& place) {
  switch (value.type()) {
    case toml::value_t::boolean: {
      const std::string text = value.as_boolean() ? "true" : "false";
      return {text, text};
    }
    case toml::value_t::integer: {
      reject_beyond_64_bits(value, place, kTomlIntegerRange);
      const std::string text = fmt::format("{}", value.as_integer());
      return {text, text};
    }
    case toml::value_t::floating: {
      // JSON has no nan or inf, and no program reads them the same way.
      if (!std::isfinite(value.as_floating()))
        fail(place, fmt::format("expected a finite number, found {}", value.as_floating()));
      const std::string text = fmt::format("{}", value.as_floating());
      return {text, text};
    }
    case toml::value_t::string: return {value.as_string().str, json_quoted(value.as_string().str)};
    default:
      fail(place,
           fmt::format("expected a string, a number, a boolean or an array of those, found {}", describe(value)));
  }
}

ParamValue param_value(const FieldValue& field) {
  if (!field.value.is_array()) {
    auto [text, json] = param_scalar(field.value, field.place);
    return ParamValue{std::move(text), std::move(json)};
  }
  std::vector<std::string> texts, jsons;
  const TomlArray& items = field.value.as_array();
  for (std::size_t i = 0; i < items.size(); ++i) {
    const Place at = element_place(field.place, i);
    if (items[i].is_array() || items[i].is_table())
      fail(at,
           fmt::format("expected a string, a number or a boolean in a parameter's list, found {}", describe(items[i])));
    auto [text, json] = param_scalar(items[i], at);
    texts.push_back(std::move(text));
    jsons.push_back(std::move(json));
  }
  return ParamValue{fmt::format("{}", fmt::join(texts, ",")), fmt::format("[{}]", fmt::join(jsons, ","))};
}

// keep_trial_dir: true, false, or "failed" (the default).
KeepTrialDir keep_trial_dir_value(const TomlValue& value, const Place& place) {
  if (value.is_boolean()) return value.as_boolean() ? KeepTrialDir::always : KeepTrialDir::never;
  if (value.is_string() && value.as_string().str == "failed") return KeepTrialDir::failed;
  fail(place, fmt::format("expected true (keep every attempt's {{trial_dir}}), false (remove it once the attempt "
                          "ends) or \"failed\" (keep it only when the attempt did not end ok, the default), found {}",
                          describe(value)));
}

// The smallest log_limit: a head and a tail of 512 bytes each.
constexpr std::uint64_t kMinLogLimitBytes = 1024;

// log_limit: a size, or 0 for no limit.
std::uint64_t log_limit_value(const TomlValue& value, const Place& place) {
  if (value.is_integer() && value.as_integer() == 0) return 0;
  std::optional<std::uint64_t> bytes;
  if (value.is_integer() && !beyond_64_bits(value) && value.as_integer() > 0)
    bytes = static_cast<std::uint64_t>(value.as_integer());
  else if (value.is_string())
    bytes = parse_byte_size(value.as_string().str);
  if (!bytes || *bytes < kMinLogLimitBytes || *bytes > kMaxByteSize)
    fail(place, fmt::format("expected {} from 1KiB to {} (what each of the program's stdout and stderr logs keeps "
                            "per attempt: its first and last halves), or 0 for no limit, found {}",
                            kByteSizeHelp, kMaxByteSizeText, describe(value)));
  return *bytes;
}

// ---------------------------------------------------------------- a trial's program

// A template as the file gives it, with where.
struct Template {
  std::string text;
  Place place;
};

struct ResolvedProgram {
  std::string name;
  std::vector<Template> command;
  std::map<std::string, Template> env;
  std::optional<Template> workdir;
  Place place;
  std::vector<ProgramMetric> metrics;  // a [programs.NAME] table's; none inline
  KeepTrialDir keep_trial_dir = KeepTrialDir::failed;
  std::uint64_t log_limit_bytes = kDefaultLogLimitBytes;
};

const FieldValue* draft_entry(const TrialDraft& draft, std::string_view key) {
  const auto it = draft.find(key);
  return it == draft.end() ? nullptr : &it->second;
}

std::vector<Template> command_templates(const FieldValue& field) {
  std::vector<Template> command;
  const TomlArray& items = field.value.as_array();
  for (std::size_t i = 0; i < items.size(); ++i)
    command.push_back({items[i].as_string().str, element_place(field.place, i)});
  return command;
}

bool is_interpreter(std::string_view base) {
  static const std::vector<std::string_view> kInterpreters{"python", "Rscript", "julia", "bash",
                                                           "sh",     "node",    "perl",  "ruby"};
  if (std::find(kInterpreters.begin(), kInterpreters.end(), base) != kInterpreters.end()) return true;
  // python3, python3.12, python2.7
  return base.starts_with("python") &&
         std::all_of(base.begin() + 6, base.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

// What an interpreter runs, for its name: the stem of its script (its
// first argument that is not an option), a module (python -m pkg.train), or
// the interpreter itself for code on the command line (-c, -e) or none.
std::string interpreted_source(const std::vector<Template>& command) {
  const std::string interpreter = std::filesystem::path(command.front().text).stem().string();
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& arg = command[i].text;
    if (arg == "-c" || arg == "-e" || arg == "-E" || arg == "--eval") return interpreter;
    if (arg == "-m") return i + 1 < command.size() ? command[i + 1].text : interpreter;
    if (!arg.empty() && arg[0] != '-') return std::filesystem::path(arg).stem().string();
  }
  return interpreter;
}

// An inline program is named after what it runs: what an interpreter is
// given, else the program itself.
std::string derived_trainer_name(const std::vector<Template>& command, const Place& place) {
  const std::filesystem::path program(command.front().text);
  std::string name =
      is_interpreter(program.filename().string()) ? interpreted_source(command) : program.stem().string();
  for (char& c : name)
    if (!is_name_char(c)) c = '_';
  if (name.size() > kMaxTrainerName) name.resize(kMaxTrainerName);
  if (name.empty()) name = "program";
  if (name == kBuiltinTrainer)
    fail(place, fmt::format("this program would be named \"{}\", the built-in trainer's name; set `trainer` to name "
                            "it otherwise",
                            kBuiltinTrainer));
  return name;
}

ResolvedProgram named_program(const std::string& name, const FieldValue& field, const TrialDraft& draft,
                              const ProgramTables& programs) {
  const auto table = programs.find(name);
  if (table == programs.end()) {
    std::vector<std::string_view> known{kBuiltinTrainer};
    for (const auto& [known_name, program] : programs) known.push_back(known_name);
    std::string message =
        fmt::format("unknown program \"{}\"; expected a command (an array of strings) or one of: {}{}", name,
                    fmt::join(known, ", "), programs.empty() ? " (the file has no [programs.NAME] tables)" : "");
    if (field.place.key.starts_with("grid."))
      message +=
          "; in [grid], `program` lists the programs to combine, so one command is an array in that list: "
          "program = [[\"python3\", \"train.py\"]]";
    fail(field.place, message);
  }
  if (const FieldValue* trainer = draft_entry(draft, "trainer"))
    fail(trainer->place, fmt::format("the program is the [programs.{}] table, which is named \"{}\"; `trainer` names "
                                     "programs given as commands",
                                     name, name));
  const ProgramTable& program = table->second;
  ResolvedProgram resolved{name,
                           command_templates(program.command),
                           {},
                           std::nullopt,
                           program.command.place,
                           {},
                           KeepTrialDir::failed,
                           kDefaultLogLimitBytes};
  for (const auto& [key, value] : program.env) resolved.env[key] = {value.value.as_string().str, value.place};
  if (program.workdir) resolved.workdir = Template{program.workdir->value.as_string().str, program.workdir->place};
  resolved.metrics = program.metrics;
  resolved.keep_trial_dir = program.keep_trial_dir;
  resolved.log_limit_bytes = program.log_limit_bytes;
  return resolved;
}

ResolvedProgram inline_program(const FieldValue& field, const TrialDraft& draft) {
  ResolvedProgram resolved{
      {}, command_templates(field), {}, std::nullopt, field.place, {}, KeepTrialDir::failed, kDefaultLogLimitBytes};
  const FieldValue* trainer = draft_entry(draft, "trainer");
  resolved.name =
      trainer != nullptr ? trainer->value.as_string().str : derived_trainer_name(resolved.command, field.place);
  return resolved;
}

// The trial's own env keys and workdir, over the program table's.
void apply_trial_settings(const TrialDraft& draft, ResolvedProgram& program) {
  for (const auto& [key, field] : draft)
    if (key.starts_with("env.")) program.env[key.substr(4)] = {field.value.as_string().str, field.place};
  if (const FieldValue* workdir = draft_entry(draft, "workdir"))
    program.workdir = Template{workdir->value.as_string().str, workdir->place};
}

void check_placeholder_names(const Template& text, const std::vector<std::pair<std::string, ParamValue>>& params) {
  static const std::vector<std::string> kBuiltin = builtin_placeholder_names();
  for (const TemplatePiece& piece : parse_template(text.text).pieces) {
    if (!piece.is_placeholder) continue;
    if (std::find(kBuiltin.begin(), kBuiltin.end(), piece.text) != kBuiltin.end()) continue;
    const auto param = std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == piece.text; });
    if (param != params.end()) continue;
    std::vector<std::string_view> names;
    for (const auto& [name, value] : params) names.push_back(name);
    fail(text.place, fmt::format("unknown placeholder {{{}}}; expected one of: {}; or a name in the trial's [params] "
                                 "({})",
                                 piece.text, fmt::join(kBuiltin, ", "),
                                 names.empty() ? "it has none" : fmt::format("{}", fmt::join(names, ", "))));
  }
}

ProgramSpec program_spec(const ResolvedProgram& resolved,
                         const std::vector<std::pair<std::string, ParamValue>>& params) {
  ProgramSpec spec;
  spec.name = resolved.name;
  for (const Template& element : resolved.command) {
    check_placeholder_names(element, params);
    spec.command.push_back(element.text);
  }
  for (const auto& [key, value] : resolved.env) {
    check_placeholder_names(value, params);
    spec.env.emplace_back(key, value.text);  // a std::map's order: sorted by name
  }
  if (resolved.workdir) {
    check_placeholder_names(*resolved.workdir, params);
    spec.workdir = resolved.workdir->text;
  }
  spec.place = place_text(resolved.place);
  spec.metrics = resolved.metrics;
  spec.keep_trial_dir = resolved.keep_trial_dir;
  spec.log_limit_bytes = resolved.log_limit_bytes;
  return spec;
}

// The built-in field a placeholder gives the program, or "" for none:
// {synthetic.shape} and {data_dir} are the dataset's, {momentum} its own.
std::string_view field_of_placeholder(std::string_view name) {
  if (name == "data_dir" || name.starts_with("synthetic.")) return "dataset";
  if (name == "seed" || is_run_time_placeholder(name) || !is_trial_field(name)) return {};
  return name;
}

// ProgramSpec::fields and uses_data_dir: what the draft sets and what the
// program's texts name.
void record_fields_shown(const TrialDraft& draft, ProgramSpec& spec) {
  std::vector<std::string> fields;
  for (const auto& [key, field] : draft) {
    if (is_program_field(key) || key == "seed" || is_placement_field(key)) continue;
    fields.push_back(key == "synthetic" ? "dataset" : key);
  }
  std::vector<const std::string*> texts;
  for (const std::string& element : spec.command) texts.push_back(&element);
  for (const auto& [name, value] : spec.env) texts.push_back(&value);
  texts.push_back(&spec.workdir);
  for (const std::string* text : texts)
    for (const TemplatePiece& piece : parse_template(*text).pieces) {
      if (!piece.is_placeholder) continue;
      spec.uses_data_dir = spec.uses_data_dir || piece.text == "data_dir";
      spec.uses_trial_dir = spec.uses_trial_dir || piece.text == "trial_dir";
      spec.uses_gpu = spec.uses_gpu || piece.text == "gpu";
      if (const std::string_view field = field_of_placeholder(piece.text); !field.empty()) fields.emplace_back(field);
    }
  std::sort(fields.begin(), fields.end());
  fields.erase(std::unique(fields.begin(), fields.end()), fields.end());
  spec.fields = std::move(fields);
}

}  // namespace

bool is_program_field(std::string_view draft_key) {
  return std::find(std::begin(kProgramFieldNames), std::end(kProgramFieldNames), draft_key) !=
             std::end(kProgramFieldNames) ||
         draft_key.starts_with("env.") || draft_key.starts_with("params.");
}

bool is_keyed_field(std::string_view name) { return name == "env" || name == "params"; }

std::string keyed_field_name(std::string_view field, const std::string& key, const Place& place) {
  if (field == "env") {
    // What a POSIX shell can export; anything else is most likely a typo.
    if (!is_identifier(key))
      fail(place, "expected an environment variable's name: letters, digits and _, not starting with a digit");
    return "env." + key;
  }
  if (!is_identifier(key))
    fail(place, "expected a parameter name: letters, digits and _, not starting with a digit (it is used as {name})");
  // {name} must say which value it means.
  if (is_trial_field(key))
    fail(place, fmt::format("\"{}\" is a trial field; set it as one, or give the parameter another name", key));
  const std::vector<std::string> builtin = builtin_placeholder_names();
  if (std::find(builtin.begin(), builtin.end(), key) != builtin.end())
    fail(place, fmt::format("\"{}\" is a built-in placeholder ({{{}}}); give the parameter another name", key, key));
  return "params." + key;
}

void check_program_field(std::string_view draft_key, const FieldValue& field) {
  if (draft_key == "program") return check_program_value(field);
  if (draft_key == "trainer") return check_trainer_name(expect_string(field.value, field.place), field.place);
  if (draft_key == "workdir" || draft_key.starts_with("env."))
    return check_template_syntax(expect_string(field.value, field.place), field.place);
  if (draft_key.starts_with("params.")) {
    param_value(field);
    return;
  }
  throw std::logic_error(fmt::format("{} is not a field a draft holds", draft_key));
}

ProgramTables read_program_tables(const TomlTable& root, const std::string& file) {
  ProgramTables tables;
  const auto section = root.find("programs");
  if (section == root.end()) return tables;
  Place place = place_of(section->second, "programs");
  if (place.file.empty()) place.file = file;
  for (const auto& [name, value] : expect_table(section->second, place)) {
    const Place at = place_of(value, "programs." + name);
    check_trainer_name(name, at);
    const TomlTable& table = expect_table(value, at);
    reject_unknown_keys(table, at, kProgramTableKeys);
    const auto command = table.find("command");
    if (command == table.end())
      fail(at,
           "missing key `command`: expected the program's command line, e.g. command = [\"python3\", "
           "\"train.py\", \"--lr={learning_rate}\"]");
    ProgramTable program{name,
                         FieldValue{command->second, place_of(command->second, at.key + ".command")},
                         {},
                         {},
                         {},
                         KeepTrialDir::failed,
                         kDefaultLogLimitBytes};
    check_command(program.command);
    if (const auto env = table.find("env"); env != table.end()) {
      const Place env_place = place_of(env->second, at.key + ".env");
      for (const auto& [key, setting] : expect_table(env->second, env_place)) {
        const Place key_place = place_of(setting, env_place.key + "." + key);
        keyed_field_name("env", key, key_place);
        FieldValue entry{setting, key_place};
        check_program_field("env." + key, entry);
        program.env.emplace(key, std::move(entry));
      }
    }
    if (const auto workdir = table.find("workdir"); workdir != table.end()) {
      program.workdir = FieldValue{workdir->second, place_of(workdir->second, at.key + ".workdir")};
      check_program_field("workdir", *program.workdir);
    }
    if (const auto metrics = table.find("metrics"); metrics != table.end())
      program.metrics = read_program_metrics(metrics->second, place_of(metrics->second, at.key + ".metrics"));
    if (const auto keep = table.find("keep_trial_dir"); keep != table.end())
      program.keep_trial_dir = keep_trial_dir_value(keep->second, place_of(keep->second, at.key + ".keep_trial_dir"));
    if (const auto limit = table.find("log_limit"); limit != table.end())
      program.log_limit_bytes = log_limit_value(limit->second, place_of(limit->second, at.key + ".log_limit"));
    tables.emplace(name, std::move(program));
  }
  return tables;
}

void apply_program_fields(const TrialDraft& draft, const ProgramTables& programs, TrialSpec& trial) {
  const FieldValue* program = draft_entry(draft, "program");
  // memsweep's own trainer reads none of these; leaving them out of the
  // trial keeps its id that of the same trial without them, as for an
  // optimizer's unused parameters.
  if (program == nullptr || (program->value.is_string() && program->value.as_string().str == kBuiltinTrainer)) return;
  for (const auto& [key, field] : draft)
    if (key.starts_with("params.")) trial.params.emplace_back(key.substr(7), param_value(field));
  // The results file keeps them in a fixed-size column: cut, they would be no JSON at all.
  if (const std::size_t bytes = trial.params_json().size(); bytes > kMaxParamsJsonBytes) {
    const auto first =
        std::find_if(draft.begin(), draft.end(), [](const auto& e) { return e.first.starts_with("params."); });
    fail(first->second.place,
         fmt::format("the trial's [params] take {} bytes as JSON; the results file keeps at most {}", bytes,
                     kMaxParamsJsonBytes));
  }
  ResolvedProgram resolved = program->value.is_string()
                                 ? named_program(program->value.as_string().str, *program, draft, programs)
                                 : inline_program(*program, draft);
  apply_trial_settings(draft, resolved);
  trial.program = program_spec(resolved, trial.params);
  record_fields_shown(draft, *trial.program);
}

}  // namespace memsweep::config::detail
