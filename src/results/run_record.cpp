#include "memsweep/run_record.hpp"

#include "memsweep/flush_interval.hpp"

#include <fmt/format.h>

#include <cstdlib>

// The command that continues a stopped sweep (run_record.hpp).

namespace memsweep {

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
