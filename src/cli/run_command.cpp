// `memsweep run`: the options checked, the parts wired (the results file,
// the trial runner, MPI's communicator), and the session run on every rank
// (session.hpp), whose status is the exit status.

#include "cli/run_command.hpp"

#include "cli/events_command.hpp"
#include "cli/results_path.hpp"
#include "cli/run_results_file.hpp"
#include "cli/status_file.hpp"
#include "cli/whole_number_option.hpp"
#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"
#include "memsweep/dataset_preflight.hpp"
#include "memsweep/error.hpp"
#include "memsweep/flush_interval.hpp"
#include "memsweep/mpi_communicator.hpp"
#include "memsweep/program.hpp"
#include "memsweep/rank_gpus.hpp"
#include "memsweep/results.hpp"
#include "memsweep/run_record.hpp"
#include "memsweep/session.hpp"
#include "memsweep/stop_signals.hpp"
#include "memsweep/store.hpp"
#include "memsweep/sweep_split.hpp"
#include "memsweep/training_runner.hpp"
#include "memsweep/trial_process_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <utility>

namespace memsweep::cli {
namespace {

namespace fs = std::filesystem;

// RunRow::data_dirs back into the search list: the stored folders are
// absolute and ':'-separated, as $MEMSWEEP_DATA's, so that parser reads them.
std::vector<fs::path> data_dirs_of(const RunRow& run) {
  return dataset_search_dirs(std::nullopt, get_fixed(run.data_dirs), fs::current_path());
}

std::vector<std::string> path_texts(const std::vector<fs::path>& paths) {
  std::vector<std::string> texts;
  for (const fs::path& path : paths) texts.push_back(path.string());
  return texts;
}

// Options that contradict each other or need another (InputError).
void check_option_combinations(const RunOptions& options) {
  if (options.resume && options.force)
    throw InputError("--resume and --force contradict each other: --resume continues the file, --force replaces it");
  if (options.quiet && options.verbose) throw InputError("--quiet and --verbose contradict each other");
  if ((options.retry || options.retry_failed) && !options.resume)
    throw InputError(fmt::format("--{} runs ended trials again: it needs --resume and a results file to resume",
                                 options.retry ? "retry" : "retry-failed"));
  if (options.allow_changed_options && !options.resume)
    throw InputError("--allow-changed-options lets a resume measure differently: it needs --resume");
  if (options.part && !options.split_by)
    throw InputError(fmt::format(
        "--part {} needs --split-by FIELD: the field the sweep is split by (memsweep plan SWEEP --split-by FIELD "
        "lists the parts)",
        *options.part));
  if (options.split_by && !options.part)
    throw InputError(
        fmt::format("--split-by {} needs --part K: which part this run is, from 0 (e.g. --part $SLURM_ARRAY_TASK_ID)",
                    *options.split_by));
}

// --mem-budget, --trial-timeout and --flush-interval into `given`.
void read_limits(const RunOptions& options, RunRow& given, GivenOptions& which) {
  which.mem_budget = options.mem_budget.has_value();
  if (options.mem_budget && *options.mem_budget != "none") {
    const std::optional<std::uint64_t> bytes = parse_byte_size(*options.mem_budget);
    if (!bytes && is_too_large_byte_size(*options.mem_budget))
      throw InputError(
          fmt::format("--mem-budget: \"{}\" is more than {}, the largest budget memsweep takes; for no "
                      "budget, give none",
                      *options.mem_budget, kMaxByteSizeText));
    if (!bytes)
      throw InputError(
          fmt::format("--mem-budget: expected {}, or none, got \"{}\"", kByteSizeHelp, *options.mem_budget));
    given.mem_budget = static_cast<std::int64_t>(*bytes);
  }
  which.trial_timeout = options.trial_timeout.has_value();
  if (options.trial_timeout && *options.trial_timeout != "none") {
    const std::optional<double> seconds = parse_duration(*options.trial_timeout);
    if (!seconds && is_too_long_duration(*options.trial_timeout))
      throw InputError(
          fmt::format("--trial-timeout: \"{}\" is longer than {}, the longest time limit memsweep "
                      "takes; for no limit, give none",
                      *options.trial_timeout, kMaxDurationText));
    if (!seconds || *seconds < 0.001)
      throw InputError(
          fmt::format("--trial-timeout: expected {}, or none, got \"{}\"", kDurationHelp, *options.trial_timeout));
    given.trial_timeout = *seconds;
  }
  which.flush_interval = options.flush_seconds.has_value();
  const double flush_seconds = options.flush_seconds.value_or(kDefaultFlushSeconds);
  if (!(flush_seconds > 0.0) || flush_seconds > 3600.0)
    throw InputError(fmt::format("--flush-interval: expected seconds in (0, 3600], got {}", flush_seconds));
  given.flush_interval = std::max(flush_seconds, 0.001);
}

// --data-dir, --threads and the example limits into `given`.
void read_training_options(const RunOptions& options, RunRow& given, GivenOptions& which) {
  which.data_dir = options.data_dir.has_value();
  set_fixed(given.data_dirs, join(path_texts(dataset_search_dirs_from_environment(
                                      options.data_dir ? std::optional<fs::path>(*options.data_dir) : std::nullopt)),
                                  ":"));
  which.threads = options.threads.has_value();
  given.threads = options.threads.value_or(0);
  which.max_train_examples = options.max_train_examples.has_value();
  given.max_train_examples = static_cast<std::int64_t>(options.max_train_examples.value_or(0));
  which.max_test_examples = options.max_test_examples.has_value();
  given.max_test_examples = static_cast<std::int64_t>(options.max_test_examples.value_or(0));
}

// --retry, --retry-failed and --retry-killed; the statuses run again are
// recorded in `given`.
RetryPolicy read_retry(const RunOptions& options, RunRow& given) {
  std::set<TrialStatus> retried;
  if (options.retry) {
    const std::optional<std::set<TrialStatus>> statuses = parse_retry_statuses(*options.retry);
    if (!statuses)
      throw InputError(fmt::format("--retry: expected statuses separated by commas, each one of {}; got \"{}\"",
                                   kRetryStatusNames, *options.retry));
    retried = *statuses;
  }
  if (options.retry_failed) retried.insert(TrialStatus::failed);
  std::vector<std::string> retried_names;
  for (const TrialStatus status : retried) retried_names.emplace_back(status_name(status));
  set_fixed(given.retried, join(retried_names, ","));
  return RetryPolicy(options.retry_killed, retried);
}

// --worker-silence: at least a few of a worker's one-second ALIVE messages,
// at most a day (a longer silence is a hang by any measure).
std::chrono::milliseconds read_worker_silence(const std::string& text) {
  constexpr double kShortest = 3.0;
  constexpr double kLongest = 86400.0;
  const std::optional<double> seconds = parse_duration(text);
  if (!seconds || *seconds < kShortest || *seconds > kLongest)
    throw InputError(fmt::format("--worker-silence: expected {}, from 3s to 1d; got \"{}\"", kDurationHelp, text));
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(*seconds));
}

RunSettings check_options(const RunOptions& options) {
  check_option_combinations(options);
  RunSettings settings;
  read_limits(options, settings.given, settings.which);
  if (options.counter_source) settings.counter_source = parse_counter_source(*options.counter_source);
  settings.which.counter_source = options.counter_source.has_value();
  read_training_options(options, settings.given, settings.which);
  settings.given.no_swmr = options.no_swmr ? 1 : 0;
  settings.retry = read_retry(options, settings.given);
  settings.verbosity = options.quiet ? Verbosity::quiet : options.verbose ? Verbosity::verbose : Verbosity::normal;
  if (options.worker_silence) settings.worker_silence = read_worker_silence(*options.worker_silence);
  return settings;
}

}  // namespace

