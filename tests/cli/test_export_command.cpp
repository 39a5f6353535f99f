// `memsweep export`: results files written here with the store's API, with
// rows whose values are known, exported as a user would, and the text read
// back (by an RFC 4180 reader written here, and by pandas) to compare cell
// by cell with what was written.

#include "memsweep/store.hpp"
#include "store/store_fixtures.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hdf5.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// More than the export reads at once (16,384): the rows across a read's edge show.
constexpr std::size_t kSampleRows = 40'000;
// A double whose shortest text has 17 significant digits.
const double kManyDigits = 0.1 + 0.2;
const std::string kAwkwardMessage = "no dataset, \"mnist\" not found\nlooked in: /data, /scratch\r\nend";

// A parsed table: the header's names, then rows of cells.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;

  std::size_t column(const std::string& name) const {
    const auto found = std::find(columns.begin(), columns.end(), name);
    if (found == columns.end()) throw std::runtime_error("no column " + name);
    return static_cast<std::size_t>(found - columns.begin());
  }
  const std::string& at(std::size_t row, const std::string& name) const { return rows.at(row).at(column(name)); }
};

// RFC 4180, written from the RFC rather than from the exporter: quoted
// fields may hold separators, doubled quotes and line breaks.
Table parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(field);
      field.clear();
    } else if (c == '\n') {
      record.push_back(field);
      field.clear();
      records.push_back(record);
      record.clear();
    } else {
      field += c;
    }
  }
  EXPECT_TRUE(field.empty() && record.empty()) << "the text does not end with a line break";
  Table table;
  if (records.empty()) return table;
  table.columns = records.front();
  table.rows.assign(records.begin() + 1, records.end());
  return table;
}

// TSV: one line per row, cells between tabs, no quoting.
Table parse_tsv(const std::string& text) {
  Table table;
  std::istringstream lines(text);
  std::string line;
  bool first = true;
  while (std::getline(lines, line)) {
    std::vector<std::string> cells;
    std::size_t start = 0;
    for (std::size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
      cells.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    cells.push_back(line.substr(start));
    if (first)
      table.columns = cells;
    else
      table.rows.push_back(cells);
    first = false;
  }
  return table;
}

TrialRow awkward_trial() {
  TrialRow row = example_trial(0, "failed");
  set_fixed(row.message, kAwkwardMessage);
  row.learning_rate = kManyDigits;
  row.depth = 2;
  row.hidden = {};
  row.hidden[0] = 64;
  row.hidden[1] = 32;
  row.rss_peak = -1;  // not measured
  row.rss_mean = -1.0;
  row.test_accuracy = -1.0;
  row.cgroup_peak = -1;
  return row;
}

// A search that found nothing: its -1s are empty cells.
SearchRow unanswered_search() {
  SearchRow row = example_search(1, "below_range");
  row.fits = -1;
  row.fits_verified = 0;
  row.fit_a_mib = -1.0;
  row.fit_b_mib = -1.0;
  row.predicted = -1;
  set_fixed(row.message, "even 16, the range's low end, was killed, \"oom\"");
  return row;
}

std::vector<SampleRow> numbered_samples(const std::string& trial_id, std::size_t counters) {
  std::vector<SampleRow> rows = example_samples(trial_id, 0, kSampleRows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t c = 0; c < counters; ++c) rows[i].counters[c] = static_cast<std::int64_t>(100 * i + c);
    if (i % 7 == 0) rows[i].pss = -1;  // not measured this time (PSS is read less often)
  }
  return rows;
}

