// `memsweep run`'s results file: the run's row of /runs, and the file
// created or reopened (run_results_file.hpp).

#include "cli/run_results_file.hpp"

#include "common/duration_text.hpp"
#include "common/file_kind.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/trainer.hpp"
#include "memsweep/trial_process_cost.hpp"
#include "memsweep/version.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <ctime>
#include <optional>
#include <utility>

namespace memsweep::cli {

namespace fs = std::filesystem;

std::string join(std::span<const std::string> parts, std::string_view separator) {
  return fmt::format("{}", fmt::join(parts, separator));
}

namespace {

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
  // Another schema's file: the store refuses it, naming the version that
  // wrote it (files before issue 29 held the hash of their trial ids, and
  // another hash would only mislead).
  if (found.schema_version != kSchemaVersion) return;
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

// The run's row as the command line gives it, before a resume looks at the file.
RunRow fresh_run_row(const RunInput& input, int ranks, const std::vector<std::string>& hosts) {
  const RunOptions& options = input.options;
  RunRow run = input.settings.given;
  run.start_time = unix_now();
  run.ranks = ranks;
  set_fixed(run.hosts, join(hosts, ","));
  set_fixed(run.command_line, join(options.command_line, " "));
  set_fixed(run.memsweep_version, kVersion);
  set_fixed(run.counter_source, counter_source_name(input.sweep.sampler.counter_source));
  set_fixed(run.launcher, ranks > 1 ? launcher_from_environment() : std::string());
  set_fixed(run.executable, options.command_line.empty() ? std::string("memsweep") : options.command_line.front());
  set_fixed(run.sweep_file, options.sweep_file);
  set_fixed(run.output_option, options.output);
  set_fixed(run.trial_process_cost, describe_trial_process_cost(input.trial_process_cost));
  if (options.split_by) {
    set_fixed(run.split_by, *options.split_by);
    run.part = *options.part;
  }
  return run;
}

// The file's /runs, after checking that it holds this run's trials; empty
// for an older file, which opening it for the resume refuses with its reason.
std::vector<RunRow> runs_to_resume(const RunInput& input) {
  const ResultReader reader(input.settings.output);
  check_same_sweep_in_file(reader.header(), input.options, input.settings.output, input.sweep, input.part, input.hash);
  if (reader.header().schema_version != kSchemaVersion) return {};
  return reader.runs();
}

// Refuses (InputError) a resume that changes what a trial measures, unless
// --allow-changed-options; with it, records the changes.
void check_measurement_changes(const RunInput& input, const RunRow& stored, RunRow& resumed, ProgressReporter& notes) {
  const fs::path& output = input.settings.output;
  const std::vector<OptionChange> changes = measurement_changes(stored, resumed);
  for (const OptionChange& change : changes)
    if (!change.allowed)
      throw InputError(fmt::format(
          "{} {}: {}'s counter columns were opened from {} (run {}), and a resume opens them from the same; drop "
          "{}, or write to a new file",
          change.option, change.given, output.string(), change.stored, stored.run, change.option));
  if (changes.empty()) return;
  if (!input.options.allow_changed_options) {
    std::vector<std::string> lines;
    for (const OptionChange& change : changes)
      lines.push_back(
          fmt::format("{} {}, but run {} measured with {}", change.option, change.given, stored.run, change.stored));
    throw InputError(fmt::format(
        "{}: this resume would measure differently from the trials already in it: {}; drop the option to reuse the "
        "stored value, or give --allow-changed-options to mix both in one file (/runs then records the change)",
        output.string(), join(lines, "; ")));
  }
  set_fixed(resumed.changed_options, changes_text(changes, stored.run));
  notes.note(fmt::format("measuring differently from run {} (--allow-changed-options): {}", stored.run,
                         get_fixed(resumed.changed_options)));
}

// Whether -o names a file to resume. A name that is neither a file nor free
// (a link that loops or whose target is missing) is bad input, said here:
// std::filesystem would throw a bare "filesystem error", and the store would
// call it a file that exists and suggest --resume.
bool output_exists(const fs::path& output) {
  if (const std::optional<UnfollowablePath> bad = unfollowable_path(output))
    throw InputError(
        fmt::format("{}: {}; expected a results file, or a name for a new one", output.string(), bad->why));
  std::error_code ignored;
  return fs::exists(output, ignored);
}

// Said plainly here: the store would only say the file is not a results
// file (and, without --force, suggest --force).
void check_not_the_sweep_file(const RunInput& input) {
  std::error_code not_comparable;
  if (fs::equivalent(input.settings.output, input.options.sweep_file, not_comparable))
    throw InputError(fmt::format("-o {}: is the sweep file itself; the results need a file of their own",
                                 input.settings.output.string()));
}

// "resuming results.h5 (run 2): 10 of 16 trials done, 6 to run (2 failed again)".
std::string resume_note(const RunInput& input, const ResumePlan& plan, int run_index) {
  std::vector<std::string> retried;
  for (const auto& [status, count] : plan.retried) retried.push_back(fmt::format("{} {}", count, status));
  return fmt::format("resuming {} (run {}): {} of {} trials done, {} to run{}{}", input.settings.output.string(),
                     run_index, plan.already_final, input.sweep.trials.size(),
                     plan.pending.count(input.sweep.trials.size()),
                     retried.empty() ? std::string() : fmt::format(" ({} again)", join(retried, ", ")),
                     plan.killed_not_retried > 0 ? fmt::format(", {} killed and not retried (--retry-killed {})",
                                                               plan.killed_not_retried, input.options.retry_killed)
                                                 : std::string());
}

OpenedStore resume_results_file(const RunInput& input, const RunRow& run, ProgressReporter& notes) {
  const auto same_sweep = [&](const FileHeader& found) {
    check_same_sweep_in_file(found, input.options, input.settings.output, input.sweep, input.part, input.hash);
  };
  ResultStore store =
      ResultStore::open_for_resume(input.settings.output, run, StoreOptions{.swmr = run.no_swmr == 0}, same_sweep);
  const std::vector<TrialRow> rows = store.read_trials();
  const std::vector<SeriesSummary> series = store.scan_series();
  const ResumePlan plan =
      plan_resume(input.sweep.trials, rows, series, input.settings.retry, store.run_index(), lost_attempts(store));
  for (const TrialRecord& lost : plan.lost_rows) {
    store.append_trial(lost.row, lost.message);
    notes.note(fmt::format("trial {} attempt {}: {}", get_fixed(lost.row.trial_id), lost.row.attempt,
                           one_line_message(lost.message, kMessageChars)));
  }
  OpenedStore opened;
  if (input.sweep.search) {
    // A search's probes are not the sweep's trials (its configurations):
    // the searches replay them instead (docs/search.md, "Resume").
    opened.search_history = search_history(rows, series, store.read_searches());
    notes.note(fmt::format("resuming {} (run {}): {} probe rows of {} searches, {} of them ended",
                           input.settings.output.string(), store.run_index(), opened.search_history.rows.size(),
                           input.sweep.trials.size() * input.sweep.search->limits.size(),
                           opened.search_history.written.size()));
  } else {
    notes.note(resume_note(input, plan, store.run_index()));
  }
  opened.pending = plan.pending;
  opened.counter_columns = counter_requests(store.header());
  opened.store.emplace(std::move(store));
  return opened;
}

// A new file's header: the sweep, the versions, and the counter columns
// chosen on this machine (the events left out noted).
FileHeader new_file_header(const RunInput& input, const RunRow& run, const Communicator& comm,
                           const std::vector<std::string>& hosts, ProgressReporter& notes) {
  const SweepSpec& sweep = input.sweep;
  FileHeader header;
  header.sweep_name = sweep.name;
  header.sweep_file = input.options.sweep_file;
  header.sweep_text = sweep.source_text;
  header.sweep_hash = input.hash;
  header.part = input.part;
  header.command_line = join(input.options.command_line, " ");
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
  header.swmr = run.no_swmr == 0;
  // One line: the reasons are in the file's event_notes and in `memsweep events`.
  if (!counters.left_out.empty())
    notes.note(fmt::format("counters: not recording {} (memsweep events says why)", join(counters.left_out, ", ")));
  return header;
}

OpenedStore create_results_file(const RunInput& input, const RunRow& run, const Communicator& comm,
                                const std::vector<std::string>& hosts, ProgressReporter& notes) {
  const FileHeader header = new_file_header(input, run, comm, hosts, notes);
  if (input.options.resume)
    notes.note(fmt::format("{} does not exist yet: starting it", input.settings.output.string()));
  OpenedStore opened;
  opened.store.emplace(
      ResultStore::create(input.settings.output, header, input.options.force, StoreOptions{.swmr = header.swmr}, run));
  opened.counter_columns = counter_requests(header);
  // Every trial, in order: opened.pending's default.
  return opened;
}

}  // namespace

RunRow decide_run_row(const RunInput& input, int ranks, const std::vector<std::string>& hosts,
                      ProgressReporter& notes) {
  const RunRow run = fresh_run_row(input, ranks, hosts);
  if (!input.options.resume || !output_exists(input.settings.output)) return run;
  const std::vector<RunRow> runs = runs_to_resume(input);
  if (runs.empty()) return run;
  const RunRow& stored = runs.back();
  RunRow resumed = reuse_stored_options(run, stored, input.settings.which);
  check_measurement_changes(input, stored, resumed, notes);
  const std::string reused = reused_text(resumed, input.settings.which);
  if (!reused.empty()) notes.note(fmt::format("as run {} did: {}", stored.run, reused));
  return resumed;
}

OpenedStore open_results_file(const RunInput& input, const RunRow& run, const Communicator& comm,
                              const std::vector<std::string>& hosts, ProgressReporter& notes) {
  check_not_the_sweep_file(input);
  const bool exists = output_exists(input.settings.output);
  if (input.options.resume && exists) return resume_results_file(input, run, notes);
  return create_results_file(input, run, comm, hosts, notes);
}

}  // namespace memsweep::cli
