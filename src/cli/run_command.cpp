#include "cli/run_command.hpp"

#include "cli/events_command.hpp"
#include "cli/results_path.hpp"
#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/config.hpp"
#include "memsweep/dataset_preflight.hpp"
#include "memsweep/error.hpp"
#include "memsweep/mpi_communicator.hpp"
#include "memsweep/program.hpp"
#include "memsweep/results.hpp"
#include "memsweep/run_record.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/stop_signals.hpp"
#include "memsweep/store.hpp"
#include "memsweep/sweep_split.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/training_runner.hpp"
#include "memsweep/version.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
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
  int run_index = 0;    // this invocation's row of /runs: every row it writes says so
  std::vector<CounterRequest> counter_columns;

  // One field per line; event names have no newlines, and a message's
  // newlines become spaces (rank 0 prints the message itself).
  std::string encode() const {
    std::string one_line = message;
    std::replace(one_line.begin(), one_line.end(), '\n', ' ');
    std::string text = fmt::format("{}\n{}\n{}\n", status, run_index, one_line);
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
    std::getline(lines, line);
    setup.run_index = std::stoi(line);
    std::getline(lines, setup.message);
    std::string source;
    while (std::getline(lines, line) && std::getline(lines, source))
      setup.counter_columns.push_back({line, parse_counter_source(source).value_or(CounterSourceChoice::automatic)});
    return setup;
  }
};

// The checked form of the options. `given` holds the options that decide
// what the run measures (each given, or its default); a resume may replace
// those not given with what the file's last run used (decide_run_row).
struct RunSettings {
  fs::path output;  // set once the sweep (and the part's label) is known
  RunRow given;
  GivenOptions which;
  RetryPolicy retry;
  std::optional<CounterSourceChoice> counter_source;  // overrides the sweep file's [sampler] counter_source
  Verbosity verbosity = Verbosity::normal;
};

constexpr double kDefaultFlushSeconds = 2.0;

std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

std::vector<std::string> path_texts(const std::vector<fs::path>& paths) {
  std::vector<std::string> texts;
  for (const fs::path& path : paths) texts.push_back(path.string());
  return texts;
}

// RunRow::data_dirs back into the search list: the stored folders are
// absolute and ':'-separated, as $MEMSWEEP_DATA's, so that parser reads them.
std::vector<fs::path> data_dirs_of(const RunRow& run) {
  return dataset_search_dirs(std::nullopt, get_fixed(run.data_dirs), fs::current_path());
}

RunSettings check_options(const RunOptions& options) {
  RunSettings settings;
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

  RunRow& given = settings.given;
  GivenOptions& which = settings.which;
  which.mem_budget = options.mem_budget.has_value();
  if (options.mem_budget && *options.mem_budget != "none") {
    const std::optional<std::uint64_t> bytes = parse_byte_size(*options.mem_budget);
    if (!bytes)
      throw InputError(
          fmt::format("--mem-budget: expected {}, or none, got \"{}\"", kByteSizeHelp, *options.mem_budget));
    given.mem_budget = static_cast<std::int64_t>(*bytes);
  }
  which.trial_timeout = options.trial_timeout.has_value();
  if (options.trial_timeout && *options.trial_timeout != "none") {
    const std::optional<double> seconds = parse_duration(*options.trial_timeout);
    if (!seconds || *seconds < 0.001)
      throw InputError(
          fmt::format("--trial-timeout: expected {}, or none, got \"{}\"", kDurationHelp, *options.trial_timeout));
    given.trial_timeout = *seconds;
  }
  if (options.counter_source) settings.counter_source = parse_counter_source(*options.counter_source);
  which.counter_source = options.counter_source.has_value();
  which.flush_interval = options.flush_seconds.has_value();
  const double flush_seconds = options.flush_seconds.value_or(kDefaultFlushSeconds);
  if (!(flush_seconds > 0.0) || flush_seconds > 3600.0)
    throw InputError(fmt::format("--flush-interval: expected seconds in (0, 3600], got {}", flush_seconds));
  given.flush_interval = std::max(flush_seconds, 0.001);
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
  given.no_swmr = options.no_swmr ? 1 : 0;

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
  settings.retry = RetryPolicy(options.retry_killed, retried);

  settings.verbosity = options.quiet ? Verbosity::quiet : options.verbose ? Verbosity::verbose : Verbosity::normal;
  return settings;
}

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::string utc_now_text() { return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr))); }

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
  void trial(const TrialRow& row, const std::string& message) override { store_.append_trial(row, message); }
  void tick() override { store_.write_waiting_samples(); }
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

