#include "memsweep/run_record.hpp"

#include "memsweep/flush_interval.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace memsweep {
namespace {

std::string count_text(std::int64_t value) { return value == 0 ? "0 (all)" : std::to_string(value); }
std::string threads_text(std::int32_t value) {
  return value == 0 ? "0 (the CPUs the rank may use)" : std::to_string(value);
}
std::string source_text(const RunRow& run) {
  const std::string source = get_fixed(run.counter_source);
  return source.empty() ? "auto" : source;
}

template <std::size_t N>
void copy_if(bool keep_given, FixedString<N>& out, const FixedString<N>& stored) {
  if (!keep_given) out = stored;
}
template <typename T>
void copy_if(bool keep_given, T& out, const T& stored) {
  if (!keep_given) out = stored;
}

}  // namespace

RunRow reuse_stored_options(const RunRow& given, const RunRow& stored, const GivenOptions& which) {
  RunRow run = given;
  copy_if(which.data_dir, run.data_dirs, stored.data_dirs);
  copy_if(which.max_train_examples, run.max_train_examples, stored.max_train_examples);
  copy_if(which.max_test_examples, run.max_test_examples, stored.max_test_examples);
  copy_if(which.threads, run.threads, stored.threads);
  copy_if(which.counter_source, run.counter_source, stored.counter_source);
  copy_if(which.mem_budget, run.mem_budget, stored.mem_budget);
  copy_if(which.trial_timeout, run.trial_timeout, stored.trial_timeout);
  copy_if(which.flush_interval, run.flush_interval, stored.flush_interval);
  return run;
}

std::vector<OptionChange> measurement_changes(const RunRow& stored, const RunRow& resumed) {
  std::vector<OptionChange> changes;
  if (stored.max_train_examples != resumed.max_train_examples)
    changes.push_back(
        {"--max-train-examples", count_text(stored.max_train_examples), count_text(resumed.max_train_examples), true});
  if (stored.max_test_examples != resumed.max_test_examples)
    changes.push_back(
        {"--max-test-examples", count_text(stored.max_test_examples), count_text(resumed.max_test_examples), true});
  if (stored.threads != resumed.threads)
    changes.push_back({"--threads", threads_text(stored.threads), threads_text(resumed.threads), true});
  if (source_text(stored) != source_text(resumed))
    changes.push_back({"--counter-source", source_text(stored), source_text(resumed), false});
  return changes;
}

std::string changes_text(const std::vector<OptionChange>& changes, int stored_run) {
  std::vector<std::string> parts;
  for (const OptionChange& change : changes)
    parts.push_back(fmt::format("{} {} (run {}) -> {}", change.option, change.stored, stored_run, change.given));
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::string shell_word(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_./:=@%+,-") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string continue_command(const RunRow& run, const std::string& output, const CommandContext& context) {
  std::vector<std::string> words;
  const std::string launcher = get_fixed(run.launcher);
  if (launcher == "mpirun") {
    words = {"mpirun", "-np", std::to_string(run.ranks)};
    if (context.as_root) words.emplace_back("--allow-run-as-root");
    if (context.cpus > 0 && static_cast<unsigned>(run.ranks) > context.cpus) words.emplace_back("--oversubscribe");
  } else if (launcher == "srun") {
    words = {"srun", "-n", std::to_string(run.ranks)};
  } else if (run.ranks > 1) {
    words = {"mpiexec", "-n", std::to_string(run.ranks)};
  }
  const std::string executable = get_fixed(run.executable);
  words.push_back(executable.empty() ? "memsweep" : executable);
  words.emplace_back("run");
  words.push_back(get_fixed(run.sweep_file));
  const std::string split_by = get_fixed(run.split_by);
  if (!split_by.empty()) {
    words.insert(words.end(), {"--split-by", split_by, "--part", std::to_string(run.part)});
    // A part's -o names every part's file ({part}); without it, the default.
    const std::string output_option = get_fixed(run.output_option);
    if (!output_option.empty()) words.insert(words.end(), {"-o", output_option});
  } else {
    words.insert(words.end(), {"-o", output});
  }
  words.emplace_back("--resume");
  const std::string data_dirs = get_fixed(run.data_dirs);
  // Several folders came from MEMSWEEP_DATA; the resume reuses them as stored.
  if (!data_dirs.empty() && data_dirs.find(':') == std::string::npos)
    words.insert(words.end(), {"--data-dir", data_dirs});
  if (run.max_train_examples > 0)
    words.insert(words.end(), {"--max-train-examples", std::to_string(run.max_train_examples)});
  if (run.max_test_examples > 0)
    words.insert(words.end(), {"--max-test-examples", std::to_string(run.max_test_examples)});
  if (run.threads > 0) words.insert(words.end(), {"--threads", std::to_string(run.threads)});
  if (run.mem_budget >= 0) words.insert(words.end(), {"--mem-budget", std::to_string(run.mem_budget)});
  if (run.trial_timeout > 0) words.insert(words.end(), {"--trial-timeout", fmt::format("{}s", run.trial_timeout)});
  const std::string source = get_fixed(run.counter_source);
  if (!source.empty() && source != "auto") words.insert(words.end(), {"--counter-source", source});
  if (run.flush_interval != kDefaultFlushSeconds)
    words.insert(words.end(), {"--flush-interval", fmt::format("{}", run.flush_interval)});
  if (run.no_swmr != 0) words.emplace_back("--no-swmr");

  std::string command;
  for (const std::string& word : words) command += (command.empty() ? "" : " ") + shell_word(word);
  return command;
}

std::string launcher_from_environment() {
  // Open MPI's daemons give the ranks they start their address; srun's
  // direct launch has no daemon. mpirun inside a Slurm job also sees
  // SLURM_STEP_ID (its daemons are a step), hence this order.
  if (std::getenv("OMPI_MCA_orte_local_daemon_uri") != nullptr || std::getenv("OMPI_MCA_orte_hnp_uri") != nullptr)
    return "mpirun";
  if (std::getenv("SLURM_STEP_ID") != nullptr && std::getenv("SLURM_PROCID") != nullptr) return "srun";
  return "";
}

}  // namespace memsweep
