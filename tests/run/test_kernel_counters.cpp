// A machine where PAPI's CPU component is disabled, as on a CPU newer than
// Debian's libpfm4 (Zen 5, Granite Rapids): here made so through libpfm4's
// own LIBPFM_DISABLED_PMUS, which leaves PAPI 7.0 with "libpfm4 no default
// PMU found", exactly as such a CPU does. Then, as a user would: `memsweep
// events`, the quickstart sweep on three ranks, `summary`, `watch --trial`
// and the analysis report must all show the software counters, counted
// through the kernel's generic events.

#include "run/results_file.hpp"
#include "support/file_text.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

const std::string kQuickstart = MEMSWEEP_SOURCE_DIR "/jobs/examples/quickstart.toml";
const std::vector<std::string> kSoftwareEvents{"perf::PAGE-FAULTS", "perf::MINOR-FAULTS", "perf::MAJOR-FAULTS",
                                               "perf::CONTEXT-SWITCHES"};

nlohmann::json events_json(const std::map<std::string, std::string>& environment) {
  const CommandResult result = run_command(memsweep_argv({"events", "--json"}), "", environment);
  EXPECT_EQ(result.exit_status, 0) << result.err;
  return nlohmann::json::parse(result.out);
}

// The environment that disables PAPI's CPU component here: every CPU PMU
// libpfm4 detects, disabled. Empty on a machine where it is disabled already.
// Disabling one PMU may let libpfm4 fall back to another that matches the
// CPU too (Zen 1: amd64_fam17h_zen1, then the older amd64_fam17h), so each
// PMU that becomes the default is disabled as well, until none is left.
std::map<std::string, std::string> without_papis_cpu_component() {
  std::map<std::string, std::string> environment{{"OMP_NUM_THREADS", "1"}};
  std::string cpu_pmus;
  for (int round = 0; round < 8; ++round) {
    const nlohmann::json machine = events_json(environment);
    const nlohmann::json& component = machine.at("papi_cpu_component");
    if (!component.at("active").get<bool>()) {
      if (round == 0)
        std::cout << "[ NO PAPI CPU ] PAPI's CPU component is already disabled on this machine: "
                  << component.value("reason", "") << "\n";
      else
        std::cout << "[ PAPI CPU OFF ] disabling libpfm4's CPU PMUs: LIBPFM_DISABLED_PMUS=" << cpu_pmus << "\n";
      return environment;
    }
    for (const std::string pmu : component.at("pmus"))
      if (pmu != "perf" && pmu != "perf_raw") cpu_pmus += (cpu_pmus.empty() ? "" : ",") + pmu;
    environment["LIBPFM_DISABLED_PMUS"] = cpu_pmus;
  }
  ADD_FAILURE() << "PAPI's CPU component stays active with LIBPFM_DISABLED_PMUS=" << cpu_pmus;
  return environment;
}

class WithoutPapisCpuComponent : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    environment_ = new std::map<std::string, std::string>(without_papis_cpu_component());
    dir_ = new TempDir();
    run_ = new CommandResult(
        run_command(on_ranks(MEMSWEEP_MPIEXEC, 3, memsweep_argv({"run", kQuickstart, "-o", "out.h5"})),
                    dir_->path().string(), *environment_));
  }
  static void TearDownTestSuite() {
    delete run_;
    delete dir_;
    delete environment_;
  }
  void SetUp() override { ASSERT_EQ(run_->exit_status, 0) << run_->err; }
  static std::filesystem::path file() { return dir_->path() / "out.h5"; }

  static std::map<std::string, std::string>* environment_;
  static TempDir* dir_;
  static CommandResult* run_;
};
std::map<std::string, std::string>* WithoutPapisCpuComponent::environment_ = nullptr;
TempDir* WithoutPapisCpuComponent::dir_ = nullptr;
CommandResult* WithoutPapisCpuComponent::run_ = nullptr;

