// A program trial's command line filled for one attempt, and the check that
// its program can be started (program.hpp).

#include "memsweep/program.hpp"

#include "config/placeholders.hpp"

#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace memsweep {
namespace {

namespace fs = std::filesystem;
using config::detail::fail_at_program;

// Every placeholder filled; the parser has checked the names, so one left
// over means a TrialSpec built by hand with a name nothing gives.
std::string filled(const ProgramSpec& program, const std::string& text,
                   const config::detail::PlaceholderLookup& lookup) {
  const std::string substituted = config::detail::substitute(text, lookup);
  std::optional<std::string> literal = config::detail::literal_text(substituted);
  if (!literal)
    fail_at_program(program, fmt::format("\"{}\" names a placeholder that has no value: {}", text, substituted));
  return std::move(*literal);
}

// What the trial alone fills; nullopt while a run-time value is missing.
std::optional<std::string> known_before_run(const TrialSpec& trial, const std::string& text) {
  return config::detail::literal_text(config::detail::substitute(
      text, [&](std::string_view name) { return config::detail::trial_placeholder(trial, name, true); }));
}

// execvp's search path when PATH is unset.
std::string search_path() {
  if (const char* path = std::getenv("PATH")) return path;
  std::string path(::confstr(_CS_PATH, nullptr, 0), '\0');
  if (path.empty()) return "/bin:/usr/bin";
  ::confstr(_CS_PATH, path.data(), path.size());
  path.pop_back();  // confstr's terminating NUL
  return path;
}

void check_on_path(const ProgramSpec& program, const std::string& name) {
  const std::string path = search_path();
  std::string first_problem;  // a match that cannot run, as execvp would skip it
  if (find_on_path(name, path, {}, &first_problem)) return;
  if (!first_problem.empty())
    fail_at_program(program, fmt::format("program \"{}\": {} (and nothing else on PATH runs)", name, first_problem));
  fail_at_program(program, fmt::format("program \"{}\": not found on PATH ({})", name, path));
}

}  // namespace

// As exec sees it: symbolic links followed, and the x bit for this user
// (root needs one x bit set).
std::string unrunnable(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "not found" : fmt::format("cannot be read: {}", std::strerror(errno));
  if (S_ISDIR(info.st_mode)) return "a directory, not a program";
  if (!S_ISREG(info.st_mode)) return "not a regular file";
  if (::access(path.c_str(), X_OK) != 0) return "not executable";
  return "";
}

std::optional<std::string> find_on_path(const std::string& name, std::string_view path_list,
                                        const fs::path& empty_entry_folder, std::string* first_problem) {
  std::size_t start = 0;
  while (start <= path_list.size()) {
    const std::size_t end = std::min(path_list.find(':', start), path_list.size());
    const std::string folder(path_list.substr(start, end - start));
    const fs::path base = folder.empty() ? empty_entry_folder : fs::path(folder);
    const fs::path candidate = base.empty() ? fs::path(name) : base / name;
    const std::string problem = unrunnable(candidate);
    if (problem.empty()) return candidate.string();
    if (first_problem != nullptr && problem != "not found" && first_problem->empty())
      *first_problem = fmt::format("{} is {}", candidate.string(), problem);
    start = end + 1;
  }
  return std::nullopt;
}

ProgramInvocation program_invocation(const TrialSpec& trial, const ProgramRunValues& values) {
  if (!trial.program) throw std::logic_error("program_invocation: trial " + trial.id + " has no program");
  const ProgramSpec& program = *trial.program;
  const config::detail::PlaceholderLookup lookup = [&](std::string_view name) {
    if (config::detail::is_run_time_placeholder(name)) return config::detail::run_placeholder(values, name);
    return config::detail::trial_placeholder(trial, name, true);
  };
  ProgramInvocation invocation;
  for (const std::string& element : program.command) invocation.argv.push_back(filled(program, element, lookup));
  for (const auto& [name, value] : program.env) invocation.env.emplace_back(name, filled(program, value, lookup));
  invocation.workdir = filled(program, program.workdir, lookup);
  return invocation;
}

void check_program(const TrialSpec& trial) {
  if (!trial.program) return;
  const ProgramSpec& program = *trial.program;
  if (program.command.empty()) fail_at_program(program, "the program's command is empty");
  const std::optional<std::string> command = known_before_run(trial, program.command.front());
  if (!command) return;  // it names a run-time value ({data_dir}/train): only the run can tell
  if (command->find('/') == std::string::npos) return check_on_path(program, *command);

  fs::path path(*command);
  if (path.is_relative() && !program.workdir.empty()) {
    const std::optional<std::string> workdir = known_before_run(trial, program.workdir);
    if (!workdir) return;  // relative to a folder only the run knows
    path = fs::path(*workdir) / path;
  }
  const std::string problem = unrunnable(path);
  if (problem.empty()) return;
  std::error_code error;
  const fs::path absolute = fs::absolute(path, error);
  const std::string where =
      error || absolute == fs::path(*command) ? "" : fmt::format(" ({})", absolute.lexically_normal().string());
  fail_at_program(program, fmt::format("program \"{}\"{}: {}", *command, where, problem));
}

}  // namespace memsweep
