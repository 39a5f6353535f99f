// A program's own metrics, end to end (docs/sweep-file.md, "Metrics"): a
// Python script that prints what pytorch/examples' word_language_model
// prints (loss and perplexity lines, no events protocol), run as program
// trials under mpirun (a worker sends the rows to rank 0) with
// [programs.NAME] metrics; /metrics read back with h5py holds per epoch the
// last value the script printed, as the test reads it from the program's
// own log; summary and export show them. A bad metrics field is refused
// before anything is written.

#include "run/results_file.hpp"
#include "support/exit_statuses.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace memsweep::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Three epochs of word_language_model's lines; the figures depend on bptt
// and the epoch, so that every value differs. Unbuffered (-u below) or
// not, the values are the same; the prints flush anyway.
constexpr const char* kScript = R"(import sys
bptt, epochs = int(sys.argv[1]), int(sys.argv[2])
print("loading the corpus", flush=True)
for epoch in range(1, epochs + 1):
    for batch in (100, 200):
        loss = 7.0 - 0.5 * epoch - batch / 1000 + bptt / 1000
        print(f"| epoch {epoch:3d} | {batch:5d}/  300 batches | lr 20.00 | ms/batch  1.00 | loss {loss:5.2f} | "
              f"ppl {2.718 ** loss:8.2f}", flush=True)
    print("-" * 89)
    valid = 5.5 - 0.25 * epoch + bptt / 500
    print(f"| end of epoch {epoch:3d} | time:  0.01s | valid loss {valid:5.2f} | valid ppl {2.718 ** valid:8.2f}",
          flush=True)
    print("-" * 89)
print("=" * 89)
print(f"| End of training | test loss {valid - 0.05:5.2f} | test ppl {2.718 ** (valid - 0.05):8.2f}")
print("=" * 89)
)";

std::string sweep_text(const fs::path& script, const std::string& metrics) {
  return "[sweep]\nname = \"wlm-metrics\"\n[programs.wlm]\n"
         "command = [\"python3\", \"-u\", \"" +
         script.string() +
         "\", \"{bptt}\", \"{epochs}\"]\n"
         "metrics = " +
         metrics +
         "\n"
         "[defaults]\nprogram = \"wlm\"\nepochs = 3\n"
         "[grid]\nparams.bptt = [35, 70]\n";
}

constexpr const char* kMetrics =
    R"({ epoch = '^\| (?:end of )?epoch +(\d+)', loss = '\| loss +([0-9.]+)', valid_ppl = 'valid ppl +([0-9.]+)', )"
    R"(test_ppl = 'test ppl +([0-9.]+)' })";

// What the test reads in the program's log itself, without regular
// expressions: per (epoch, metric) the last number after the label.
using Printed = std::map<std::pair<int, std::string>, std::string>;

std::string number_after(const std::string& line, const std::string& label) {
  const std::size_t at = line.find(label);
  if (at == std::string::npos) return {};
  std::istringstream rest(line.substr(at + label.size()));
  std::string number;
  rest >> number;
  return number;
}

Printed printed_values(const fs::path& log) {
  Printed printed;
  int epoch = 0;
  std::istringstream lines(slurp(log));
  for (std::string line; std::getline(lines, line);) {
    for (const char* label : {"| epoch ", "| end of epoch "})
      if (line.rfind(label, 0) == 0) epoch = std::stoi(number_after(line, label));
    for (const auto& [label, name] : std::vector<std::pair<std::string, std::string>>{
             {"| loss ", "loss"}, {"valid ppl ", "valid_ppl"}, {"test ppl ", "test_ppl"}}) {
      const std::string number = number_after(line, label);
      if (!number.empty()) printed[{epoch, name}] = number;
    }
  }
  return printed;
}

class ProgramMetricsRun : public ::testing::Test {
 protected:
  void SetUp() override {
    script_ = dir_.write("wlm.py", kScript);
    sweep_ = dir_.write("wlm.toml", sweep_text(script_, kMetrics)).string();
    results_ = (dir_.path() / "wlm.h5").string();
  }

  CommandResult run_on_two_ranks() {
    return run_command(on_ranks(MEMSWEEP_MPIEXEC, 2, memsweep_argv({"run", sweep_, "-o", results_, "-q"})),
                       dir_.path().string(), kEnvironment);
  }

  TempDir dir_;
  fs::path script_;
  std::string sweep_;
  std::string results_;
};

