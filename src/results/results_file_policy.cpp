// What `memsweep run` decides about its results file (results_file_policy.hpp).

#include "memsweep/results_file_policy.hpp"

#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/error.hpp"
#include "memsweep/flush_interval.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>

namespace memsweep {

namespace fs = std::filesystem;

CounterColumns choose_counter_columns(std::span<const EventStatus> probed) {
  CounterColumns columns;
  for (const EventStatus& event : probed) {
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

std::optional<std::string> left_out_note(const CounterColumns& columns) {
  // One line: the reasons are in the file's event_notes and in `memsweep events`.
  if (columns.left_out.empty()) return std::nullopt;
  return fmt::format("counters: not recording {} (memsweep events says why)", fmt::join(columns.left_out, ", "));
}

std::vector<CounterRequest> counter_requests(const FileHeader& header) {
  std::vector<CounterRequest> requests;
  for (std::size_t i = 0; i < header.counter_columns.size(); ++i) {
    const std::optional<CounterSourceChoice> source =
        i < header.counter_sources.size() ? parse_counter_source(header.counter_sources[i]) : std::nullopt;
    requests.push_back({header.counter_columns[i], source.value_or(CounterSourceChoice::automatic)});
  }
  return requests;
}

namespace {

// "part dataset=mnist", or "the whole sweep" for a file without a part.
std::string part_text(const std::string& part) { return part.empty() ? "the whole sweep" : "part " + part; }

}  // namespace

void check_file_holds_sweep(const FileHeader& found, const fs::path& output, const SweepIdentity& run) {
  // Files before issue 29 held the hash of their trial ids, and another
  // hash would only mislead: the store names the version instead.
  if (found.schema_version != kSchemaVersion) return;
  // The hash covers the trials, so another part's file (or the whole
  // sweep's) never matches; the message then says which part it holds.
  if (found.sweep_hash != run.hash && found.part != run.part)
    throw InputError(fmt::format(
        "{}: holds {} of sweep \"{}\" (hash {}), but this run is {} of sweep \"{}\" (hash {}): --resume "
        "continues only the same trials; give the --split-by and --part that wrote it, or write to another file",
        output.string(), part_text(found.part), found.sweep_name, found.sweep_hash, part_text(run.part), run.name,
        run.hash));
  if (found.sweep_hash != run.hash)
    throw InputError(fmt::format(
        "{}: written by sweep \"{}\" (hash {}), but {} now defines sweep \"{}\" (hash {}): --resume continues "
        "only the same trials with the same sampler settings; write to a new file instead",
        output.string(), found.sweep_name, found.sweep_hash, run.sweep_file, run.name, run.hash));
}

LostAttempts lost_attempts(const std::vector<RunRow>& runs, int run_index) {
  const int previous = run_index - 1;
  // No run before this one (or a /runs shorter than the index says): no
  // mark to go by, and no writer that died unmarked.
  if (previous < 0 || previous >= static_cast<int>(runs.size())) return LostAttempts::rank_died;
  return get_fixed(runs[static_cast<std::size_t>(previous)].end_state).empty() ? LostAttempts::writer_died
                                                                               : LostAttempts::rank_died;
}

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

// Refuses (InputError) a change the file's counter columns cannot take,
// and, without --allow-changed-options, any other.
void check_changes_allowed(const std::vector<OptionChange>& changes, const RunRow& stored, bool allow_changed_options,
                           const fs::path& output) {
  for (const OptionChange& change : changes)
    if (!change.allowed)
      throw InputError(fmt::format(
          "{} {}: {}'s counter columns were opened from {} (run {}), and a resume opens them from the same; drop "
          "{}, or write to a new file",
          change.option, change.given, output.string(), change.stored, stored.run, change.option));
  if (changes.empty() || allow_changed_options) return;
  std::vector<std::string> lines;
  for (const OptionChange& change : changes)
    lines.push_back(
        fmt::format("{} {}, but run {} measured with {}", change.option, change.given, stored.run, change.stored));
  throw InputError(fmt::format(
      "{}: this resume would measure differently from the trials already in it: {}; drop the option to reuse the "
      "stored value, or give --allow-changed-options to mix both in one file (/runs then records the change)",
      output.string(), fmt::join(lines, "; ")));
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

ResumedRunRow resume_run_row(const RunRow& fresh, const RunRow& stored, const GivenOptions& which,
                             bool allow_changed_options, const fs::path& output) {
  ResumedRunRow resumed{.run = reuse_stored_options(fresh, stored, which), .notes = {}};
  const std::vector<OptionChange> changes = measurement_changes(stored, resumed.run);
  check_changes_allowed(changes, stored, allow_changed_options, output);
  if (!changes.empty()) {
    set_fixed(resumed.run.changed_options, changes_text(changes, stored.run));
    resumed.notes.push_back(fmt::format("measuring differently from run {} (--allow-changed-options): {}", stored.run,
                                        get_fixed(resumed.run.changed_options)));
  }
  const std::string reused = reused_options_text(resumed.run, which);
  if (!reused.empty()) resumed.notes.push_back(fmt::format("as run {} did: {}", stored.run, reused));
  return resumed;
}

std::string reused_options_text(const RunRow& run, const GivenOptions& which) {
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
  return fmt::format("{}", fmt::join(parts, ", "));
}

ResumeDecision decide_resume(const FileHeader& found, const std::vector<RunRow>& runs, const ResumeRequest& request) {
  check_file_holds_sweep(found, request.output, request.identity);
  const int run_index = static_cast<int>(runs.size());
  ResumeDecision decision{.run = request.fresh, .lost = lost_attempts(runs, run_index), .notes = {}};
  // A file of another schema (which opening it for writing refuses) or one
  // without a run (written before /runs) has no options to reuse.
  if (found.schema_version != kSchemaVersion || runs.empty()) return decision;
  ResumedRunRow resumed =
      resume_run_row(request.fresh, runs.back(), request.which, request.allow_changed_options, request.output);
  decision.run = std::move(resumed.run);
  decision.notes = std::move(resumed.notes);
  return decision;
}

FileHeader new_file_header(const SweepSpec& sweep, const SweepIdentity& run, const CounterColumns& counters,
                           bool swmr) {
  return FileHeader{.sweep_name = run.name,
                    .sweep_file = run.sweep_file,
                    .sweep_text = sweep.source_text,
                    .sweep_hash = run.hash,
                    .part = run.part,
                    .sampler_interval_ms = sweep.sampler.interval_ms,
                    .planned_trials = static_cast<std::int64_t>(sweep.trials.size()),
                    .events_requested = sweep.sampler.events,
                    .counter_columns = counters.names,
                    .counter_sources = counters.sources,
                    .counter_encodings = counters.encodings,
                    .event_notes = counters.notes,
                    .swmr = swmr};
}

}  // namespace memsweep
