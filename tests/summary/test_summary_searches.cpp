// `memsweep summary` of a file with searches (schema 6): a capacity table,
// one line per search, after the dataset tables; none for other files.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/store.hpp"
#include "memsweep/summary_text.hpp"
#include "store/store_fixtures.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The line of the output that holds `needle`, empty when none does.
std::string line_with(const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return {};
  const std::size_t start = text.rfind('\n', at) + 1;
  return text.substr(start, text.find('\n', at) - start);
}

std::vector<SearchRow> three_searches() {
  SearchRow found = example_search(0);  // 2 GiB, fits 700 verified
  SearchRow unverified = example_search(1, "stopped");
  unverified.fits_verified = 0;
  unverified.limit = 512LL * 1024 * 1024;
  unverified.hidden[0] = 512;  // another configuration: its hidden widths differ
  SearchRow failed = example_search(2, "failed");
  failed.fits = -1;
  failed.does_not_fit = -1;
  failed.fit_b_mib = -1.0;
  failed.limit = 3'000'000'000;
  set_fixed(failed.message, "trial t00000000021 failed: no such dataset");
  return {found, unverified, failed};
}

SummaryInput input_with(std::vector<SearchRow> searches) {
  return SummaryInput{"results.h5", example_header(), {example_trial(0), example_trial(1)}, {}, std::move(searches)};
}

TEST(SummarySearches, ACapacityLinePerSearch) {
  const std::string out = format_summary({input_with(three_searches())});
  EXPECT_THAT(out, HasSubstr("capacity (3 searches)"));
  const std::string header = line_with(out, "configuration");
  for (const char* column : {"search", "limit", "axis", "fits", "does not fit", "MiB/unit", "trials", "status"})
    EXPECT_THAT(header, HasSubstr(column)) << column;

  const std::string found = line_with(out, "700 (verified)");
  EXPECT_THAT(found, HasSubstr("pytorch/cnn/fashion-mnist hidden=300-100"));
  EXPECT_THAT(found, HasSubstr("2 GiB"));
  EXPECT_THAT(found, HasSubstr("batch_size"));
  EXPECT_THAT(found, HasSubstr("768"));
  EXPECT_THAT(found, HasSubstr("1.50"));
  EXPECT_THAT(found, HasSubstr("found"));
  // The fields every search shares are left out of the name.
  EXPECT_THAT(found, Not(HasSubstr("lr=")));

  const std::string unverified = line_with(out, "701 unverified");
  EXPECT_THAT(unverified, HasSubstr("hidden=512-100"));
  EXPECT_THAT(unverified, HasSubstr("512 MiB"));
  EXPECT_THAT(unverified, HasSubstr("stopped"));

  const std::string failed = line_with(out, "2.79 GiB");
  EXPECT_THAT(failed, HasSubstr("failed"));
  EXPECT_THAT(failed, HasSubstr(" - "));  // no answer, no slope
  EXPECT_THAT(out, HasSubstr("search 5: trial t00000000021 failed: no such dataset"));
}

// Issue 43: a program's searches were named "wlm//" (its model and dataset
// blank), its params left out when they were the same in every search, so
// two searches of word_language_model read alike.
constexpr char kProgramSearchText[] = R"([sweep]
name = "wlm-capacity"
[programs.wlm]
command = ["python3", "main.py", "--model", "{arch}", "--bptt", "{bptt}", "--batch_size", "{batch}"]
[defaults]
program = "wlm"
params = { arch = "LSTM" }
[grid]
params.bptt = [35, 140]
[search]
axis = "params.batch"
range = [8, 512]
limit = ["1GiB"]
)";

// The board's row for configuration `configuration` (search = configuration: one limit).
SearchRow program_search(const SweepSpec& sweep, int configuration) {
  const TrialRow trial = trial_row_for(sweep.trials[static_cast<std::size_t>(configuration)], 0);
  SearchRow row = example_search(configuration);
  row.search = configuration;
  row.configuration = configuration;
  row.trainer = trial.trainer;
  row.dataset = trial.dataset;
  row.model = trial.model;
  row.optimizer = trial.optimizer;
  row.learning_rate = trial.learning_rate;
  row.epochs = trial.epochs;
  row.batch_size = trial.batch_size;
  row.depth = trial.depth;
  row.hidden = trial.hidden;
  row.channels = trial.channels;
  row.repeat = trial.repeat;
  row.params = trial.params;
  row.memory_plan = trial.memory_plan;
  row.recompute_every = trial.recompute_every;
  set_fixed(row.axis, "params.batch");
  row.limit = 1 << 30;
  return row;
}