TEST_F(ProgramMetricsRun, TheFileHoldsPerEpochTheLastValueTheProgramPrinted) {
  const CommandResult run = run_on_two_ranks();
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable trials = h5py_table(results_, "trials");
  ASSERT_EQ(trials.rows.size(), 2u);
  const TsvTable metrics = h5py_table(results_, "metrics");
  EXPECT_EQ(h5py_units(results_, "metrics").at("seconds"), "s");
  std::size_t compared = 0;
  for (std::size_t t = 0; t < trials.rows.size(); ++t) {
    EXPECT_EQ(trials.at(t, "status"), "ok");
    const std::string id = trials.at(t, "trial_id");
    const Printed printed = printed_values(fs::path(results_).replace_extension(".logs") / (id + "-0.out"));
    // Three epochs of loss and valid_ppl, and test_ppl printed in epoch 3.
    ASSERT_EQ(printed.size(), 7u) << id;
    const std::vector<std::size_t> rows = metrics.where("trial_id", id);
    ASSERT_EQ(rows.size(), printed.size()) << "one row per epoch and metric printed";
    for (const std::size_t row : rows) {
      const std::pair<int, std::string> key{std::stoi(metrics.at(row, "epoch")), metrics.at(row, "name")};
      ASSERT_TRUE(printed.count(key)) << id << " epoch " << key.first << " " << key.second;
      // The number as printed, e.g. "250.03": the file's double is that text read.
      EXPECT_EQ(metrics.number(row, "value"), std::stod(printed.at(key))) << id << " " << key.second;
      EXPECT_EQ(metrics.at(row, "attempt"), "0");
      EXPECT_EQ(metrics.at(row, "matches"), key.second == "loss" ? "2" : "1");
      ++compared;
    }
  }
  EXPECT_EQ(compared, 14u);
}

TEST_F(ProgramMetricsRun, SummaryAndExportShowThem) {
  const CommandResult run = run_on_two_ranks();
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable trials = h5py_table(results_, "trials");
  ASSERT_EQ(trials.rows.size(), 2u);

  const CommandResult summary = run_command(memsweep_argv({"summary", results_}));
  ASSERT_EQ(summary.exit_status, kOk) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("Program metrics: the last value each program printed"));
  // The section's rows by trial id, cells by the header's column names
  // (no cell of this sweep holds a space).
  std::map<std::string, std::map<std::string, std::string>> cells;
  std::vector<std::string> columns;
  std::istringstream lines(summary.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> row{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    if (!row.empty() && row[0] == "trial" && std::find(row.begin(), row.end(), "valid_ppl") != row.end()) {
      columns = row;
    } else if (!columns.empty() && row.size() == columns.size()) {
      for (std::size_t i = 0; i < row.size(); ++i) cells[row[0]][columns[i]] = row[i];
    }
  }
  for (std::size_t t = 0; t < trials.rows.size(); ++t) {
    const std::string id = trials.at(t, "trial_id");
    const Printed printed = printed_values(fs::path(results_).replace_extension(".logs") / (id + "-0.out"));
    ASSERT_TRUE(cells.count(id)) << id << "\n" << summary.out;
    // The final values, as printed: epoch 3's valid_ppl and loss, and test_ppl.
    EXPECT_EQ(cells[id]["epoch"], "3") << summary.out;
    for (const char* name : {"loss", "valid_ppl", "test_ppl"})
      EXPECT_EQ(std::stod(cells[id][name]), std::stod(printed.at({3, name}))) << name << "\n" << summary.out;
    EXPECT_EQ(cells[id]["status"], "ok");
  }

  const CommandResult exported = run_command(memsweep_argv({"export", "--table", "metrics", results_}));
  ASSERT_EQ(exported.exit_status, kOk) << exported.err;
  std::istringstream csv(exported.out);
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header, "trial_id,attempt,epoch,name,value,seconds,matches");
  std::size_t rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, h5py_table(results_, "metrics").rows.size());
  EXPECT_EQ(rows, 14u);
}

TEST_F(ProgramMetricsRun, ABadMetricIsRefusedBeforeAnythingIsWritten) {
  const std::string bad = dir_.write("bad.toml", sweep_text(script_, "{ ppl = 'ppl +[0-9.]+' }")).string();
  for (const char* command : {"plan", "run"}) {
    std::vector<std::string> args{command, bad};
    if (std::string(command) == "run") args.insert(args.end(), {"-o", results_});
    const CommandResult refused = run_command(memsweep_argv(args), dir_.path().string(), kEnvironment);
    EXPECT_EQ(refused.exit_status, kBadInput) << command << "\n" << refused.out << refused.err;
    EXPECT_THAT(refused.err, HasSubstr(bad + ":5: programs.wlm.metrics.ppl: in 'ppl +[0-9.]+': it has 0 capture "
                                             "groups; expected exactly one"))
        << command;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << "one line\n" << refused.err;
  }
  EXPECT_FALSE(fs::exists(results_)) << "nothing written for a sweep that does not read";
}

}  // namespace
}  // namespace memsweep::testing