void add_run_command(CLI::App& app, RunOptions& options) {
  CLI::App* run = app.add_subcommand(
      "run",
      "Run a sweep: under mpirun or srun, rank 0 hands out trials and writes the results file, the other ranks train; "
      "alone, the one process does both");
  run->add_option("sweep", options.sweep_file, "The sweep file (TOML)")->required();
  run->add_option("-o,--output", options.output,
                  "The results file (HDF5); default: the sweep file's name with .h5 (with --split-by: with .LABEL.h5, "
                  "and -o must contain {part}, which the part's label replaces)");
  run->add_option("--split-by", options.split_by,
                  fmt::format("Run one part of the sweep, the trials sharing one value of this field (with --part; "
                              "memsweep plan --split-by lists the parts); one of: {}",
                              kSplitFields));
  run->add_option("--part", options.part,
                  "Which part to run, from 0 in memsweep plan --split-by's order (e.g. $SLURM_ARRAY_TASK_ID)")
      ->check(whole_number_from(0, INT32_MAX));
  run->add_flag("--resume", options.resume,
                "Continue an existing results file: run only the trials without a final status (starts the file if "
                "it does not exist)");
  run->add_flag("--force", options.force, "Replace an existing results file");
  run->add_option("--retry-killed", options.retry_killed,
                  "Run a trial again after it was killed (the OOM killer, a signal, its rank lost both of the last two "
                  "times it ran it) at most N times")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--retry-failed", options.retry_failed,
                "With --resume: run once more each trial whose latest attempt failed (e.g. after fixing a dataset "
                "path)");
  run->add_option("--retry", options.retry,
                  fmt::format("With --resume: run once more each trial whose latest attempt ended with one of these "
                              "statuses, comma-separated: {}",
                              kRetryStatusNames));
  run->add_flag("--allow-changed-options", options.allow_changed_options,
                "With --resume: accept example limits or threads that differ from what the file's last run measured "
                "with (recorded in /runs)");
  run->add_option("--mem-budget", options.mem_budget,
                  "Per trial process: skip trials whose estimate exceeds it, stop a trial whose RSS passes it (e.g. "
                  "2GiB; none: no budget). A resume reuses the last run's unless given");
  run->add_option("--trial-timeout", options.trial_timeout,
                  "Per trial: stop a trial still training after this long (e.g. 30m, 1h30m, 90s; none: no limit); "
                  "status timeout. A resume reuses the last run's unless given");
  add_counter_source_option(*run, options.counter_source);
  run->add_option("--data-dir", options.data_dir,
                  "Where the real datasets are (default: $MEMSWEEP_DATA, else ./data; a resume: the last run's)");
  run->add_option("--threads", options.threads,
                  fmt::format("Training threads per rank, at most {} (default: the CPUs the rank may use; a resume: "
                              "the last run's)",
                              kMaxThreads))
      ->check(whole_number_from(0, kMaxThreads));
  run->add_option(
      "--flush-interval", options.flush_seconds,
      fmt::format("Seconds between a worker's sends of a running trial's samples (default {})", kDefaultFlushSeconds));
  run->add_option("--worker-silence", options.worker_silence,
                  "Under MPI: give up a worker rank that sent nothing for this long (stopped or hung) once its trial "
                  "is also past its time limit by as much; its trial runs again on another rank and the job ends "
                  "with exit status 4 when the sweep is done (default 30s)");
  run->add_option("--lost-cause", options.lost_cause,
                  "With --resume: why the last start lost the attempts that have samples but no result, as the job "
                  "script knows it (jobs/sweep.sbatch: node_lost after a node failure); recorded as their end cause; "
                  "they are interrupted and run again either way (default rank_lost)")
      ->check(CLI::IsMember({std::string(end_cause::kRankLost), std::string(end_cause::kNodeLost)}));
  run->add_flag("--no-swmr", options.no_swmr,
                "Write without HDF5's single-writer/multiple-reader mode (for filesystems such as NFS that do not "
                "keep write order; no live reader then)");
  run->add_flag("-q,--quiet", options.quiet, "Print only failed trials and the final line");
  run->add_flag("-v,--verbose", options.verbose, "Also print each trial as it starts, with its hyperparameters");
  // At most INT64_MAX: /runs holds them as int64.
  run->add_option("--max-train-examples", options.max_train_examples,
                  "Train on the first N examples of each dataset only (quick runs; 0: all; a resume: the last run's)")
      ->check(whole_number_from(0, INT64_MAX));
  run->add_option("--max-test-examples", options.max_test_examples,
                  "Evaluate on the first N test examples only (quick runs; 0: all; a resume: the last run's)")
      ->check(whole_number_from(0, INT64_MAX));
}

