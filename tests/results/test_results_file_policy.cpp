// results_file_policy.hpp: what `memsweep run` decides about its results
// file, from probed events, headers and /runs rows made by hand (no PAPI,
// no HDF5 file).

#include "memsweep/results_file_policy.hpp"

#include "memsweep/error.hpp"

#include "stored_run.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace memsweep {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

EventStatus available(const std::string& name, EventSource source, std::uint32_t type, std::uint64_t config) {
  return {.name = name,
          .available = true,
          .source = source,
          .encoding = {EventEncoding{.type = type, .config = config}},
          .detail = "counts " + name};
}

EventStatus unavailable(const std::string& name, const std::string& why) {
  return {.name = name, .available = false, .source = EventSource::none, .encoding = {}, .detail = why};
}

// ---- choose_counter_columns -------------------------------------------------

// The available events become columns in the order probed, each with the
// source and encoding that served it; the others are noted with the
// probe's reason.
TEST(ChooseCounterColumns, AvailableEventsInOrderOthersNoted) {
  const std::vector<EventStatus> probed = {
      available("PAPI_L1_DCM", EventSource::papi, 4, 0x10),
      unavailable("PAPI_L3_TCM", "not supported on this CPU"),
      available("perf::PAGE-FAULTS", EventSource::kernel, 1, 0x2),
  };
  const CounterColumns columns = choose_counter_columns(probed);
  EXPECT_THAT(columns.names, ElementsAre("PAPI_L1_DCM", "perf::PAGE-FAULTS"));
  EXPECT_THAT(columns.sources, ElementsAre("papi", "kernel"));
  EXPECT_THAT(columns.encodings, ElementsAre("type=4 config=0x10", "type=1 config=0x2"));
  EXPECT_THAT(columns.notes, ElementsAre("PAPI_L3_TCM: not recorded: not supported on this CPU"));
  EXPECT_THAT(columns.left_out, ElementsAre("PAPI_L3_TCM"));
  EXPECT_EQ(left_out_note(columns), "counters: not recording PAPI_L3_TCM (memsweep events says why)");
}

// Past kMaxCounters available events, the rest are left out for that
// reason, not the probe's description.
TEST(ChooseCounterColumns, MoreThanMaxCountersLeftOut) {
  std::vector<EventStatus> probed;
  for (std::size_t i = 0; i < kMaxCounters + 2; ++i)
    probed.push_back(available("event" + std::to_string(i), EventSource::kernel, 1, i));
  const CounterColumns columns = choose_counter_columns(probed);
  ASSERT_EQ(columns.names.size(), kMaxCounters);
  EXPECT_EQ(columns.names.back(), "event" + std::to_string(kMaxCounters - 1));
  EXPECT_EQ(columns.sources.size(), kMaxCounters);
  EXPECT_EQ(columns.encodings.size(), kMaxCounters);
  const std::string first_out = "event" + std::to_string(kMaxCounters);
  const std::string second_out = "event" + std::to_string(kMaxCounters + 1);
  EXPECT_THAT(columns.left_out, ElementsAre(first_out, second_out));
  EXPECT_THAT(columns.notes,
              ElementsAre(fmt::format("{}: not recorded: more than {} events", first_out, kMaxCounters),
                          fmt::format("{}: not recorded: more than {} events", second_out, kMaxCounters)));
  EXPECT_EQ(left_out_note(columns),
            fmt::format("counters: not recording {}, {} (memsweep events says why)", first_out, second_out));
}

// An unavailable event does not take one of the kMaxCounters places.
TEST(ChooseCounterColumns, UnavailableEventsTakeNoPlace) {
  std::vector<EventStatus> probed = {unavailable("missing", "no such event")};
  for (std::size_t i = 0; i < kMaxCounters; ++i)
    probed.push_back(available("event" + std::to_string(i), EventSource::papi, 4, i));
  const CounterColumns columns = choose_counter_columns(probed);
  EXPECT_EQ(columns.names.size(), kMaxCounters);
  EXPECT_THAT(columns.left_out, ElementsAre("missing"));
}

