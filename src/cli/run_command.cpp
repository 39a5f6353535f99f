#include "cli/run_command.hpp"

#include "cli/events_command.hpp"
#include "cli/results_path.hpp"
#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"
#include "memsweep/error.hpp"
#include "memsweep/mpi_communicator.hpp"
#include "memsweep/program.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/stop_signals.hpp"
#include "memsweep/store.hpp"
#include "memsweep/sweep_split.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/training_runner.hpp"
#include "memsweep/version.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace memsweep::cli {
namespace {

namespace fs = std::filesystem;

// Whatever fails before the sweep starts fails on every rank alike (the
// ranks agree first), so that no rank waits in a collective for one that
// left; rank 0 alone prints the message.
class SetupFailure : public std::runtime_error {
 public:
  SetupFailure(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

// What rank 0 tells every rank once the results file is ready.
struct Setup {
  int status = exit_status::kOk;
  std::string message;  // why, when status is not ok
  std::vector<CounterRequest> counter_columns;

  // One field per line; event names and messages have no newlines.
  std::string encode() const {
    std::string text = fmt::format("{}\n{}\n", status, message);
    for (const CounterRequest& column : counter_columns)
      text += fmt::format("{}\n{}\n", column.name, counter_source_name(column.source));
    return text;
  }
  static Setup decode(const std::string& text) {
    Setup setup;
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);
    setup.status = std::stoi(line);
    std::getline(lines, setup.message);
    std::string source;
    while (std::getline(lines, line) && std::getline(lines, source))
      setup.counter_columns.push_back({line, parse_counter_source(source).value_or(CounterSourceChoice::automatic)});
    return setup;
  }
};

// The checked form of the options.
struct RunSettings {
  fs::path output;  // set once the sweep (and the part's label) is known
  std::optional<std::uint64_t> mem_budget_bytes;
  std::optional<std::chrono::milliseconds> trial_timeout;
  std::optional<CounterSourceChoice> counter_source;  // overrides the sweep file's [sampler] counter_source
  std::chrono::milliseconds flush_interval{2000};
  Verbosity verbosity = Verbosity::normal;
};

RunSettings check_options(const RunOptions& options) {
  RunSettings settings;
  if (options.resume && options.force)
    throw InputError("--resume and --force contradict each other: --resume continues the file, --force replaces it");
  if (options.quiet && options.verbose) throw InputError("--quiet and --verbose contradict each other");
  if (options.part && !options.split_by)
    throw InputError(fmt::format(
        "--part {} needs --split-by FIELD: the field the sweep is split by (memsweep plan SWEEP --split-by FIELD "
        "lists the parts)",
        *options.part));
  if (options.split_by && !options.part)
    throw InputError(
        fmt::format("--split-by {} needs --part K: which part this run is, from 0 (e.g. --part $SLURM_ARRAY_TASK_ID)",
                    *options.split_by));
  if (!options.mem_budget.empty()) {
    settings.mem_budget_bytes = parse_byte_size(options.mem_budget);
    if (!settings.mem_budget_bytes)
      throw InputError(fmt::format("--mem-budget: expected {}, got \"{}\"", kByteSizeHelp, options.mem_budget));
  }
  if (!options.trial_timeout.empty()) {
    const std::optional<double> seconds = parse_duration(options.trial_timeout);
    if (!seconds || *seconds < 0.001)
      throw InputError(fmt::format("--trial-timeout: expected {}, got \"{}\"", kDurationHelp, options.trial_timeout));
    settings.trial_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(*seconds * 1000.0)));
  }
  if (options.counter_source) settings.counter_source = parse_counter_source(*options.counter_source);
  if (!(options.flush_seconds > 0.0) || options.flush_seconds > 3600.0)
    throw InputError(fmt::format("--flush-interval: expected seconds in (0, 3600], got {}", options.flush_seconds));
  settings.flush_interval =
      std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(options.flush_seconds * 1000.0)));
  if (settings.flush_interval.count() < 1) settings.flush_interval = std::chrono::milliseconds(1);
  settings.verbosity = options.quiet ? Verbosity::quiet : options.verbose ? Verbosity::verbose : Verbosity::normal;
  return settings;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string utc_now_text() { return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr))); }

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

// The sampler's counters are rank 0's choice, so that every rank writes the
// same columns: the events asked for (or the defaults) that this machine
// has, each from the source that served it here.
struct CounterColumns {
  std::vector<std::string> names;
  std::vector<std::string> sources;    // event_source_name()
  std::vector<std::string> encodings;  // encoding_text()
  std::vector<std::string> notes;      // the events left out, and why
  std::vector<std::string> left_out;
};