TEST_F(WithoutPapisCpuComponent, EventsSaysSoAndServesTheSoftwareEventsFromTheKernel) {
  const CommandResult text = run_command(memsweep_argv({"events"}), "", *environment_);
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("CPU component perf_event is disabled"));
  for (const std::string& name : kSoftwareEvents)
    EXPECT_TRUE(std::regex_search(text.out, std::regex("\n" + name + " +yes +kernel +type=1 config=0x")))
        << name << " in\n"
        << text.out;

  const nlohmann::json json = events_json(*environment_);
  EXPECT_FALSE(json.at("papi_cpu_component").at("active").get<bool>());
  EXPECT_FALSE(json.at("papi_cpu_component").at("reason").get<std::string>().empty());
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& event : json.at("events")) by_name[event.at("name")] = event;
  for (const std::string& name : kSoftwareEvents) {
    ASSERT_TRUE(by_name.contains(name)) << name;
    EXPECT_TRUE(by_name[name].at("available").get<bool>()) << by_name[name].dump();
    EXPECT_EQ(by_name[name].at("source"), "kernel");
    EXPECT_EQ(by_name[name].at("terms").at(0).at("type"), 1) << "PERF_TYPE_SOFTWARE";
  }
  // No generic kernel event stands for it, and PAPI names nothing here.
  EXPECT_FALSE(by_name.at("PAPI_SR_INS").at("available").get<bool>());
  EXPECT_THAT(by_name.at("PAPI_SR_INS").at("reason").get<std::string>(), HasSubstr("no generic kernel event"));
}

TEST_F(WithoutPapisCpuComponent, TheRunRecordsTheFourSoftwareCountersWithoutWarnings) {
  EXPECT_THAT(run_->err, ::testing::Not(HasSubstr("counters:"))) << "nothing asked for was left out";
  const std::map<std::string, std::string> attributes = h5py_attributes(file());
  EXPECT_EQ(attributes.at("counter_columns"),
            "perf::PAGE-FAULTS,perf::MINOR-FAULTS,perf::MAJOR-FAULTS,"
            "perf::CONTEXT-SWITCHES");
  EXPECT_EQ(attributes.at("counter_sources"), "kernel,kernel,kernel,kernel");
  // The kernel's ABI: PERF_TYPE_SOFTWARE 1; page faults 2, minor 5, major 6, context switches 3.
  EXPECT_EQ(attributes.at("counter_encodings"),
            "type=1 config=0x2,type=1 config=0x5,type=1 config=0x6,type=1 config=0x3");
}

TEST_F(WithoutPapisCpuComponent, ThePageFaultColumnHoldsCounts) {
  const TsvTable trials = h5py_table(file(), "trials");
  const TsvTable samples = h5py_table(file(), "samples");
  ASSERT_EQ(trials.rows.size(), 4U);
  for (std::size_t row = 0; row < trials.rows.size(); ++row) {
    const std::string id = trials.at(row, "trial_id");
    double most = -1;
    for (std::size_t s : samples.where("trial_id", id)) most = std::max(most, samples.number(s, "perf::PAGE-FAULTS"));
    // The trial process faults in its dataset view, weights and batches.
    EXPECT_GT(most, 100) << id;
  }
}

TEST_F(WithoutPapisCpuComponent, SummaryWatchAndTheReportShowThem) {
  const CommandResult summary = run_command(memsweep_argv({"summary", file().string()}), "", *environment_);
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_THAT(summary.out, HasSubstr("counters recorded: perf::PAGE-FAULTS (kernel), perf::MINOR-FAULTS (kernel), "
                                     "perf::MAJOR-FAULTS (kernel), perf::CONTEXT-SWITCHES (kernel)"));

  const std::string id = h5py_table(file(), "trials").at(0, "trial_id");
  std::map<std::string, std::string> wide = *environment_;
  wide["COLUMNS"] = "160";
  const CommandResult watch = run_command(memsweep_argv({"watch", file().string(), "--once", "--trial", id}), "", wide);
  ASSERT_EQ(watch.exit_status, 0) << watch.err;
  for (const std::string& name : kSoftwareEvents) EXPECT_THAT(watch.out, HasSubstr(name));

  const std::filesystem::path report = dir_->path() / "report";
  const CommandResult analysis =
      run_command({"/usr/bin/python3", "-m", "memsweep_analysis", "report", file().string(), "-o", report.string()}, "",
                  {{"PYTHONPATH", MEMSWEEP_SOURCE_DIR "/analysis"}, {"MPLBACKEND", "Agg"}});
  ASSERT_EQ(analysis.exit_status, 0) << analysis.err;
  const std::string markdown = slurp(report / "report.md");
  for (const std::string& name : kSoftwareEvents) EXPECT_THAT(markdown, HasSubstr(name));
  EXPECT_THAT(markdown, HasSubstr("perf::PAGE-FAULTS: kernel (type=1 config=0x2)"));
}