// One file: three trials (the first with a message to quote and figures not
// measured), two epochs, kSampleRows samples with kCounterColumns.
std::filesystem::path write_results(const std::filesystem::path& path, const std::vector<std::string>& counters) {
  FileHeader header = example_header();
  header.counter_columns = counters;
  header.counter_sources.assign(counters.size(), "kernel");
  header.counter_encodings.assign(counters.size(), "type=1 config=0x2");
  ResultStore store = ResultStore::create(path, header, false, StoreOptions{false});
  store.append_trial(awkward_trial());
  store.append_trial(example_trial(1));
  store.append_trial(example_trial(2));
  EpochRow epoch = example_epoch(0);
  epoch.train_loss = kManyDigits;
  epoch.rss = -1;
  store.append_epoch(epoch);
  store.append_epoch(example_epoch(1));
  store.append_samples(numbered_samples(example_id(0), counters.size()));
  store.append_search(example_search(0));
  store.append_search(unanswered_search());
  store.close();
  return path;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class Export : public ::testing::Test {
 protected:
  TempDir dir;
  std::filesystem::path results = write_results(dir.path() / "results.h5", kCounterColumns);

  CommandResult export_ok(const std::vector<std::string>& args) {
    CommandResult result = run_memsweep(args, dir.path().string());
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_EQ(result.err, "");
    return result;
  }
};

TEST_F(Export, TrialsCsvHoldsEveryRowWithUnitsInTheHeader) {
  const Table table = parse_csv(export_ok({"export", results.string()}).out);
  ASSERT_EQ(table.rows.size(), 3u);
  for (const auto& row : table.rows) EXPECT_EQ(row.size(), table.columns.size());
  for (const char* name :
       {"trial_id", "attempt", "run", "dataset", "model", "optimizer", "hidden", "channels", "status", "message",
        "trainer", "params", "start_time_unix_s", "wall_seconds", "rss_peak_bytes", "rss_footprint_bytes",
        "predicted_bytes", "test_accuracy", "cgroup_peak_bytes"})
    EXPECT_NO_THROW(table.column(name)) << name;
  EXPECT_EQ(table.columns.front(), "trial_id");  // one file: no `file` column

  const TrialRow written = awkward_trial();
  EXPECT_EQ(table.at(0, "trial_id"), example_id(0));
  EXPECT_EQ(table.at(0, "message"), kAwkwardMessage);               // comma, quotes, LF and CRLF survive
  EXPECT_EQ(std::stod(table.at(0, "learning_rate")), kManyDigits);  // exactly: not 0.3
  EXPECT_EQ(table.at(0, "hidden"), "64-32");
  EXPECT_EQ(table.at(0, "channels"), "8-16");
  EXPECT_EQ(table.at(0, "rss_peak_bytes"), "");  // -1: not measured
  EXPECT_EQ(table.at(0, "rss_mean_bytes"), "");
  EXPECT_EQ(table.at(0, "test_accuracy"), "");
  EXPECT_EQ(table.at(0, "cgroup_peak_bytes"), "");
  EXPECT_EQ(table.at(0, "rss_baseline_bytes"), std::to_string(written.rss_baseline));
  EXPECT_EQ(table.at(0, "seed"), std::to_string(written.seed));  // beyond int64, as an integer
  EXPECT_EQ(std::stod(table.at(0, "start_time_unix_s")), written.start_time);
  EXPECT_EQ(table.at(0, "params"), get_fixed(written.params));
  EXPECT_EQ(table.at(0, "status"), "failed");
  const TrialRow second = example_trial(1);
  EXPECT_EQ(table.at(1, "rss_peak_bytes"), std::to_string(second.rss_peak));
  EXPECT_EQ(std::stod(table.at(1, "rss_mean_bytes")), second.rss_mean);
  EXPECT_EQ(table.at(1, "trainer"), "pytorch");
  EXPECT_EQ(table.at(1, "plan_index"), std::to_string(second.plan_index));
  EXPECT_EQ(table.at(2, "trial_id"), example_id(2));
  // Schema 6: the search each trial is a probe of.
  EXPECT_EQ(table.at(1, "search"), std::to_string(second.search));
  EXPECT_EQ(table.at(1, "probe"), std::to_string(second.probe));
  EXPECT_EQ(table.at(1, "axis_value"), std::to_string(second.axis_value));
  EXPECT_EQ(table.at(1, "search_limit_bytes"), std::to_string(second.search_limit));
  EXPECT_EQ(table.at(1, "full_run"), "1");
  EXPECT_EQ(table.at(1, "reported_oom"), "1");
}

TEST_F(Export, SearchesEveryColumnInBothFormats) {
  for (const std::string format : {"csv", "tsv"}) {
    const std::string out = export_ok({"export", results.string(), "--table", "searches", "--format", format}).out;
    const Table table = format == "csv" ? parse_csv(out) : parse_tsv(out);
    EXPECT_THAT(table.columns,
                ElementsAre("search", "configuration", "limit_index", "run", "configuration_id", "trainer", "dataset",
                            "model", "optimizer", "learning_rate", "epochs", "batch_size", "depth", "hidden",
                            "channels", "repeat", "params", "axis", "range_low", "range_high", "limit_bytes",
                            "enforced_by", "strategy", "status", "fits", "fits_verified", "does_not_fit", "fit_a_mib",
                            "fit_b_mib", "predicted", "trials", "seconds", "message", "memory_plan", "recompute_every",
                            "device", "gpu_name", "gpu_total_bytes", "definition"));
    ASSERT_EQ(table.rows.size(), 2u) << format;
    for (const auto& row : table.rows) EXPECT_EQ(row.size(), table.columns.size());
    const SearchRow found = example_search(0);
    EXPECT_EQ(table.at(0, "search"), std::to_string(found.search));
    EXPECT_EQ(table.at(0, "configuration_id"), example_id(20));
    EXPECT_EQ(table.at(0, "trainer"), "pytorch");
    EXPECT_EQ(table.at(0, "hidden"), "300-100");
    EXPECT_EQ(table.at(0, "channels"), "8");
    EXPECT_EQ(table.at(0, "params"), get_fixed(found.params));
    EXPECT_EQ(table.at(0, "axis"), "batch_size");
    EXPECT_EQ(table.at(0, "range_high"), "4096");
    EXPECT_EQ(table.at(0, "limit_bytes"), "2147483648");
    EXPECT_EQ(table.at(0, "enforced_by"), "cgroup2");
    EXPECT_EQ(table.at(0, "strategy"), "bisect");
    EXPECT_EQ(table.at(0, "status"), "found");
    EXPECT_EQ(table.at(0, "fits"), "700");
    EXPECT_EQ(table.at(0, "fits_verified"), "1");
    EXPECT_EQ(table.at(0, "does_not_fit"), "768");
    EXPECT_EQ(std::stod(table.at(0, "fit_a_mib")), 512.25);
    EXPECT_EQ(std::stod(table.at(0, "fit_b_mib")), 1.5);
    EXPECT_EQ(table.at(0, "predicted"), "650");
    EXPECT_EQ(table.at(0, "trials"), "7");
    EXPECT_EQ(std::stod(table.at(0, "seconds")), 93.5);
    EXPECT_EQ(table.at(0, "message"), get_fixed(found.message));
    // A program's configuration (trainer pytorch): its program, the stored
    // fields the row shows (dataset and model are set: kept), and its
    // params whole (issue 43), not the stored text as it is.
    EXPECT_EQ(table.at(0, "definition"),
              fmt::format("program=pytorch;{};params={}", get_fixed(found.definition), get_fixed(found.params)));
    // Nothing fits: empty cells, not -1.
    EXPECT_EQ(table.at(1, "status"), "below_range");
    for (const char* column : {"fits", "fit_a_mib", "fit_b_mib", "predicted"})
      EXPECT_EQ(table.at(1, column), "") << column << " " << format;
    EXPECT_EQ(table.at(1, "does_not_fit"), "769");
    EXPECT_EQ(table.at(1, "message"), "even 16, the range's low end, was killed, \"oom\"");
  }
}

TEST_F(Export, SearchesOfAFileWithoutThemIsTheHeaderAlone) {
  const std::filesystem::path older = dir.path() / "v5.h5";
  write_results(older, kCounterColumns);
  rewrite_as_schema_version(older, 5);
  const Table table = parse_csv(export_ok({"export", older.string(), "--table", "searches"}).out);
  EXPECT_EQ(table.columns.front(), "search");
  EXPECT_TRUE(table.rows.empty());
  const Table trials = parse_csv(export_ok({"export", older.string()}).out);
  ASSERT_EQ(trials.rows.size(), 3u);
  EXPECT_EQ(trials.at(1, "search"), "");  // -1: no search
  EXPECT_EQ(trials.at(1, "reported_oom"), "0");
}

TEST_F(Export, TrialsTsvIsOneLinePerRowWithLineBreaksAsSpaces) {
  const std::string out = export_ok({"export", results.string(), "--format", "tsv"}).out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 4);  // header and three rows
  const Table table = parse_tsv(out);
  ASSERT_EQ(table.rows.size(), 3u);
  for (const auto& row : table.rows) EXPECT_EQ(row.size(), table.columns.size());
  EXPECT_EQ(table.at(0, "message"), "no dataset, \"mnist\" not found looked in: /data, /scratch  end");
  EXPECT_EQ(std::stod(table.at(0, "learning_rate")), kManyDigits);
  EXPECT_EQ(table.at(0, "rss_peak_bytes"), "");
}