CounterColumns choose_counter_columns(const SweepSpec& sweep) {
  const CounterSourceChoice choice = sweep.sampler.counter_source;
  const std::vector<std::string> requested =
      sweep.sampler.events.empty() ? default_events(choice) : sweep.sampler.events;
  CounterColumns columns;
  for (const EventStatus& event : probe_events(requested, choice)) {
    std::string why = event.detail;
    if (event.available && columns.names.size() == kMaxCounters)
      why = fmt::format("more than {} events", kMaxCounters);
    else if (event.available) {
      columns.names.push_back(event.name);
      columns.sources.emplace_back(event_source_name(event.source));
      columns.encodings.push_back(encoding_text(event.encoding));
      continue;
    }
    columns.notes.push_back(fmt::format("{}: not recorded: {}", event.name, why));
    columns.left_out.push_back(event.name);
  }
  return columns;
}

// A column is opened from the source that served it when the file was
// created; a file that does not say (written before there were two) from
// either, PAPI first.
std::vector<CounterRequest> counter_requests(const FileHeader& header) {
  std::vector<CounterRequest> requests;
  for (std::size_t i = 0; i < header.counter_columns.size(); ++i) {
    const std::optional<CounterSourceChoice> source =
        i < header.counter_sources.size() ? parse_counter_source(header.counter_sources[i]) : std::nullopt;
    requests.push_back({header.counter_columns[i], source.value_or(CounterSourceChoice::automatic)});
  }
  return requests;
}

// Rank 0's writer behind the scheduler's sink interface.
class StoreSink final : public ResultSink {
 public:
  explicit StoreSink(ResultStore& store) : store_(store) {}
  void samples(std::span<const SampleRow> rows) override { store_.append_samples(rows); }
  void epoch(const EpochRow& row) override { store_.append_epoch(row); }
  void trial(const TrialRow& row) override { store_.append_trial(row); }
  void stopping() override { store_.mark_run(run_end_state::kStopping); }

 private:
  ResultStore& store_;
};

// Rank 0 before the sweep: the results file created or reopened, and the
// attempts still to run.
struct Prepared {
  std::optional<ResultStore> store;
  std::vector<PendingTrial> pending;
  std::vector<CounterRequest> counter_columns;  // each from the source that served it on rank 0
};

// Who the previous run lost its unfinished attempts to: rank 0 marks its run
// when it sees a stop begin (under mpirun, the signal every rank gets when
// another rank dies), so a run without the mark lost them with rank 0.
LostAttempts lost_attempts(const ResultStore& store) {
  const std::vector<RunRow> runs = store.read_runs();
  const int previous = store.run_index() - 1;
  if (previous < 0 || previous >= static_cast<int>(runs.size())) return LostAttempts::rank_died;
  return get_fixed(runs[static_cast<std::size_t>(previous)].end_state).empty() ? LostAttempts::writer_died
                                                                               : LostAttempts::rank_died;
}

// "part dataset=mnist", or "the whole sweep" for a file without a part.
std::string part_text(const std::string& part) { return part.empty() ? "the whole sweep" : "part " + part; }

