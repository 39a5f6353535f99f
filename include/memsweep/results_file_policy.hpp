#pragma once
// What `memsweep run` decides about its results file before the sweep
// (rank 0, in the session's steps, session.hpp): the counter columns a new
// file records, the header it starts with, and on a resume, in one decision
// (decide_resume), whether the file holds this run's trials, what the run
// takes from the file's last run and what became of the attempts the last
// run left unfinished. The rules a resume follows:
//  - it reuses what the last run measured with unless told otherwise;
//  - it refuses an option that changes what a trial measures (the example
//    limits, the threads, the counters' source) and differs from the stored
//    one, unless --allow-changed-options, which /runs then records.
//
// Pure functions over what the command line, the sweep file, the machine
// and the file gave: probing the counters, opening the file and printing
// the notes are the caller's (src/cli/run_results_file.cpp), so that each
// decision is unit-tested without PAPI or an HDF5 file.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sampler.hpp"

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace memsweep {

// The sampler's counters are rank 0's choice, so that every rank writes the
// same columns: the probed events this machine has, in the order asked,
// each from the source that served it here, at most kMaxCounters.
struct CounterColumns {
  std::vector<std::string> names;
  std::vector<std::string> sources;    // event_source_name()
  std::vector<std::string> encodings;  // encoding_text()
  std::vector<std::string> notes;      // "EVENT: not recorded: why", for FileHeader::event_notes
  std::vector<std::string> left_out;   // the events not recorded
};
CounterColumns choose_counter_columns(std::span<const EventStatus> probed);

// "counters: not recording A, B (memsweep events says why)", the one line
// rank 0 prints; nullopt when every event is recorded.
std::optional<std::string> left_out_note(const CounterColumns& columns);

// The file's counter columns as the ranks open them: each from the source
// that served it when the file was created; a file that does not say
// (written before there were two sources) from either, PAPI first.
std::vector<CounterRequest> counter_requests(const FileHeader& header);

// Which of a run's options were given on its command line (the others take
// the stored run's values on a resume, the defaults on a new file).
struct GivenOptions {
  bool data_dir = false;
  bool max_train_examples = false;
  bool max_test_examples = false;
  bool threads = false;
  bool counter_source = false;
  bool mem_budget = false;
  bool trial_timeout = false;
  bool flush_interval = false;
};

// One option whose value differs between the stored run and this one.
struct OptionChange {
  std::string option;  // as on the command line: "--max-train-examples"
  std::string stored;  // the value the stored run used, as the option takes it
  std::string given;
  bool allowed = false;  // true: --allow-changed-options may let it differ
};

// `given` (this run's row with its options and defaults) with the options
// not given taken from `stored`, the last run's row.
RunRow reuse_stored_options(const RunRow& given, const RunRow& stored, const GivenOptions& which);

// The options that differ between `stored` and `resumed` and change what a
// trial measures. The counters' source is never allowed to differ: the
// file's columns stay opened from the sources that created them.
std::vector<OptionChange> measurement_changes(const RunRow& stored, const RunRow& resumed);

// "--threads 2 (run 0) -> 4; ...": for RunRow::changed_options.
std::string changes_text(const std::vector<OptionChange>& changes, int stored_run);

// The sweep (or the part of it) a run runs, as a results file names it.
struct SweepIdentity {
  std::string name;        // SweepSpec::name
  std::string sweep_file;  // as given on the command line
  std::string part;        // SweepPart::name() when the run is one part of the sweep, else empty
  std::string hash;        // sweep_hash()
};

// Refuses (InputError naming `output`, both sweeps and both hashes) a file
// that holds other trials than `run`'s: another sweep, or another part of
// it. A file of another schema passes: opening it refuses it, naming the
// version that wrote it.
void check_file_holds_sweep(const FileHeader& found, const std::filesystem::path& output, const SweepIdentity& run);

// Who the previous run lost its unfinished attempts to, from the file's
// /runs and this run's index: rank 0 marks its run when it sees a stop
// begin (under mpirun, the signal every rank gets when another rank dies),
// so a run without the mark lost them with rank 0.
LostAttempts lost_attempts(const std::vector<RunRow>& runs, int run_index);

// This run's row on a resume, and the lines rank 0 prints about it.
struct ResumedRunRow {
  RunRow run;
  std::vector<std::string> notes;
};

// `fresh` (the command line's row) with the options not given taken from
// `stored`, the file's last run. Refuses (InputError naming `output`) a
// change of what a trial measures unless `allow_changed_options`, which
// records it in RunRow::changed_options; the counters' source never.
ResumedRunRow resume_run_row(const RunRow& fresh, const RunRow& stored, const GivenOptions& which,
                             bool allow_changed_options, const std::filesystem::path& output);

// "--data-dir /x, --max-train-examples 1000": the options `run` took from
// the run before it (those not given), where they are not the defaults.
std::string reused_options_text(const RunRow& run, const GivenOptions& which);

// What a resume asks: the run's sweep, its row as the command line gives it,
// which options it was given, and whether it may measure differently.
struct ResumeRequest {
  SweepIdentity identity;
  RunRow fresh;
  GivenOptions which;
  bool allow_changed_options = false;
  std::filesystem::path output;
};

// Everything a resume decides from the file it continues.
struct ResumeDecision {
  RunRow run;                                   // this run's row of /runs
  LostAttempts lost = LostAttempts::rank_died;  // what the last run's unfinished attempts were lost to
  std::vector<std::string> notes;               // the lines rank 0 prints
};

// From the file's header and /runs (ResultStore::hold_for_resume): refuses
// (InputError naming the file) one that holds other trials than the
// request's, or a change of what a trial measures (resume_run_row); this
// run's row, and lost_attempts() for this run, the next row of /runs.
ResumeDecision decide_resume(const FileHeader& found, const std::vector<RunRow>& runs, const ResumeRequest& request);

// A new file's header as the sweep (or part) `run` names and the counters
// chosen decide it: the sweep, its sampler settings and trial count, the
// counter columns with their sources and the events left out. How and
// where memsweep runs (command line, library versions, ranks, hosts, start
// time) are facts of the machine: the caller adds them.
FileHeader new_file_header(const SweepSpec& sweep, const SweepIdentity& run, const CounterColumns& counters, bool swmr);

}  // namespace memsweep