TEST_F(Export, EpochsAsCsvAndTsv) {
  for (const std::string format : {"csv", "tsv"}) {
    const std::string out = export_ok({"export", results.string(), "--table", "epochs", "--format", format}).out;
    const Table table = format == "csv" ? parse_csv(out) : parse_tsv(out);
    EXPECT_THAT(table.columns, ElementsAre("trial_id", "attempt", "epoch", "train_loss", "test_accuracy", "seconds",
                                           "rss_bytes", "sys_used_bytes"));
    ASSERT_EQ(table.rows.size(), 2u) << format;
    EXPECT_EQ(std::stod(table.at(0, "train_loss")), kManyDigits);
    EXPECT_EQ(table.at(0, "rss_bytes"), "");
    EXPECT_EQ(table.at(1, "rss_bytes"), std::to_string(example_epoch(1).rss));
    EXPECT_EQ(table.at(1, "epoch"), "2");
  }
}

TEST_F(Export, SamplesEveryRowWithTheFilesCounterColumns) {
  for (const std::string format : {"csv", "tsv"}) {
    const std::string out = export_ok({"export", results.string(), "--table", "samples", "--format", format}).out;
    const Table table = format == "csv" ? parse_csv(out) : parse_tsv(out);
    ASSERT_EQ(table.rows.size(), kSampleRows) << format;
    EXPECT_THAT(std::vector<std::string>(table.columns.end() - 3, table.columns.end()),
                ElementsAre("PAPI_L1_DCM_count", "perf_PAGE_FAULTS_count", "PAPI_TLB_DM_count"));
    const std::vector<SampleRow> written = numbered_samples(example_id(0), kCounterColumns.size());
    for (const std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{16383}, std::size_t{16384},
                                std::size_t{32768}, kSampleRows - 1}) {
      EXPECT_EQ(table.at(i, "rss_bytes"), std::to_string(written[i].rss)) << i;
      EXPECT_EQ(table.at(i, "phase"), std::to_string(written[i].phase)) << i;
      EXPECT_EQ(std::stod(table.at(i, "t_s")), written[i].t) << i;
      EXPECT_EQ(table.at(i, "pss_bytes"), i % 7 == 0 ? "" : std::to_string(written[i].pss)) << i;
      EXPECT_EQ(table.at(i, "perf_PAGE_FAULTS_count"), std::to_string(100 * i + 1)) << i;
    }
  }
}