// Refuses a file that holds other trials than this run's (InputError).
// `part`: SweepPart::name() when the run is one part of the sweep, else empty.
void check_same_sweep_in_file(const FileHeader& found, const RunOptions& options, const fs::path& output,
                              const SweepSpec& sweep, const std::string& part, const std::string& hash) {
  // The hash covers the trials, so another part's file (or the whole
  // sweep's) never matches; the message then says which part it holds.
  if (found.sweep_hash != hash && found.part != part)
    throw InputError(fmt::format(
        "{}: holds {} of sweep \"{}\" (hash {}), but this run is {} of sweep \"{}\" (hash {}): --resume "
        "continues only the same trials; give the --split-by and --part that wrote it, or write to another file",
        output.string(), part_text(found.part), found.sweep_name, found.sweep_hash, part_text(part), sweep.name, hash));
  if (found.sweep_hash != hash)
    throw InputError(fmt::format(
        "{}: written by sweep \"{}\" (hash {}), but {} now defines sweep \"{}\" (hash {}): --resume continues "
        "only the same trials with the same sampler settings; write to a new file instead",
        output.string(), found.sweep_name, found.sweep_hash, options.sweep_file, sweep.name, hash));
}

// "--data-dir /x, --max-train-examples 1000": the options a resume takes
// from the run before it, where they are not the defaults.
std::string reused_text(const RunRow& run, const GivenOptions& which) {
  std::vector<std::string> parts;
  if (!which.data_dir) parts.push_back("--data-dir " + get_fixed(run.data_dirs));
  if (!which.max_train_examples && run.max_train_examples > 0)
    parts.push_back(fmt::format("--max-train-examples {}", run.max_train_examples));
  if (!which.max_test_examples && run.max_test_examples > 0)
    parts.push_back(fmt::format("--max-test-examples {}", run.max_test_examples));
  if (!which.threads && run.threads > 0) parts.push_back(fmt::format("--threads {}", run.threads));
  if (!which.mem_budget && run.mem_budget >= 0)
    parts.push_back("--mem-budget " + format_byte_size(static_cast<std::uint64_t>(run.mem_budget)));
  if (!which.trial_timeout && run.trial_timeout > 0)
    parts.push_back("--trial-timeout " + format_duration(run.trial_timeout));
  if (!which.flush_interval && run.flush_interval != kDefaultFlushSeconds)
    parts.push_back(fmt::format("--flush-interval {}", run.flush_interval));
  return join(parts, ", ");
}