TEST(ChooseCounterColumns, NothingLeftOutNoNote) {
  const std::vector<EventStatus> probed = {available("perf::PAGE-FAULTS", EventSource::kernel, 1, 0x2)};
  const CounterColumns columns = choose_counter_columns(probed);
  EXPECT_THAT(columns.notes, IsEmpty());
  EXPECT_EQ(left_out_note(columns), std::nullopt);
  EXPECT_THAT(choose_counter_columns({}).names, IsEmpty());
}

// ---- counter_requests ---------------------------------------------------------

// Each column from the source the header records for it.
TEST(CounterRequests, FromTheRecordedSources) {
  FileHeader header;
  header.counter_columns = {"PAPI_L1_DCM", "perf::PAGE-FAULTS"};
  header.counter_sources = {"papi", "kernel"};
  const std::vector<CounterRequest> requests = counter_requests(header);
  ASSERT_EQ(requests.size(), 2U);
  EXPECT_EQ(requests[0].name, "PAPI_L1_DCM");
  EXPECT_EQ(requests[0].source, CounterSourceChoice::papi);
  EXPECT_EQ(requests[1].name, "perf::PAGE-FAULTS");
  EXPECT_EQ(requests[1].source, CounterSourceChoice::kernel);
}

// A file written before counters had two sources records none (or fewer
// than its columns, or a name it does not know): those columns are opened
// from either source.
TEST(CounterRequests, WithoutSourcesFromEither) {
  FileHeader header;
  header.counter_columns = {"PAPI_L1_DCM", "PAPI_TOT_INS", "perf::PAGE-FAULTS"};
  for (const std::vector<std::string>& sources :
       {std::vector<std::string>{}, std::vector<std::string>{"kernel"}, std::vector<std::string>{"kernel", "bogus"}}) {
    header.counter_sources = sources;
    const std::vector<CounterRequest> requests = counter_requests(header);
    ASSERT_EQ(requests.size(), 3U);
    EXPECT_EQ(requests[0].source, sources.empty() ? CounterSourceChoice::automatic : CounterSourceChoice::kernel);
    EXPECT_EQ(requests[1].source, CounterSourceChoice::automatic) << "sources: " << sources.size();
    EXPECT_EQ(requests[2].name, "perf::PAGE-FAULTS");
    EXPECT_EQ(requests[2].source, CounterSourceChoice::automatic);
  }
  EXPECT_THAT(counter_requests(FileHeader{}), IsEmpty());
}

// ---- lost_attempts --------------------------------------------------------------

RunRow run_ending(int index, std::string_view end_state) {
  RunRow run;
  run.run = index;
  set_fixed(run.end_state, end_state);
  return run;
}

struct LostCase {
  std::string name;
  std::vector<RunRow> runs;
  int run_index;
  LostAttempts expected;
};
void PrintTo(const LostCase& lost_case, std::ostream* out) { *out << lost_case.name; }

class LostAttemptsTest : public ::testing::TestWithParam<LostCase> {};