namespace {

// Each distinct program once: a sweep of 10^4 trials names a few.
void check_programs(const std::vector<TrialSpec>& every_value) {
  std::set<std::string> checked;
  for (const TrialSpec& trial : every_value)
    if (trial.program && checked.insert(trial.program->place + '\n' + trial.program->command.front()).second)
      check_program(trial);
}

// Whether a trial reads a dataset's files or is given the data folder
// ({data_dir}, which a program with synthetic data gets too): only then do
// the data folders matter to the run.
bool uses_data_folders(const std::vector<TrialSpec>& every_value) {
  return std::any_of(every_value.begin(), every_value.end(), [](const TrialSpec& trial) {
    return reads_dataset_files(trial) || (trial.program && trial.program->uses_data_dir);
  });
}

// Beside the results file: results.h5 → results.logs/.
fs::path program_log_dir(const fs::path& results) {
  return results.parent_path() / (results.stem().string() + ".logs");
}

// The session's steps for `memsweep run`: this rank's reading of the options
// and the sweep file, the results file (rank 0) and the trial runner.
class RunSteps final : public SessionSteps {
 public:
  // `root`: rank 0, the one that writes $MEMSWEEP_STATUS_FILE.
  RunSteps(const RunOptions& options, bool root) : options_(options), root_(root) {}