// Rank 0, before anything is written: this run's row of /runs, with what it
// measures with. A resume takes what the file's last run measured with,
// except the options given, and refuses (InputError) one that changes what
// a trial measures unless --allow-changed-options.
RunRow decide_run_row(const RunOptions& options, const RunSettings& settings, const SweepSpec& sweep,
                      const std::string& part, const std::string& hash, int ranks,
                      const std::vector<std::string>& hosts, ProgressReporter& progress) {
  RunRow run = settings.given;
  run.start_time = unix_now();
  run.ranks = ranks;
  set_fixed(run.hosts, join(hosts, ","));
  set_fixed(run.command_line, join(options.command_line, " "));
  set_fixed(run.memsweep_version, kVersion);
  set_fixed(run.counter_source, counter_source_name(sweep.sampler.counter_source));
  set_fixed(run.launcher, ranks > 1 ? launcher_from_environment() : std::string());
  set_fixed(run.executable, options.command_line.empty() ? std::string("memsweep") : options.command_line.front());
  set_fixed(run.sweep_file, options.sweep_file);
  set_fixed(run.output_option, options.output);
  if (options.split_by) {
    set_fixed(run.split_by, *options.split_by);
    run.part = *options.part;
  }
  if (!options.resume || !fs::exists(settings.output)) return run;

  std::vector<RunRow> runs;
  {
    const ResultReader reader(settings.output);
    check_same_sweep_in_file(reader.header(), options, settings.output, sweep, part, hash);
    // An older file is not continued: opening it for the resume says so.
    if (reader.header().schema_version != kSchemaVersion) return run;
    runs = reader.runs();
  }
  if (runs.empty()) return run;
  const RunRow& stored = runs.back();
  RunRow resumed = reuse_stored_options(run, stored, settings.which);
  const std::vector<OptionChange> changes = measurement_changes(stored, resumed);
  for (const OptionChange& change : changes)
    if (!change.allowed)
      throw InputError(fmt::format(
          "{} {}: {}'s counter columns were opened from {} (run {}), and a resume opens them from the same; drop "
          "{}, or write to a new file",
          change.option, change.given, settings.output.string(), change.stored, stored.run, change.option));
  if (!changes.empty() && !options.allow_changed_options) {
    std::vector<std::string> lines;
    for (const OptionChange& change : changes)
      lines.push_back(
          fmt::format("{} {}, but run {} measured with {}", change.option, change.given, stored.run, change.stored));
    throw InputError(fmt::format(
        "{}: this resume would measure differently from the trials already in it: {}; drop the option to reuse the "
        "stored value, or give --allow-changed-options to mix both in one file (/runs then records the change)",
        settings.output.string(), join(lines, "; ")));
  }
  if (!changes.empty()) {
    set_fixed(resumed.changed_options, changes_text(changes, stored.run));
    progress.note(fmt::format("measuring differently from run {} (--allow-changed-options): {}", stored.run,
                              get_fixed(resumed.changed_options)));
  }
  const std::string reused = reused_text(resumed, settings.which);
  if (!reused.empty()) progress.note(fmt::format("as run {} did: {}", stored.run, reused));
  return resumed;
}