TEST_F(Export, PandasReadsBothFormatsToTheValuesWritten) {
  const std::filesystem::path csv = dir.path() / "trials.csv";
  const std::filesystem::path tsv = dir.path() / "trials.tsv";
  export_ok({"export", results.string(), "-o", csv.string()});
  export_ok({"export", results.string(), "--format", "tsv", "-o", tsv.string()});
  // float.hex() against C's %a: the same double, bit for bit. pandas' own
  // default float parser ("high") reads 0.30000000000000004 as 0.3; its
  // "round_trip" one is exact (docs/results-file.md, Export, says so).
  const std::string script = R"(
import csv, json, sys
import pandas
for path, options in ((sys.argv[1], {}), (sys.argv[2], {"sep": "\t", "quoting": csv.QUOTE_NONE})):
    table = pandas.read_csv(path, float_precision="round_trip", **options)
    print(json.dumps([len(table), table["message"][0], table["learning_rate"][0].hex(),
                      bool(pandas.isna(table["rss_peak_bytes"][0])), int(table["rss_peak_bytes"][1]),
                      str(table["rss_peak_bytes"].dtype), table["hidden"][0]]))
)";
  const CommandResult result = run_command({"/usr/bin/python3", "-c", script, csv.string(), tsv.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const std::string hex = fmt::format("{:a}", kManyDigits);
  const std::string tail = fmt::format(R"("{}", true, {}, "float64", "64-32"])", hex, example_trial(1).rss_peak);
  EXPECT_EQ(
      result.out,
      fmt::format(R"([3, "no dataset, \"mnist\" not found\nlooked in: /data, /scratch\r\nend", {})", tail) + "\n" +
          fmt::format(R"([3, "no dataset, \"mnist\" not found looked in: /data, /scratch  end", {})", tail) + "\n");
}

TEST_F(Export, SeveralFilesHaveAFileColumnAndTheUnionOfCounters) {
  const std::filesystem::path other =
      write_results(dir.path() / "other.h5", {"perf::PAGE-FAULTS", "perf::MINOR-FAULTS"});
  const Table trials = parse_csv(export_ok({"export", results.string(), other.string()}).out);
  EXPECT_EQ(trials.columns.front(), "file");
  ASSERT_EQ(trials.rows.size(), 6u);
  EXPECT_EQ(trials.at(0, "file"), results.string());
  EXPECT_EQ(trials.at(5, "file"), other.string());

  const Table samples = parse_csv(export_ok({"export", results.string(), other.string(), "--table", "samples"}).out);
  ASSERT_EQ(samples.rows.size(), 2 * kSampleRows);
  EXPECT_THAT(
      std::vector<std::string>(samples.columns.end() - 4, samples.columns.end()),
      ElementsAre("PAPI_L1_DCM_count", "perf_PAGE_FAULTS_count", "PAPI_TLB_DM_count", "perf_MINOR_FAULTS_count"));
  // The first file has no MINOR-FAULTS, the second no PAPI columns; PAGE-FAULTS
  // is the first file's second counter and the second's first.
  EXPECT_EQ(samples.at(5, "perf_MINOR_FAULTS_count"), "");
  EXPECT_EQ(samples.at(5, "perf_PAGE_FAULTS_count"), "501");
  const std::size_t second = kSampleRows + 5;
  EXPECT_EQ(samples.at(second, "file"), other.string());
  EXPECT_EQ(samples.at(second, "PAPI_L1_DCM_count"), "");
  EXPECT_EQ(samples.at(second, "perf_PAGE_FAULTS_count"), "500");
  EXPECT_EQ(samples.at(second, "perf_MINOR_FAULTS_count"), "501");
}

TEST_F(Export, OutputFileIsRefusedWhenItExistsAndReplacedWithForce) {
  const std::filesystem::path out = dir.write("out.csv", "keep me\n");
  const CommandResult refused = run_memsweep({"export", results.string(), "-o", out.string()}, dir.path().string());
  EXPECT_EQ(refused.exit_status, kBadInput);
  EXPECT_THAT(refused.err, HasSubstr("--force"));
  EXPECT_EQ(read_file(out), "keep me\n");

  export_ok({"export", results.string(), "-o", out.string(), "--force"});
  const Table table = parse_csv(read_file(out));
  EXPECT_EQ(table.rows.size(), 3u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 2) << "a temporary was left";
}

struct BadCall {
  const char* name;
  std::vector<std::string> args;  // "@" is a good results file
  const char* words;              // what the one line says
};

void PrintTo(const BadCall& call, std::ostream* out) { *out << call.name; }

class ExportRefuses : public ::testing::TestWithParam<BadCall> {};

TEST_P(ExportRefuses, OneLineStatusTwoNothingWritten) {
  const TempDir dir;
  const std::filesystem::path good = write_results(dir.path() / "results.h5", kCounterColumns);
  dir.write("notes.txt", "not a results file\n");
  dir.write("other.h5", "not HDF5 either\n");
  // HDF5, but not memsweep's: no format attribute, no tables.
  H5Fclose(H5Fcreate((dir.path() / "plain.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  // What --force must not replace with an export.
  ASSERT_EQ(::mkfifo((dir.path() / "pipe").c_str(), 0644), 0);
  std::filesystem::create_symlink("notes.txt", dir.path() / "link.csv");
  std::vector<std::string> args = with_file(GetParam().args, good.string());
  const std::vector<std::filesystem::path> before{std::filesystem::directory_iterator(dir.path()), {}};

  const CommandResult result = run_memsweep(args, dir.path().string());
  EXPECT_EQ(result.exit_status, kBadInput) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_THAT(result.err, ::testing::StartsWith("memsweep: error: "));
  EXPECT_THAT(result.err, HasSubstr(GetParam().words));
  const std::vector<std::filesystem::path> after{std::filesystem::directory_iterator(dir.path()), {}};
  EXPECT_EQ(after.size(), before.size()) << "a file was written";
}

INSTANTIATE_TEST_SUITE_P(
    BadInput, ExportRefuses,
    ::testing::Values(
        BadCall{"missing_file", {"export", "@", "missing.h5", "-o", "out.csv"}, "missing.h5: no such file"},
        BadCall{"not_hdf5", {"export", "notes.txt"}, "notes.txt: not an HDF5 file"},
        BadCall{"hdf5_not_memsweep", {"export", "plain.h5"}, "plain.h5"},
        BadCall{"second_file_bad", {"export", "@", "other.h5", "-o", "out.csv"}, "other.h5"},
        BadCall{"unknown_table", {"export", "@", "--table", "runs"}, "--table runs"},
        BadCall{"unknown_format", {"export", "@", "--format", "xlsx"}, "--format xlsx"},
        BadCall{"output_is_input", {"export", "@", "-o", "@", "--force"}, "is one of the results files"},
        BadCall{"force_over_fifo", {"export", "@", "-o", "pipe", "--force"}, "-o pipe: a FIFO (named pipe)"},
        BadCall{"force_over_link", {"export", "@", "-o", "link.csv", "--force"}, "-o link.csv: a symbolic link"},
        BadCall{"force_over_hdf5", {"export", "@", "-o", "plain.h5", "--force"}, "-o plain.h5: an HDF5 file"},
        BadCall{"output_folder_missing", {"export", "@", "-o", "no/such/out.csv"}, "no such folder"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