TEST_P(LostAttemptsTest, FromThePreviousRunsMark) {
  EXPECT_EQ(lost_attempts(GetParam().runs, GetParam().run_index), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Runs, LostAttemptsTest,
    ::testing::Values(
        // Rank 0 saw the stop and marked its run: the ranks under the attempts died.
        LostCase{"previous_marked_stopping", {run_ending(0, "stopping")}, 1, LostAttempts::rank_died},
        LostCase{
            "previous_marked_stopped", {run_ending(0, "ended"), run_ending(1, "stopped")}, 2, LostAttempts::rank_died},
        // No mark: rank 0 itself died, unaware.
        LostCase{"previous_unmarked", {run_ending(0, "ended"), run_ending(1, "")}, 2, LostAttempts::writer_died},
        // Only the run before this one counts.
        LostCase{"earlier_unmarked_previous_marked",
                 {run_ending(0, ""), run_ending(1, "stopping")},
                 2,
                 LostAttempts::rank_died},
        // The first run, or /runs shorter than the index says: nothing to go by.
        LostCase{"first_run", {}, 0, LostAttempts::rank_died},
        LostCase{"runs_missing", {run_ending(0, "")}, 3, LostAttempts::rank_died}),
    [](const ::testing::TestParamInfo<LostCase>& case_info) { return case_info.param.name; });

// ---- check_file_holds_sweep ---------------------------------------------------

const SweepIdentity kThisRun{.name = "mnist-mem", .sweep_file = "mnist.toml", .part = "", .hash = "aaaa1111bbbb2222"};

FileHeader header_of(const std::string& name, const std::string& part, const std::string& hash) {
  FileHeader header;
  header.sweep_name = name;
  header.part = part;
  header.sweep_hash = hash;
  return header;
}

TEST(CheckFileHoldsSweep, SameSweepPasses) {
  EXPECT_NO_THROW(check_file_holds_sweep(header_of("mnist-mem", "", kThisRun.hash), "out.h5", kThisRun));
  // The name may change (it is not part of the hash).
  EXPECT_NO_THROW(check_file_holds_sweep(header_of("renamed", "", kThisRun.hash), "out.h5", kThisRun));
}

// Another schema's hash meant something else: the store refuses the file instead.
TEST(CheckFileHoldsSweep, OtherSchemaIgnored) {
  FileHeader older = header_of("mnist-mem", "", "0123456789abcdef");
  older.schema_version = kSchemaVersion - 1;
  EXPECT_NO_THROW(check_file_holds_sweep(older, "out.h5", kThisRun));
}

struct MismatchCase {
  std::string name;
  FileHeader found;
  SweepIdentity run;
  std::vector<std::string> message_parts;
};
void PrintTo(const MismatchCase& mismatch, std::ostream* out) { *out << mismatch.name; }

class CheckFileHoldsSweepMismatch : public ::testing::TestWithParam<MismatchCase> {};

// The message names the file, both hashes, and what to do.
TEST_P(CheckFileHoldsSweepMismatch, RefusedNamingFileAndBothHashes) {
  const MismatchCase& mismatch = GetParam();
  try {
    check_file_holds_sweep(mismatch.found, "/scratch/out.h5", mismatch.run);
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, ::testing::StartsWith("/scratch/out.h5: "));
    EXPECT_THAT(message, AllOf(HasSubstr(mismatch.found.sweep_hash), HasSubstr(mismatch.run.hash)));
    for (const std::string& part : mismatch.message_parts) EXPECT_THAT(message, HasSubstr(part));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Files, CheckFileHoldsSweepMismatch,
    ::testing::Values(
        MismatchCase{"other_hash",
                     header_of("mnist-mem", "", "cccc3333dddd4444"),
                     kThisRun,
                     {"written by sweep \"mnist-mem\"", "mnist.toml now defines sweep \"mnist-mem\"",
                      "write to a new file instead"}},
        MismatchCase{"other_part",
                     header_of("mnist-mem", "dataset=mnist", "cccc3333dddd4444"),
                     {.name = "mnist-mem", .sweep_file = "mnist.toml", .part = "dataset=fashion", .hash = "eeee5555"},
                     {"holds part dataset=mnist", "this run is part dataset=fashion", "--split-by and --part"}},
        MismatchCase{"whole_sweep_file_part_run",
                     header_of("mnist-mem", "", "cccc3333dddd4444"),
                     {.name = "mnist-mem", .sweep_file = "mnist.toml", .part = "dataset=mnist", .hash = "eeee5555"},
                     {"holds the whole sweep", "this run is part dataset=mnist"}}),
    [](const ::testing::TestParamInfo<MismatchCase>& case_info) { return case_info.param.name; });

// ---- resume_run_row, reused_options_text --------------------------------------

RunRow stored_run() {
  RunRow run;
  run.run = 1;
  set_fixed(run.data_dirs, "/scratch/data");
  run.max_train_examples = 1000;
  run.threads = 2;
  set_fixed(run.counter_source, "papi");
  run.mem_budget = 2LL << 30;
  run.trial_timeout = 90.0;
  run.flush_interval = 5.0;
  return run;
}

RunRow fresh_run() {
  RunRow run;
  set_fixed(run.data_dirs, "/home/user/data");
  set_fixed(run.counter_source, "papi");
  return run;
}

// ---- reuse_stored_options, measurement_changes ------------------------------

// A resume given nothing takes every measured option from the stored run.
TEST(ReuseStoredOptions, NothingGivenTakesEverything) {
  RunRow given;  // the defaults
  set_fixed(given.data_dirs, "/home/user/data");
  set_fixed(given.counter_source, "auto");
  const RunRow resumed = reuse_stored_options(given, run_with_every_option(), GivenOptions{});
  EXPECT_EQ(get_fixed(resumed.data_dirs), "/scratch/data");
  EXPECT_EQ(resumed.max_train_examples, 1000);
  EXPECT_EQ(resumed.max_test_examples, 200);
  EXPECT_EQ(resumed.threads, 2);
  EXPECT_EQ(get_fixed(resumed.counter_source), "papi");
  EXPECT_EQ(resumed.mem_budget, 2LL << 30);
  EXPECT_EQ(resumed.trial_timeout, 90.0);
  EXPECT_EQ(resumed.flush_interval, 5.0);
  EXPECT_TRUE(measurement_changes(run_with_every_option(), resumed).empty());
}

// What is given wins; the measured ones are then reported, each with both
// values; the data folder and the budget may differ freely.
TEST(ReuseStoredOptions, GivenOptionsWinAndChangesAreNamed) {
  RunRow given;
  set_fixed(given.data_dirs, "/node-local/data");
  given.max_train_examples = 500;
  given.threads = 2;
  given.mem_budget = 1LL << 30;
  GivenOptions which;
  which.data_dir = true;
  which.max_train_examples = true;
  which.threads = true;
  which.mem_budget = true;
  const RunRow resumed = reuse_stored_options(given, run_with_every_option(), which);
  EXPECT_EQ(get_fixed(resumed.data_dirs), "/node-local/data");
  EXPECT_EQ(resumed.mem_budget, 1LL << 30);
  EXPECT_EQ(resumed.max_test_examples, 200);  // not given: the stored one

  const std::vector<OptionChange> changes = measurement_changes(run_with_every_option(), resumed);
  ASSERT_EQ(changes.size(), 1u);  // threads 2 == 2; data dir and budget are not measured options
  EXPECT_EQ(changes[0].option, "--max-train-examples");
  EXPECT_EQ(changes[0].stored, "1000");
  EXPECT_EQ(changes[0].given, "500");
  EXPECT_TRUE(changes[0].allowed);
  EXPECT_EQ(changes_text(changes, 0), "--max-train-examples 1000 (run 0) -> 500");
}

TEST(MeasurementChanges, CounterSourceIsNeverAllowed) {
  RunRow resumed = run_with_every_option();
  set_fixed(resumed.counter_source, "kernel");
  resumed.threads = 0;
  const std::vector<OptionChange> changes = measurement_changes(run_with_every_option(), resumed);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].option, "--threads");
  EXPECT_THAT(changes[0].given, HasSubstr("0 (the CPUs"));
  EXPECT_EQ(changes[1].option, "--counter-source");
  EXPECT_FALSE(changes[1].allowed);
}