  std::string load() override {
    // First: an error in what follows still gets its status written.
    if (root_) status_file_ = StatusFile::from_environment(options_.sweep_file);
    settings_ = check_options(options_);
    sweep_ = load_sweep_file(options_.sweep_file);
    if (settings_.counter_source) sweep_.sampler.counter_source = *settings_.counter_source;
    const std::size_t whole_sweep_trials = sweep_.trials.size();
    if (options_.split_by) select_part_of();
    notes_ = sweep_.notes;
    if (part_)
      notes_.push_back(fmt::format("part {} of parts 0..{} by {}: {}, {} of the sweep's {} trials", part_->index,
                                   part_->count - 1, part_->part.field, part_->part.name(), sweep_.trials.size(),
                                   whole_sweep_trials));
    settings_.output = cli::results_path(options_.sweep_file, options_.output,
                                         part_ ? std::optional<std::string>(part_->part.label) : std::nullopt);
    refuse_status_file_as_results();
    // On every rank: a program may be installed on one node and not another.
    const std::vector<TrialSpec> every_value = sweep_.trials.every_value();
    check_programs(every_value);
    if (!uses_data_folders(every_value)) forget_data_dirs();
    // On every rank too: each node's own calibration (or the built-in cost).
    trial_process_cost_ = machine_trial_process_cost();
    hash_ = sweep_hash(sweep_);
    return hash_;
  }

  const SweepSpec& sweep() const override { return sweep_; }
  Verbosity verbosity() const override { return settings_.verbosity; }
  std::vector<std::string> notes() const override { return notes_; }
  std::string results_path() const override { return settings_.output.string(); }

  // Rank 0 only; a resume's file stays held in decided_ until open_results.
  RunRow decide_run_row(int ranks, const std::vector<std::string>& hosts, ProgressReporter& notes) override {
    decided_ = cli::decide_run_row(input(), ranks, hosts, notes);
    return decided_.run;
  }

  // Each rank resolves --data-dir (or $MEMSWEEP_DATA, ./data) itself, as
  // node-local setups may; a resume not given one reads where the file's
  // last run did. Every rank looks for the datasets there before anything
  // is written: a folder may hold them on one node and not on another.
  void check_datasets(const RunRow& run) override {
    data_dirs_ = options_.resume && !options_.data_dir
                     ? data_dirs_of(run)
                     : dataset_search_dirs_from_environment(
                           options_.data_dir ? std::optional<fs::path>(*options_.data_dir) : std::nullopt);
    require_datasets(::memsweep::check_datasets(sweep_.trials.every_value(), data_dirs_));
  }

  // Each rank its own GPUs: as many as the hungriest of its trials needs,
  // from the devices the job gave its node.
  void assign_gpus(const std::vector<std::string>& hosts, int rank) override {
    const std::vector<TrialSpec> every_value = sweep_.trials.every_value();
    gpus_ = assign_rank_gpus(hosts, rank, [&](bool node_has_gpus) {
      int most = 0;
      for (const TrialSpec& trial : every_value) most = std::max(most, trial.gpus_needed(node_has_gpus));
      return most;
    });
  }

  OpenedResults open_results(const RunRow& run, const Communicator& comm, const std::vector<std::string>& hosts,
                             ProgressReporter& notes) override {
    OpenedStore opened = open_results_file(input(), run, std::move(decided_), comm, hosts, notes);
    store_ = std::move(opened.store);
    sink_.emplace(*store_);
    return {.sink = &*sink_,
            .pending = std::move(opened.pending),
            .counter_columns = std::move(opened.counter_columns),
            .run_index = store_->run_index(),
            .search_history = std::move(opened.search_history)};
  }