TEST(SummarySearches, AProgramsSearchesAreNamedByTheProgramAndItsParams) {
  const SweepSpec sweep = parse_sweep(kProgramSearchText, "wlm.toml");
  ASSERT_EQ(sweep.trials.size(), 2u);
  FileHeader header = example_header();
  header.sweep_text = kProgramSearchText;
  header.sweep_file = "wlm.toml";
  header.part.clear();
  const SearchRow first = program_search(sweep, 0);
  const SearchRow second = program_search(sweep, 1);
  const std::string out = format_summary({SummaryInput{"results.h5", header, {example_trial(0)}, {}, {first, second}}});
  EXPECT_THAT(out, Not(HasSubstr("wlm//")));
  const std::string line_0 = line_with(out, "wlm arch=LSTM bptt=35");
  const std::string line_1 = line_with(out, "wlm arch=LSTM bptt=140");
  EXPECT_THAT(line_0, HasSubstr("params.batch")) << out;
  EXPECT_THAT(line_1, HasSubstr("params.batch")) << out;
  // The axis is the search's, not part of the configuration (held at the range's low end).
  EXPECT_THAT(line_0, Not(HasSubstr("batch=8")));

  // One search alone still says what it is: a program's params are always shown.
  const std::string alone = format_summary({SummaryInput{"results.h5", header, {example_trial(0)}, {}, {second}}});
  EXPECT_THAT(line_with(alone, "1 GiB"), HasSubstr("wlm arch=LSTM bptt=140"));

  // A sweep text that no longer parses: the row's params as they are.
  header.sweep_text = "not toml [";
  const std::string unparsed = format_summary({SummaryInput{"results.h5", header, {example_trial(0)}, {}, {second}}});
  EXPECT_THAT(line_with(unparsed, "1 GiB"), HasSubstr(R"(wlm params={"arch":"LSTM","batch":8,"bptt":140})"));
}

// Its configurations never get rows (its trials are probes): a search
// sweep's file said "2 planned; ... 2 not run yet" and how to continue once
// every search had ended.
TEST(SummarySearches, ASearchSweepCountsItsSearchesNotItsConfigurationsAsNotRun) {
  const SweepSpec sweep = parse_sweep(kProgramSearchText, "wlm.toml");
  FileHeader header = example_header();
  header.sweep_text = kProgramSearchText;
  header.sweep_file = "wlm.toml";
  header.part.clear();
  header.planned_trials = 2;
  TrialRow probe = example_trial(0, "ok");
  probe.search = 0;
  const std::string one_ended =
      format_summary({SummaryInput{"results.h5", header, {probe}, {}, {program_search(sweep, 0)}}});
  EXPECT_THAT(one_ended, HasSubstr("searches: 2 planned, 1 ended; their probes: 1 ok"));
  EXPECT_THAT(one_ended, Not(HasSubstr("not run yet")));
  const std::string both = format_summary(
      {SummaryInput{"results.h5", header, {probe}, {}, {program_search(sweep, 0), program_search(sweep, 1)}}});
  EXPECT_THAT(both, HasSubstr("searches: 2 planned, 2 ended"));
}

TEST(SummarySearches, NoneWithoutSearches) {
  EXPECT_THAT(format_summary({input_with({})}), Not(HasSubstr("capacity")));
}

TEST(SummarySearches, SeveralFilesNumberTheirSearches) {
  const std::string out = format_summary({input_with({example_search(0)}), input_with({example_search(1)})});
  EXPECT_THAT(out, HasSubstr("capacity (2 searches)"));
  EXPECT_THAT(line_with(out, "configuration"), HasSubstr("file"));
}

TEST(SummarySearches, TheCommandShowsTheFilesSearches) {
  const TempDir dir;
  const auto path = dir.path() / "results.h5";
  {
    ResultStore store = ResultStore::create(path, example_header(), false, StoreOptions{false});
    store.append_trial(example_trial(0));
    for (const SearchRow& row : three_searches()) store.append_search(row);
    store.close();
  }
  const CommandResult result = run_memsweep({"summary", path.string()}, dir.path().string());
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_THAT(result.out, HasSubstr("capacity (3 searches)"));
  EXPECT_THAT(result.out, HasSubstr("700 (verified)"));
}

}  // namespace
}  // namespace memsweep::testing