// `part`: SweepPart::name() when the run is one part of the sweep, else empty.
Prepared prepare_results_file(const RunOptions& options, const RunSettings& settings, const SweepSpec& sweep,
                              const std::string& part, const std::string& hash, Communicator& comm,
                              const std::vector<std::string>& hosts, ProgressReporter& progress) {
  Prepared prepared;
  const StoreOptions store_options{.swmr = !options.no_swmr};
  RunRow run;
  run.start_time = unix_now();
  run.ranks = comm.size();
  set_fixed(run.hosts, join(hosts, ","));
  set_fixed(run.command_line, join(options.command_line, " "));
  set_fixed(run.memsweep_version, kVersion);

  if (options.resume && fs::exists(settings.output)) {
    const auto same_sweep = [&](const FileHeader& found) {
      // The hash covers the trials, so another part's file (or the whole
      // sweep's) never matches; the message then says which part it holds.
      if (found.sweep_hash != hash && found.part != part)
        throw InputError(fmt::format(
            "{}: holds {} of sweep \"{}\" (hash {}), but this run is {} of sweep \"{}\" (hash {}): --resume "
            "continues only the same trials; give the --split-by and --part that wrote it, or write to another file",
            settings.output.string(), part_text(found.part), found.sweep_name, found.sweep_hash, part_text(part),
            sweep.name, hash));
      if (found.sweep_hash != hash)
        throw InputError(fmt::format(
            "{}: written by sweep \"{}\" (hash {}), but {} now defines sweep \"{}\" (hash {}): --resume continues "
            "only the same trials with the same sampler settings; write to a new file instead",
            settings.output.string(), found.sweep_name, found.sweep_hash, options.sweep_file, sweep.name, hash));
    };
    ResultStore store = ResultStore::open_for_resume(settings.output, run, store_options, same_sweep);
    const FileHeader& header = store.header();
    const ResumePlan plan = plan_resume(sweep.trials, store.read_trials(), store.scan_series(), options.retry_killed,
                                        store.run_index(), lost_attempts(store));
    for (const TrialRow& row : plan.lost_rows) {
      store.append_trial(row);
      progress.note(
          fmt::format("trial {} attempt {}: {}", get_fixed(row.trial_id), row.attempt, get_fixed(row.message)));
    }
    progress.note(fmt::format("resuming {} (run {}): {} of {} trials done, {} to run{}", settings.output.string(),
                              store.run_index(), plan.already_final, sweep.trials.size(), plan.pending.size(),
                              plan.killed_not_retried > 0
                                  ? fmt::format(", {} killed and not retried (--retry-killed {})",
                                                plan.killed_not_retried, options.retry_killed)
                                  : std::string()));
    prepared.pending = plan.pending;
    prepared.counter_columns = counter_requests(header);
    prepared.store.emplace(std::move(store));
    return prepared;
  }

  FileHeader header;
  header.sweep_name = sweep.name;
  header.sweep_file = options.sweep_file;
  header.sweep_text = sweep.source_text;
  header.sweep_hash = hash;
  header.part = part;
  header.command_line = join(options.command_line, " ");
  header.memsweep_version = kVersion;
  header.onednn_version = onednn_version();
  header.mpi_version = comm.library_version();
  header.papi_version = counter_library_version();
  header.hdf5_version = hdf5_library_version();
  header.ranks = comm.size();
  header.hosts = hosts;
  header.start_time = utc_now_text();
  header.sampler_interval_ms = sweep.sampler.interval_ms;
  header.planned_trials = static_cast<std::int64_t>(sweep.trials.size());
  header.events_requested = sweep.sampler.events;
  CounterColumns counters = choose_counter_columns(sweep);
  header.counter_columns = std::move(counters.names);
  header.counter_sources = std::move(counters.sources);
  header.counter_encodings = std::move(counters.encodings);
  header.event_notes = std::move(counters.notes);
  header.swmr = store_options.swmr;
  // One line: the reasons are in the file's event_notes and in `memsweep events`.
  if (!counters.left_out.empty())
    progress.note(fmt::format("counters: not recording {} (memsweep events says why)", join(counters.left_out, ", ")));
  if (options.resume) progress.note(fmt::format("{} does not exist yet: starting it", settings.output.string()));

  prepared.store.emplace(ResultStore::create(settings.output, header, options.force, store_options));
  prepared.counter_columns = counter_requests(header);
  for (std::size_t i = 0; i < sweep.trials.size(); ++i) prepared.pending.push_back({i, 0});
  return prepared;
}

std::string status_counts(const SweepResult& result) {
  std::vector<std::string> parts;
  for (const auto& [status, count] : result.by_status) parts.push_back(fmt::format("{} {}", count, status));
  return parts.empty() ? "none" : join(parts, ", ");
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
                  "Which part to run, from 0 in memsweep plan --split-by's order (e.g. $SLURM_ARRAY_TASK_ID)");
  run->add_flag("--resume", options.resume,
                "Continue an existing results file: run only the trials without a final status (starts the file if "
                "it does not exist)");
  run->add_flag("--force", options.force, "Replace an existing results file");
  run->add_option("--retry-killed", options.retry_killed,
                  "Run a trial again after it was killed (the OOM killer, a signal, its rank dying) at most N times")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--mem-budget", options.mem_budget,
                  "Per trial process: skip trials whose estimate exceeds it, stop a trial whose RSS passes it (e.g. "
                  "2GiB)");
  run->add_option("--trial-timeout", options.trial_timeout,
                  "Per trial: stop a trial still training after this long (e.g. 30m, 1h30m, 90s); status timeout");
  add_counter_source_option(*run, options.counter_source);
  run->add_option("--data-dir", options.data_dir, "Where the real datasets are (default: $MEMSWEEP_DATA, else ./data)");
  run->add_option("--threads", options.threads, "Training threads per rank (default: the CPUs the rank may use)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--flush-interval", options.flush_seconds,
                  "Seconds between a worker's sends of a running trial's samples (default 2)");
  run->add_flag("--no-swmr", options.no_swmr,
                "Write without HDF5's single-writer/multiple-reader mode (for filesystems such as NFS that do not "
                "keep write order; no live reader then)");
  run->add_flag("-q,--quiet", options.quiet, "Print only failed trials and the final line");
  run->add_flag("-v,--verbose", options.verbose, "Also print each trial as it starts, with its hyperparameters");
  run->add_option("--max-train-examples", options.max_train_examples,
                  "Train on the first N examples of each dataset only (quick runs; 0: all)");
  run->add_option("--max-test-examples", options.max_test_examples,
                  "Evaluate on the first N test examples only (quick runs; 0: all)");
}

