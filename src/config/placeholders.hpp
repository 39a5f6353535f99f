#pragma once
// {placeholders} in a program's command, env values and workdir
// (docs/sweep-file.md, "Programs"): the template syntax, and the values a
// trial and a run give them. The sweep-file parser checks templates with
// these; program_invocation, check_program and the trial's canonical text
// fill them.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::config::detail {

// Literal text or a placeholder's name; literal braces are already unescaped.
struct TemplatePiece {
  std::string text;
  bool is_placeholder = false;
};

struct ParsedTemplate {
  std::vector<TemplatePiece> pieces;
  std::string error;  // empty when the syntax is right; else what is wrong, for a ConfigError
};

// {name} is a placeholder, {{ and }} are literal braces; a lone brace or an
// empty or unclosed {…} is an error.
ParsedTemplate parse_template(std::string_view text);

// A placeholder's value, or nullopt when the lookup does not know the name.
using PlaceholderLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The template with every placeholder the lookup knows replaced by its value;
// the others are kept as {name}, and the result is again a template (literal
// braces, in the text or in values, stay doubled). The template must be well formed.
std::string substitute(std::string_view text, const PlaceholderLookup& lookup);

// The text a template stands for when it has no placeholder left; nullopt otherwise.
std::optional<std::string> literal_text(std::string_view text);

// The names only the run knows (ProgramRunValues): data_dir, trial_dir, threads, ….
bool is_run_time_placeholder(std::string_view name);

// Values from the trial alone: its fields, seed, repeat, [params], and its
// id when `with_id` (the canonical text cannot use the id: the id is its hash).
std::optional<std::string> trial_placeholder(const TrialSpec& trial, std::string_view name, bool with_id);

// Values from the run: data_dir, trial_dir, threads, max_train_examples, max_test_examples, attempt, gpu.
std::optional<std::string> run_placeholder(const ProgramRunValues& values, std::string_view name);

// Throws ConfigError with `message` at the program's place, its
// "sweep.toml:4: program" read back into file, line and key (a text not of
// that form is taken as the file, with line 0 and no key).
[[noreturn]] void fail_at_program(const ProgramSpec& program, const std::string& message);

}  // namespace memsweep::config::detail