// Rank 0 before the sweep: the results file created (with `run`, the row
// decide_run_row() gave) or reopened, and the attempts still to run.
// `part`: SweepPart::name() when the run is one part of the sweep, else empty.
Prepared prepare_results_file(const RunOptions& options, const RunSettings& settings, const SweepSpec& sweep,
                              const std::string& part, const std::string& hash, const RunRow& run, Communicator& comm,
                              const std::vector<std::string>& hosts, ProgressReporter& progress) {
  Prepared prepared;
  const StoreOptions store_options{.swmr = run.no_swmr == 0};
  // Said plainly here: the store would only say the file is not a results
  // file (and, without --force, suggest --force).
  std::error_code not_comparable;
  if (fs::equivalent(settings.output, options.sweep_file, not_comparable))
    throw InputError(
        fmt::format("-o {}: is the sweep file itself; the results need a file of their own", settings.output.string()));

  if (options.resume && fs::exists(settings.output)) {
    const auto same_sweep = [&](const FileHeader& found) {
      check_same_sweep_in_file(found, options, settings.output, sweep, part, hash);
    };
    ResultStore store = ResultStore::open_for_resume(settings.output, run, store_options, same_sweep);
    const FileHeader& header = store.header();
    const ResumePlan plan = plan_resume(sweep.trials, store.read_trials(), store.scan_series(), settings.retry,
                                        store.run_index(), lost_attempts(store));
    for (const TrialRecord& lost : plan.lost_rows) {
      store.append_trial(lost.row, lost.message);
      progress.note(fmt::format("trial {} attempt {}: {}", get_fixed(lost.row.trial_id), lost.row.attempt,
                                one_line_message(lost.message, kMessageChars)));
    }
    std::vector<std::string> retried;
    for (const auto& [status, count] : plan.retried) retried.push_back(fmt::format("{} {}", count, status));
    progress.note(fmt::format("resuming {} (run {}): {} of {} trials done, {} to run{}{}", settings.output.string(),
                              store.run_index(), plan.already_final, sweep.trials.size(), plan.pending.size(),
                              retried.empty() ? std::string() : fmt::format(" ({} again)", join(retried, ", ")),
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

  prepared.store.emplace(ResultStore::create(settings.output, header, options.force, store_options, run));
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
                  "Training threads per rank (default: the CPUs the rank may use; a resume: the last run's)")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--flush-interval", options.flush_seconds,
                  "Seconds between a worker's sends of a running trial's samples (default 2)");
  run->add_flag("--no-swmr", options.no_swmr,
                "Write without HDF5's single-writer/multiple-reader mode (for filesystems such as NFS that do not "
                "keep write order; no live reader then)");
  run->add_flag("-q,--quiet", options.quiet, "Print only failed trials and the final line");
  run->add_flag("-v,--verbose", options.verbose, "Also print each trial as it starts, with its hyperparameters");
  run->add_option("--max-train-examples", options.max_train_examples,
                  "Train on the first N examples of each dataset only (quick runs; 0: all; a resume: the last run's)");
  run->add_option("--max-test-examples", options.max_test_examples,
                  "Evaluate on the first N test examples only (quick runs; 0: all; a resume: the last run's)");
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

// Every rank stops with exit 2 when any rank found its input wrong
// (`local_error` not empty); rank 0 prints the first rank's message.
void agree_on_input(Communicator& comm, const std::string& local_error) {
  const std::vector<std::string> errors = comm.all_gather(local_error);
  for (std::size_t rank = 0; rank < errors.size(); ++rank)
    if (!errors[rank].empty())
      throw SetupFailure(exit_status::kBadInput,
                         rank == 0 ? errors[rank] : fmt::format("rank {}: {}", rank, errors[rank]));
}

// Rank 0's decision, on every rank: its status and message, and the run's
// row (plain bytes: RunRow is trivially copyable and every rank runs the
// same build).
RunRow agree_on_run_row(Communicator& comm, const std::function<RunRow()>& decide) {
  Setup decision;
  std::string row_bytes(sizeof(RunRow), '\0');
  if (comm.rank() == 0) {
    try {
      const RunRow run = decide();
      std::memcpy(row_bytes.data(), &run, sizeof(RunRow));
    } catch (const InputError& error) {
      decision = {exit_status::kBadInput, error.what(), 0, {}};
    } catch (const std::exception& error) {
      decision = {exit_status::kFailure, error.what(), 0, {}};
    }
  }
  std::string decision_text = decision.encode();
  comm.broadcast(decision_text);
  comm.broadcast(row_bytes);
  if (comm.rank() == 0 && decision.status != exit_status::kOk) throw SetupFailure(decision.status, decision.message);
  decision = Setup::decode(decision_text);
  if (decision.status != exit_status::kOk) throw SetupFailure(decision.status, decision.message);
  RunRow run;
  std::memcpy(&run, row_bytes.data(), sizeof(RunRow));
  return run;
}

// The command that continues this run's sweep, for the stop hint.
std::string continue_command_here(const RunRow& run, const fs::path& output) {
  return continue_command(run, output.string(), CommandContext{::geteuid() == 0, std::thread::hardware_concurrency()});
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
    agree_on_input(comm, local_error);
    check_same_sweep(comm, hash);
  } catch (const InputError& error) {
    throw SetupFailure(exit_status::kBadInput, error.what());
  }
  const std::vector<std::string> hosts = comm.all_gather(comm.host_name());

  const int workers = comm.size() > 1 ? comm.size() - 1 : 1;
  // Notes before the sweep; the trials' own progress needs the number left,
  // which is known once rank 0 has read the file. Notes count no trials
  // (10^6 placeholder costs on every rank took time and memory).
  ProgressReporter notes(std::cerr, settings->verbosity, std::size_t{0}, workers);
  if (root) {
    for (const std::string& note : sweep.notes) notes.note(note);
    if (part)
      notes.note(fmt::format("part {} of parts 0..{} by {}: {}, {} of the sweep's {} trials", part->index,
                             part->count - 1, part->part.field, part->part.name(), sweep.trials.size(),
                             whole_sweep_trials));
  }

  // What the run measures with: on a resume, what the file's last run did.
  const std::string part_name = part ? part->part.name() : "";
  const RunRow run = agree_on_run_row(
      comm, [&] { return decide_run_row(options, *settings, sweep, part_name, hash, comm.size(), hosts, notes); });

  // Each rank resolves --data-dir (or $MEMSWEEP_DATA, ./data) itself, as
  // node-local setups may; a resume not given one reads where the file's
  // last run did. Every rank looks for the datasets there before anything
  // is written: a folder may hold them on one node and not on another.
  const std::vector<fs::path> data_dirs =
      options.resume && !options.data_dir
          ? data_dirs_of(run)
          : dataset_search_dirs_from_environment(options.data_dir ? std::optional<fs::path>(*options.data_dir)
                                                                  : std::nullopt);
  std::string dataset_error;
  try {
    require_datasets(check_datasets(sweep.trials, data_dirs));
  } catch (const InputError& error) {
    dataset_error = error.what();
  }
  agree_on_input(comm, dataset_error);

  // Rank 0 opens the file; every rank learns whether that worked.
  Prepared prepared;
  std::string setup_text;
  if (root) {
    Setup setup;
    try {
      prepared = prepare_results_file(options, *settings, sweep, part_name, hash, run, comm, hosts, notes);
      setup.counter_columns = prepared.counter_columns;
      setup.run_index = prepared.store->run_index();
    } catch (const InputError& error) {
      setup = {exit_status::kBadInput, error.what(), 0, {}};
    } catch (const std::exception& error) {
      setup = {exit_status::kFailure, error.what(), 0, {}};
    }
    setup_text = setup.encode();
    if (setup.status != exit_status::kOk) {
      comm.broadcast(setup_text);
      throw SetupFailure(setup.status, setup.message);
    }
  }
  comm.broadcast(setup_text);
  const Setup setup = Setup::decode(setup_text);
  if (setup.status != exit_status::kOk) throw SetupFailure(setup.status, setup.message);

  const std::optional<std::chrono::milliseconds> flush_interval =
      std::chrono::milliseconds(std::max<std::int64_t>(1, std::llround(run.flush_interval * 1000.0)));
  std::unique_ptr<TrialRunner> runner;
  if (!root || comm.size() == 1) {
    TrainingRunnerOptions runner_options;
    runner_options.data_dirs = data_dirs;
    runner_options.threads = run.threads;
    runner_options.sampler_interval = std::chrono::milliseconds(sweep.sampler.interval_ms);
    runner_options.counter_columns = setup.counter_columns;
    runner_options.max_chunk_age = *flush_interval;
    runner_options.max_train_examples = static_cast<std::size_t>(run.max_train_examples);
    runner_options.max_test_examples = static_cast<std::size_t>(run.max_test_examples);
    if (run.trial_timeout > 0)
      runner_options.trial_timeout =
          std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(run.trial_timeout * 1000.0)));
    runner_options.log_dir = program_log_dir(settings->output);
    auto training = make_training_runner(runner_options);
    if (root && !training->isolation_problem().empty())
      notes.note(
          fmt::format("trials measured through /proc, without a cgroup each: {}", training->isolation_problem()));
    runner = std::move(training);
  }

  std::optional<StoreSink> sink;
  if (root) sink.emplace(*prepared.store);
  ProgressReporter progress(std::cerr, settings->verbosity,
                            pending_costs(sweep.trials, prepared.pending,
                                          {static_cast<std::size_t>(run.max_train_examples),
                                           static_cast<std::size_t>(run.max_test_examples)}),
                            workers);
  SweepOptions sweep_options;
  sweep_options.run = setup.run_index;
  if (run.mem_budget >= 0) sweep_options.mem_budget_bytes = static_cast<std::uint64_t>(run.mem_budget);
  sweep_options.flush_interval = *flush_interval;
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
    if (result.stopped && !complete)
      fmt::print(stderr,
                 "memsweep: stopped by signal {} with {} trials not started (exit status {}); continue with:\n  {}\n",
                 stop_signal_number(), result.not_started, exit_status::kStopped,
                 continue_command_here(run, settings->output));
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