namespace {

// Each distinct program once: a sweep of 10^4 trials names a few.
void check_programs(const SweepSpec& sweep) {
  std::set<std::string> checked;
  for (const TrialSpec& trial : sweep.trials)
    if (trial.program && checked.insert(trial.program->place + '\n' + trial.program->command.front()).second)
      check_program(trial);
}

// Beside the results file: results.h5 → results.logs/.
fs::path program_log_dir(const fs::path& results) {
  return results.parent_path() / (results.stem().string() + ".logs");
}

int run_on_every_rank(const RunOptions& options, Communicator& comm) {
  const bool root = comm.rank() == 0;
  const std::atomic<bool>& stop = install_stop_signals();

  std::optional<RunSettings> settings;
  SweepSpec sweep;
  std::optional<SelectedPart> part;  // with --split-by: which part (its `sweep` moved into `sweep`)
  std::size_t whole_sweep_trials = 0;
  std::string hash;
  std::string local_error;
  try {
    settings = check_options(options);
    sweep = load_sweep_file(options.sweep_file);
    if (settings->counter_source) sweep.sampler.counter_source = *settings->counter_source;
    whole_sweep_trials = sweep.trials.size();
    if (options.split_by) {
      part = select_part(sweep, *options.split_by, *options.part);
      sweep = std::move(part->sweep);
    }
    settings->output = results_path(options.sweep_file, options.output,
                                    part ? std::optional<std::string>(part->part.label) : std::nullopt);
    // On every rank: a program may be installed on one node and not another.
    check_programs(sweep);
    hash = sweep_hash(sweep);
  } catch (const InputError& error) {
    local_error = error.what();
  }

  try {
    // Every rank read the file itself: they agree on the sweep or all stop.
    const std::vector<std::string> errors = comm.all_gather(local_error);
    for (std::size_t rank = 0; rank < errors.size(); ++rank)
      if (!errors[rank].empty())
        throw SetupFailure(exit_status::kBadInput,
                           rank == 0 ? errors[rank] : fmt::format("rank {}: {}", rank, errors[rank]));
    check_same_sweep(comm, hash);
  } catch (const InputError& error) {
    throw SetupFailure(exit_status::kBadInput, error.what());
  }
  const std::vector<std::string> hosts = comm.all_gather(comm.host_name());

  const int workers = comm.size() > 1 ? comm.size() - 1 : 1;
  // Notes before the sweep; the trials' own progress needs the number left,
  // which is known once rank 0 has read the file.
  ProgressReporter notes(std::cerr, settings->verbosity, sweep.trials.size(), workers);
  if (root) {
    for (const std::string& note : sweep.notes) notes.note(note);
    if (part)
      notes.note(fmt::format("part {} of parts 0..{} by {}: {}, {} of the sweep's {} trials", part->index,
                             part->count - 1, part->part.field, part->part.name(), sweep.trials.size(),
                             whole_sweep_trials));
  }

  // Rank 0 opens the file; every rank learns whether that worked.
  Prepared prepared;
  std::string setup_text;
  if (root) {
    Setup setup;
    try {
      prepared =
          prepare_results_file(options, *settings, sweep, part ? part->part.name() : "", hash, comm, hosts, notes);
      setup.counter_columns = prepared.counter_columns;
    } catch (const InputError& error) {
      setup = {exit_status::kBadInput, error.what(), {}};
    } catch (const std::exception& error) {
      setup = {exit_status::kFailure, error.what(), {}};
    }
    setup_text = setup.encode();
  }
  comm.broadcast(setup_text);
  const Setup setup = Setup::decode(setup_text);
  if (setup.status != exit_status::kOk) throw SetupFailure(setup.status, setup.message);

  std::unique_ptr<TrialRunner> runner;
  if (!root || comm.size() == 1) {
    TrainingRunnerOptions runner_options;
    runner_options.data_dirs = dataset_search_dirs_from_environment(
        options.data_dir ? std::optional<fs::path>(*options.data_dir) : std::nullopt);
    runner_options.threads = options.threads;
    runner_options.sampler_interval = std::chrono::milliseconds(sweep.sampler.interval_ms);
    runner_options.counter_columns = setup.counter_columns;
    runner_options.max_chunk_age = settings->flush_interval;
    runner_options.max_train_examples = options.max_train_examples;
    runner_options.max_test_examples = options.max_test_examples;
    runner_options.trial_timeout = settings->trial_timeout;
    runner_options.log_dir = program_log_dir(settings->output);
    auto training = make_training_runner(runner_options);
    if (root && !training->isolation_problem().empty())
      notes.note(
          fmt::format("trials measured through /proc, without a cgroup each: {}", training->isolation_problem()));
    runner = std::move(training);
  }

  std::optional<StoreSink> sink;
  if (root) sink.emplace(*prepared.store);
  ProgressReporter progress(
      std::cerr, settings->verbosity,
      pending_costs(sweep.trials, prepared.pending, {options.max_train_examples, options.max_test_examples}), workers);
  SweepOptions sweep_options;
  sweep_options.run = root ? prepared.store->run_index() : 0;
  sweep_options.mem_budget_bytes = settings->mem_budget_bytes;
  sweep_options.flush_interval = settings->flush_interval;
  sweep_options.stop = &stop;
  sweep_options.progress = root ? &progress : nullptr;

  const auto started = std::chrono::steady_clock::now();
  SweepResult result;
  try {
    result = run_sweep(comm, sweep.trials, prepared.pending, runner.get(), sink ? &*sink : nullptr, sweep_options);
  } catch (const std::exception& error) {
    if (comm.size() > 1) {
      // The other ranks may be waiting for this one: end the job rather than hang it.
      fmt::print(stderr, "memsweep: rank {}: error during the sweep: {}\n", comm.rank(), error.what());
      MPI_Abort(MPI_COMM_WORLD, exit_status::kFailure);
    }
    throw;
  }

  // Every rank exits with rank 0's status, so mpirun's and srun's is the same.
  std::string final_status;
  if (root) {
    const bool complete = result.not_started == 0 && result.by_status.count("interrupted") == 0;
    prepared.store->mark_run(complete ? run_end_state::kEnded : run_end_state::kStopped);
    prepared.store->close();
    final_status = std::to_string(result.stopped && !complete ? exit_status::kStopped : exit_status::kOk);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    fmt::print(stderr, "memsweep: sweep \"{}\": {} trials run in {:.1f} s ({}); results in {}\n", sweep.name,
               result.finished, seconds, status_counts(result), settings->output.string());
    if (result.stopped && !complete) {
      // The same part and file again: -o as given for a part (it holds {part}).
      std::string again = options.sweep_file;
      if (part) again += fmt::format(" --split-by {} --part {}", *options.split_by, *options.part);
      if (!part) again += " -o " + settings->output.string();
      if (part && !options.output.empty()) again += " -o " + options.output;
      fmt::print(stderr,
                 "memsweep: stopped by signal {} with {} trials not started: continue with memsweep run {} --resume "
                 "(exit status {})\n",
                 stop_signal_number(), result.not_started, again, exit_status::kStopped);
    }
  }
  comm.broadcast(final_status);
  return std::stoi(final_status);
}

}  // namespace

int run_run_command(const RunOptions& options) {
  // Before MPI's start-up, which can take seconds on a cluster: Slurm's
  // walltime warning may arrive at once when a requeued job starts within
  // its warning window, and must then stop the sweep, not kill the rank.
  install_stop_signals();
  MpiSession session(nullptr, nullptr);
  std::unique_ptr<Communicator> comm = make_mpi_communicator(MPI_COMM_WORLD);
  try {
    return run_on_every_rank(options, *comm);
  } catch (const SetupFailure& failure) {
    // Every rank fails alike; one message is enough.
    if (comm->rank() == 0) fmt::print(stderr, "memsweep: error: {}\n", failure.what());
    return failure.status();
  }
}

}  // namespace memsweep::cli
