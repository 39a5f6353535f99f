// `memsweep run`'s results file: the run's row of /runs, and the file
// created or reopened (run_results_file.hpp). What to decide from the file,
// the options and the probed counters is results_file_policy.hpp's; here,
// the reading, probing, opening and printing around it.

#include "cli/run_results_file.hpp"

#include "common/file_kind.hpp"
#include "memsweep/results_file_policy.hpp"
#include "memsweep/run_record.hpp"
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

// The identity a results file must hold for this run to resume it.
SweepIdentity sweep_identity(const RunInput& input) {
  return {.name = input.sweep.name, .sweep_file = input.options.sweep_file, .part = input.part, .hash = input.hash};
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

OpenedStore resume_results_file(const RunInput& input, const RunRow& run, DecidedRun decided, ProgressReporter& notes) {
  ResultStore store = std::move(*decided.held).resume(run);
  const std::vector<TrialRow> rows = store.read_trials();
  const std::vector<SeriesSummary> series = store.scan_series();
  const ResumePlan plan = plan_resume(input.sweep.trials, rows, series, input.settings.retry, store.run_index(),
                                      decided.resume.lost, input.options.lost_cause);
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

// The sweep file's events (or the defaults) as this machine has them.
std::vector<EventStatus> probe_sweep_events(const SamplerSpec& sampler) {
  const CounterSourceChoice choice = sampler.counter_source;
  return probe_events(sampler.events.empty() ? default_events(choice) : sampler.events, choice);
}

// A new file's header: what the sweep and the counter columns chosen on
// this machine decide (the events left out noted), and how and where
// memsweep runs.
FileHeader header_for_new_file(const RunInput& input, const RunRow& run, const Communicator& comm,
                               const std::vector<std::string>& hosts, ProgressReporter& notes) {
  const std::string start_time = utc_now_text();
  const CounterColumns counters = choose_counter_columns(probe_sweep_events(input.sweep.sampler));
  if (const std::optional<std::string> note = left_out_note(counters)) notes.note(*note);
  FileHeader header = new_file_header(input.sweep, sweep_identity(input), counters, run.no_swmr == 0);
  header.command_line = join(input.options.command_line, " ");
  header.memsweep_version = kVersion;
  header.onednn_version = onednn_version();
  header.mpi_version = comm.library_version();
  header.papi_version = counter_library_version();
  header.hdf5_version = hdf5_library_version();
  header.ranks = comm.size();
  header.hosts = hosts;
  header.start_time = start_time;
  return header;
}

OpenedStore create_results_file(const RunInput& input, const RunRow& run, const Communicator& comm,
                                const std::vector<std::string>& hosts, ProgressReporter& notes) {
  const FileHeader header = header_for_new_file(input, run, comm, hosts, notes);
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

DecidedRun decide_run_row(const RunInput& input, int ranks, const std::vector<std::string>& hosts,
                          ProgressReporter& notes) {
  check_not_the_sweep_file(input);
  DecidedRun decided{.run = fresh_run_row(input, ranks, hosts), .held = std::nullopt, .resume = {}};
  // Asked even without --resume: a name that is neither a file nor free is refused.
  const bool exists = output_exists(input.settings.output);
  if (!input.options.resume || !exists) return decided;
  decided.held.emplace(
      ResultStore::hold_for_resume(input.settings.output, StoreOptions{.swmr = decided.run.no_swmr == 0}));
  decided.resume = decide_resume(decided.held->header(), decided.held->runs(),
                                 ResumeRequest{.identity = sweep_identity(input),
                                               .fresh = decided.run,
                                               .which = input.settings.which,
                                               .allow_changed_options = input.options.allow_changed_options,
                                               .output = input.settings.output});
  for (const std::string& note : decided.resume.notes) notes.note(note);
  decided.run = decided.resume.run;
  return decided;
}

OpenedStore open_results_file(const RunInput& input, const RunRow& run, DecidedRun decided, const Communicator& comm,
                              const std::vector<std::string>& hosts, ProgressReporter& notes) {
  if (decided.held) return resume_results_file(input, run, std::move(decided), notes);
  return create_results_file(input, run, comm, hosts, notes);
}

}  // namespace memsweep::cli