// Nothing given: everything the stored run measured with is reused and said.
TEST(ResumeRunRow, NothingGivenReusesAndSaysSo) {
  const ResumedRunRow resumed = resume_run_row(fresh_run(), stored_run(), GivenOptions{}, false, "out.h5");
  EXPECT_EQ(get_fixed(resumed.run.data_dirs), "/scratch/data");
  EXPECT_EQ(resumed.run.threads, 2);
  EXPECT_EQ(get_fixed(resumed.run.changed_options), "");
  EXPECT_THAT(resumed.notes,
              ElementsAre("as run 1 did: --data-dir /scratch/data, --max-train-examples 1000, --threads 2, "
                          "--mem-budget 2.00 GiB, --trial-timeout 1m30s, --flush-interval 5"));
}

// A measured option given with another value is refused without
// --allow-changed-options, naming the file and both values.
TEST(ResumeRunRow, ChangedMeasurementRefused) {
  RunRow fresh = fresh_run();
  fresh.threads = 4;
  GivenOptions which;
  which.threads = true;
  try {
    resume_run_row(fresh, stored_run(), which, false, "/scratch/out.h5");
    FAIL() << "expected InputError";
  } catch (const InputError& error) {
    EXPECT_THAT(error.what(),
                AllOf(HasSubstr("/scratch/out.h5: this resume would measure differently"),
                      HasSubstr("--threads 4, but run 1 measured with 2"), HasSubstr("--allow-changed-options")));
  }
}