  std::unique_ptr<TrialRunner> make_runner(const RunRow& run, const RunnerSetup& setup) override {
    auto training = make_training_runner(runner_options(run, setup));
    if (setup.notes != nullptr && !training->isolation_problem().empty())
      setup.notes->note(
          fmt::format("trials measured through /proc, without a cgroup each: {}", training->isolation_problem()));
    if (setup.notes != nullptr && !training->gpu_problem().empty()) setup.notes->note(training->gpu_problem());
    return training;
  }

  std::chrono::milliseconds worker_silence() const override { return settings_.worker_silence; }

  // $MEMSWEEP_STATUS_FILE: rank 0's exit status on its first line, for a
  // job script whose launcher may report another (jobs/sweep.sbatch), then
  // "left N" when the sweep ran: whether a requeue has anything to do. Best
  // effort: the status itself is what the process returns. Only a path
  // that load() accepted is written: one it refused ends the run unwritten.
  void ending(int exit_status, std::optional<std::size_t> trials_left) override {
    if (status_file_) status_file_->write(exit_status, trials_left);
  }

  void close_results(bool complete) override {
    store_->mark_run(complete ? run_end_state::kEnded : run_end_state::kStopped);
    store_->close();
  }

 private:
  // With --split-by: this part's trials replace the sweep's.
  void select_part_of() {
    part_ = select_part(sweep_, *options_.split_by, *options_.part);
    sweep_ = std::move(part_->sweep);
    part_name_ = part_->part.name();
  }

  TrainingRunnerOptions runner_options(const RunRow& run, const RunnerSetup& setup) const {
    TrainingRunnerOptions runner_options;
    runner_options.data_dirs = data_dirs_;
    runner_options.threads = run.threads;
    runner_options.sampler_interval = std::chrono::milliseconds(sweep_.sampler.interval_ms);
    runner_options.counter_columns = setup.counter_columns;
    runner_options.max_chunk_age = setup.flush_interval;
    runner_options.max_train_examples = static_cast<std::size_t>(run.max_train_examples);
    runner_options.max_test_examples = static_cast<std::size_t>(run.max_test_examples);
    // limit_milliseconds: a resume's limit comes from the results file, which may hold anything.
    if (run.trial_timeout > 0) runner_options.trial_timeout = limit_milliseconds(run.trial_timeout);
    runner_options.log_dir = program_log_dir(settings_.output);
    runner_options.trial_process_cost = trial_process_cost_;
    runner_options.gpus = gpus_;
    return runner_options;
  }

  // A sweep that reads no dataset records no data folders: its resume
  // line (the stop's, summary's) then has no --data-dir (issue 43), and a
  // resume neither reuses nor mentions the last run's.
  void forget_data_dirs() {
    set_fixed(settings_.given.data_dirs, "");
    settings_.which.data_dir = true;
  }

  // The status file is not the results file (created, then overwritten
  // with "0\n" as the run ends), nor another file. Refused, it is not
  // written either.
  void refuse_status_file_as_results() {
    if (!status_file_) return;
    try {
      status_file_->refuse_results_file_or_contents(settings_.output);
    } catch (const InputError&) {
      status_file_.reset();
      throw;
    }
  }

  RunInput input() const { return {options_, settings_, sweep_, part_name_, hash_, trial_process_cost_}; }

  const RunOptions& options_;
  const bool root_;
  std::optional<StatusFile> status_file_;  // rank 0's, once checked
  RunSettings settings_;
  SweepSpec sweep_;
  std::optional<SelectedPart> part_;  // with --split-by: which part (its `sweep` moved into sweep_)
  std::string part_name_;             // SweepPart::name(), or empty: the whole sweep
  std::string hash_;
  std::vector<std::string> notes_;
  std::vector<fs::path> data_dirs_;
  TrialProcessCost trial_process_cost_;  // added to each built-in trial's prediction
  RankGpus gpus_;                        // this rank's (assign_gpus)
  DecidedRun decided_;                   // rank 0's, from decide_run_row to open_results
  std::optional<ResultStore> store_;     // rank 0's
  std::optional<StoreSink> sink_;
};

}  // namespace

int run_run_command(const RunOptions& options) {
  // Before MPI's start-up, which can take seconds on a cluster: Slurm's
  // walltime warning may arrive at once when a requeued job starts within
  // its warning window, and must then stop the sweep, not kill the rank.
  install_stop_signals();
  MpiSession mpi(nullptr, nullptr);
  std::unique_ptr<Communicator> comm = make_mpi_communicator(MPI_COMM_WORLD);
  RunSteps steps(options, comm->rank() == 0);
  return run_session(*comm, steps);
}

}  // namespace memsweep::cli
