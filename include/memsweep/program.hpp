#pragma once
// A program trial's command line, environment and working directory, its
// {placeholders} filled in for one attempt; and the check that its program
// can be started at all (plan, and run before anything is written).

#include "memsweep/config.hpp"

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memsweep {

// What only the run knows when the trial starts.
struct ProgramRunValues {
  std::string data_dir;                // the folder holding the trial's dataset files; synthetic: the first search dir
  int threads = 1;                     // the run's --threads (or its default)
  std::size_t max_train_examples = 0;  // 0: all
  std::size_t max_test_examples = 0;   // 0: all
  int attempt = 0;
  // The attempt's own folder ({trial_dir}, absolute), made before it starts;
  // empty where the program names none.
  std::string trial_dir;
  // The trial's GPUs as the program sees them ({gpu}): "0", or "0,1" for
  // two; its CUDA_VISIBLE_DEVICES holds only them, by UUID.
  std::string gpu;
};

struct ProgramInvocation {
  std::vector<std::string> argv;                         // argv[0] as written (looked up in PATH when it has no '/')
  std::vector<std::pair<std::string, std::string>> env;  // set over the rank's environment
  std::string workdir;                                   // empty: the run's working directory
};

// Every placeholder a program's texts may use, sorted: the trial fields
// (dataset, model, channels, optimizer, momentum, beta1, beta2, epsilon,
// learning_rate, epochs, batch_size, hidden, memory_plan, recompute_every,
// seed, synthetic.shape,
// synthetic.classes, synthetic.train_size, synthetic.test_size,
// synthetic.noise), trial_id, repeat, attempt, data_dir, trial_dir, threads,
// max_train_examples, max_test_examples, gpu, and the trial's [params] names.
// {seed} is the seed memsweep's trainer would train this repeat with.
std::vector<std::string> builtin_placeholder_names();

// The trial's program with every placeholder filled. Lists are written
// comma-separated; {{ and }} are literal braces. The trial must have a program.
ProgramInvocation program_invocation(const TrialSpec& trial, const ProgramRunValues& values);

// Throws ConfigError (file, line and key of the program) when the trial's
// program is not found (PATH, or relative to its workdir) or is not an
// executable regular file. Nothing for a built-in trial.
void check_program(const TrialSpec& trial);

// Why `path` cannot be started, as exec sees it ("not found", "not
// executable", "a directory, not a program", ...), or empty when it can.
std::string unrunnable(const std::filesystem::path& path);

// The lookup execvp makes for a `name` without a '/': the first folder of
// `path_list` (PATH's ':'-separated folders) holding a runnable `name`, as
// a path, or nullopt. An empty entry means `empty_entry_folder` (itself
// empty: `name` as it is, in the working directory). `first_problem`, when
// given and still empty, gets "CANDIDATE is WHY" for the first match that
// exists but cannot run.
std::optional<std::string> find_on_path(const std::string& name, std::string_view path_list,
                                        const std::filesystem::path& empty_entry_folder,
                                        std::string* first_problem = nullptr);

}  // namespace memsweep