// With --allow-changed-options the change is recorded and said; the
// options not given are still reused.
TEST(ResumeRunRow, AllowedChangeRecorded) {
  RunRow fresh = fresh_run();
  fresh.threads = 4;
  GivenOptions which;
  which.threads = true;
  const ResumedRunRow resumed = resume_run_row(fresh, stored_run(), which, true, "out.h5");
  EXPECT_EQ(resumed.run.threads, 4);
  EXPECT_EQ(get_fixed(resumed.run.changed_options), "--threads 2 (run 1) -> 4");
  ASSERT_EQ(resumed.notes.size(), 2U);
  EXPECT_EQ(resumed.notes[0], "measuring differently from run 1 (--allow-changed-options): --threads 2 (run 1) -> 4");
  EXPECT_THAT(resumed.notes[1],
              AllOf(HasSubstr("as run 1 did: --data-dir /scratch/data"), ::testing::Not(HasSubstr("--threads"))));
}

// The counters' source never changes on a resume, even when allowed.
TEST(ResumeRunRow, CounterSourceChangeRefusedEvenWhenAllowed) {
  RunRow fresh = fresh_run();
  set_fixed(fresh.counter_source, "kernel");
  GivenOptions which;
  which.counter_source = true;
  EXPECT_THROW(
      {
        try {
          resume_run_row(fresh, stored_run(), which, true, "/scratch/out.h5");
        } catch (const InputError& error) {
          EXPECT_THAT(error.what(),
                      AllOf(HasSubstr("--counter-source kernel: /scratch/out.h5's counter columns were opened from "
                                      "papi (run 1)"),
                            HasSubstr("drop --counter-source")));
          throw;
        }
      },
      InputError);
}

struct ReusedCase {
  std::string name;
  GivenOptions which;
  RunRow run;
  std::string expected;
};
void PrintTo(const ReusedCase& reused, std::ostream* out) { *out << reused.name; }

class ReusedOptionsText : public ::testing::TestWithParam<ReusedCase> {};

TEST_P(ReusedOptionsText, NamesTheOptionsTakenThatAreNotDefaults) {
  EXPECT_EQ(reused_options_text(GetParam().run, GetParam().which), GetParam().expected);
}

GivenOptions every_option_given() {
  return {.data_dir = true,
          .max_train_examples = true,
          .max_test_examples = true,
          .threads = true,
          .counter_source = true,
          .mem_budget = true,
          .trial_timeout = true,
          .flush_interval = true};
}

RunRow with_test_examples(RunRow run) {
  run.max_test_examples = 200;
  return run;
}