TEST_F(WithoutPapisCpuComponent, CommandsThatRecordNothingWarnOfNothing) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"plan", kQuickstart},
                                             {"estimate", kQuickstart},
                                             {"summary", file().string()},
                                             {"watch", file().string(), "--once"}}) {
    const CommandResult result = run_command(memsweep_argv(args), "", *environment_);
    EXPECT_EQ(result.exit_status, 0) << args[0] << ": " << result.err;
    EXPECT_EQ(result.err, "") << args[0];
  }
}

// ---- the switch, on any machine ---------------------------------------------

struct SwitchCase {
  const char* name;
  std::vector<std::string> options;
  const char* sampler_line;  // added to the quickstart's [sampler]
};

class CounterSourceSwitch : public ::testing::TestWithParam<SwitchCase> {};

TEST_P(CounterSourceSwitch, ForcesTheKernelPathWherePapiWouldServe) {
  const TempDir dir;
  std::string sweep = slurp(kQuickstart);
  sweep.replace(sweep.find("interval_ms = 10"), 16, std::string("interval_ms = 10\n") + GetParam().sampler_line);
  const std::filesystem::path sweep_file = dir.write("sweep.toml", sweep);
  std::vector<std::string> args{"run", sweep_file.string(), "-o", "out.h5", "-q", "--max-train-examples", "500"};
  args.insert(args.end(), GetParam().options.begin(), GetParam().options.end());
  const CommandResult run = run_command(memsweep_argv(args), dir.path().string(), {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  const std::map<std::string, std::string> attributes = h5py_attributes(dir.path() / "out.h5");
  EXPECT_EQ(attributes.at("counter_columns"),
            "perf::PAGE-FAULTS,perf::MINOR-FAULTS,perf::MAJOR-FAULTS,"
            "perf::CONTEXT-SWITCHES");
  EXPECT_EQ(attributes.at("counter_sources"), "kernel,kernel,kernel,kernel");
  const TsvTable samples = h5py_table(dir.path() / "out.h5", "samples");
  double most = -1;
  for (std::size_t s = 0; s < samples.rows.size(); ++s) most = std::max(most, samples.number(s, "perf::PAGE-FAULTS"));
  EXPECT_GT(most, 100);
}

TEST(CounterWarnings, OneLineNamesTheEventsLeftOutAndTheFileSaysWhy) {
  const TempDir dir;
  std::string sweep = slurp(kQuickstart);
  sweep.replace(sweep.find("interval_ms = 10"), 16,
                "interval_ms = 10\nevents = [\"perf::PAGE-FAULTS\", \"PAPI_SR_INS\", \"nosuchpmu::THING\"]\n"
                "counter_source = \"kernel\"");
  const std::filesystem::path sweep_file = dir.write("sweep.toml", sweep);
  const CommandResult run =
      run_command(memsweep_argv({"run", sweep_file.string(), "-o", "out.h5", "--max-train-examples", "500"}),
                  dir.path().string(), {{"OMP_NUM_THREADS", "1"}});
  ASSERT_EQ(run.exit_status, 0) << run.err;
  std::vector<std::string> lines;
  std::istringstream err(run.err);
  for (std::string line; std::getline(err, line);)
    if (line.find("counters") != std::string::npos) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1U) << run.err;
  EXPECT_THAT(lines[0], HasSubstr("not recording PAPI_SR_INS, nosuchpmu::THING"));
  const std::map<std::string, std::string> attributes = h5py_attributes(dir.path() / "out.h5");
  EXPECT_EQ(attributes.at("counter_columns"), "perf::PAGE-FAULTS");
  EXPECT_THAT(attributes.at("event_notes"), HasSubstr("PAPI_SR_INS: not recorded: no generic kernel event"));
  EXPECT_THAT(attributes.at("event_notes"), HasSubstr("nosuchpmu::THING: not recorded: not a generic kernel event"));
}

INSTANTIATE_TEST_SUITE_P(
    Ways, CounterSourceSwitch,
    ::testing::Values(SwitchCase{"option", {"--counter-source", "kernel"}, ""},
                      SwitchCase{"sweep_file", {}, "counter_source = \"kernel\""},
                      // The option wins over the file.
                      SwitchCase{"option_over_file", {"--counter-source", "kernel"}, "counter_source = \"papi\""}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