INSTANTIATE_TEST_SUITE_P(
    Options, ReusedOptionsText,
    ::testing::Values(
        // The data folder is always said: the default is where the last run looked.
        ReusedCase{"defaults_say_data_dir", GivenOptions{}, fresh_run(), "--data-dir /home/user/data"},
        ReusedCase{"everything_given", every_option_given(), stored_run(), ""},
        ReusedCase{"every_value", GivenOptions{}, with_test_examples(stored_run()),
                   "--data-dir /scratch/data, --max-train-examples 1000, --max-test-examples 200, --threads 2, "
                   "--mem-budget 2.00 GiB, --trial-timeout 1m30s, --flush-interval 5"},
        ReusedCase{"given_left_out", GivenOptions{.data_dir = true, .threads = true, .mem_budget = true}, stored_run(),
                   "--max-train-examples 1000, --trial-timeout 1m30s, --flush-interval 5"}),
    [](const ::testing::TestParamInfo<ReusedCase>& case_info) { return case_info.param.name; });

// ---- decide_resume --------------------------------------------------------------

ResumeRequest request_for(const RunRow& fresh, bool allow_changed_options = false) {
  return {.identity = kThisRun,
          .fresh = fresh,
          .which = GivenOptions{},
          .allow_changed_options = allow_changed_options,
          .output = "out.h5"};
}

FileHeader this_runs_file() { return header_of(kThisRun.name, kThisRun.part, kThisRun.hash); }

RunRow last_run(std::string_view end_state) {
  RunRow run = stored_run();
  set_fixed(run.end_state, end_state);
  return run;
}

// One decision from the file: the last run's options reused and said, and
// its unfinished attempts lost with their ranks (it marked its stop).
TEST(DecideResume, ReusesTheLastRunsOptionsAndReadsItsMark) {
  const ResumeDecision decision =
      decide_resume(this_runs_file(), {run_ending(0, "ended"), last_run("stopping")}, request_for(fresh_run()));
  EXPECT_EQ(get_fixed(decision.run.data_dirs), "/scratch/data");
  EXPECT_EQ(decision.run.max_train_examples, 1000);
  EXPECT_EQ(decision.run.threads, 2);
  EXPECT_EQ(decision.lost, LostAttempts::rank_died);
  EXPECT_THAT(decision.notes, ElementsAre(HasSubstr("as run 1 did: --data-dir /scratch/data")));
}

// The last run has no mark: rank 0 died unaware, with its attempts.
TEST(DecideResume, AnUnmarkedLastRunLostItsAttemptsWithItsWriter) {
  EXPECT_EQ(decide_resume(this_runs_file(), {last_run("")}, request_for(fresh_run())).lost, LostAttempts::writer_died);
}

// Another sweep's file is refused, whatever its runs.
TEST(DecideResume, AnotherSweepsFileIsRefused) {
  EXPECT_THROW(
      {
        try {
          decide_resume(header_of("mnist-mem", "", "cccc3333dddd4444"), {last_run("ended")}, request_for(fresh_run()));
        } catch (const InputError& error) {
          EXPECT_THAT(error.what(), AllOf(HasSubstr("out.h5"), HasSubstr("cccc3333dddd4444")));
          throw;
        }
      },
      InputError);
}

// A change of what a trial measures: refused, or recorded when allowed.
TEST(DecideResume, AChangedMeasurementIsRefusedUnlessAllowed) {
  RunRow fresh = fresh_run();
  fresh.threads = 8;
  ResumeRequest request = request_for(fresh);
  request.which.threads = true;
  EXPECT_THROW(decide_resume(this_runs_file(), {last_run("ended")}, request), InputError);
  request.allow_changed_options = true;
  const ResumeDecision decision = decide_resume(this_runs_file(), {last_run("ended")}, request);
  EXPECT_EQ(decision.run.threads, 8);
  EXPECT_EQ(get_fixed(decision.run.changed_options), "--threads 2 (run 1) -> 8");
}

// Nothing to reuse (no run recorded): the command line's row as it is.
TEST(DecideResume, AFileWithoutRunsKeepsTheCommandLinesRow) {
  const ResumeDecision decision = decide_resume(this_runs_file(), {}, request_for(fresh_run()));
  EXPECT_EQ(get_fixed(decision.run.data_dirs), "/home/user/data");
  EXPECT_EQ(decision.lost, LostAttempts::rank_died);
  EXPECT_THAT(decision.notes, IsEmpty());
}

// ---- new_file_header ------------------------------------------------------------

TEST(NewFileHeader, RecordsTheSweepItsSamplerAndTheCountersChosen) {
  const SweepSpec sweep = parse_sweep(R"([sweep]
name = "header"
[sampler]
interval_ms = 25
events = ["PAPI_L1_DCM", "PAPI_L3_TCM"]
[grid]
batch_size = [8, 16, 32]
)",
                                      "header.toml");
  const SweepIdentity run{.name = sweep.name, .sweep_file = "sweeps/header.toml", .part = "", .hash = "abcd"};
  const CounterColumns counters = choose_counter_columns(std::vector<EventStatus>{
      available("PAPI_L1_DCM", EventSource::papi, 4, 0x10), unavailable("PAPI_L3_TCM", "not supported")});
  const FileHeader header = new_file_header(sweep, run, counters, false);
  EXPECT_EQ(header.schema_version, kSchemaVersion);
  EXPECT_EQ(header.sweep_name, "header");
  EXPECT_EQ(header.sweep_file, "sweeps/header.toml");
  EXPECT_EQ(header.sweep_text, sweep.source_text);
  EXPECT_THAT(header.sweep_text, HasSubstr("batch_size = [8, 16, 32]"));
  EXPECT_EQ(header.sweep_hash, "abcd");
  EXPECT_EQ(header.part, "");
  EXPECT_EQ(header.sampler_interval_ms, 25);
  EXPECT_EQ(header.planned_trials, 3);
  EXPECT_THAT(header.events_requested, ElementsAre("PAPI_L1_DCM", "PAPI_L3_TCM"));
  EXPECT_THAT(header.counter_columns, ElementsAre("PAPI_L1_DCM"));
  EXPECT_THAT(header.counter_sources, ElementsAre("papi"));
  EXPECT_THAT(header.counter_encodings, ElementsAre("type=4 config=0x10"));
  EXPECT_THAT(header.event_notes, ElementsAre("PAPI_L3_TCM: not recorded: not supported"));
  EXPECT_FALSE(header.swmr);
  // What the ranks open is what the header records.
  const std::vector<CounterRequest> requests = counter_requests(header);
  ASSERT_EQ(requests.size(), 1U);
  EXPECT_EQ(requests[0].source, CounterSourceChoice::papi);
}

// A part's file names the part; the sweep's default events are recorded as
// asked (none), and the planned trials count repeats.
TEST(NewFileHeader, PartAndDefaults) {
  const SweepSpec sweep = parse_sweep(R"([sweep]
name = "parts"
repeats = 2
[grid]
batch_size = [8, 16]
)",
                                      "parts.toml");
  const SweepIdentity run{.name = sweep.name, .sweep_file = "parts.toml", .part = "batch_size=8", .hash = "ef01"};
  const FileHeader header = new_file_header(sweep, run, CounterColumns{}, true);
  EXPECT_EQ(header.part, "batch_size=8");
  EXPECT_THAT(header.events_requested, IsEmpty());
  EXPECT_THAT(header.counter_columns, IsEmpty());
  EXPECT_EQ(header.planned_trials, static_cast<std::int64_t>(sweep.trials.size()));
  EXPECT_EQ(header.planned_trials, 4);
  EXPECT_TRUE(header.swmr);
}

}  // namespace
}  // namespace memsweep
