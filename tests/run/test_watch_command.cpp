// `memsweep watch` on a sweep that mpirun runs in the background: plain
// snapshots (--once, and a watcher whose output is a file) while it runs and
// after it ended, checked against what the run wrote; and its errors.

#include "run/results_file.hpp"
#include "support/background_process.hpp"
#include "support/exit_statuses.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;

// Four trials of a few seconds each on one worker: long enough that a
// snapshot finds one running (samples reach the file within about a second
// with --flush-interval 0.2). 18 epochs: 6 took only about 1 s a trial on a
// Zen 5, and no snapshot caught one running.
constexpr const char* kSweep = R"(
[sweep]
name = "watched"
[sampler]
interval_ms = 5
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 16000, test_size = 500 }
learning_rate = 0.02
batch_size = 16
epochs = 18
[grid]
hidden = [[256, 256], [320, 256], [384, 256], [448, 256]]
)";
constexpr int kPlanned = 4;
constexpr int kEpochs = 18;  // as kSweep says

// A plain snapshot wide enough for every column of the running trials' table.
CommandResult watch_once(const std::string& file, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args{"watch", file, "--once"};
  args.insert(args.end(), more.begin(), more.end());
  return run_command(memsweep_argv(args), "", {{"COLUMNS", "160"}});
}

struct Counts {
  int started = -1;
  int planned = -1;
  int done = -1;
  int running = -1;
  int failed = -1;
  int left = -1;
};

// "trials 2/4: done 1, running 1, failed 0, left 2"
std::optional<Counts> counts_in(const std::string& snapshot) {
  static const std::regex kLine(R"(trials (\d+)/(\d+): done (\d+), running (\d+), failed (\d+), left (\d+))");
  std::smatch match;
  if (!std::regex_search(snapshot, match, kLine)) return std::nullopt;
  return Counts{std::stoi(match[1]), std::stoi(match[2]), std::stoi(match[3]),
                std::stoi(match[4]), std::stoi(match[5]), std::stoi(match[6])};
}

struct RunningRow {
  int rank = -1;
  std::string host;
  std::string trial_id;
  int epoch = -1;
  int epochs = -1;
  double rss_now_mib = -1.0;
  double rss_peak_mib = -1.0;
};

double to_mib(const std::string& number, const std::string& unit) {
  const double value = std::stod(number);
  if (unit == "GiB") return value * 1024.0;
  if (unit == "KiB") return value / 1024.0;
  if (unit == "B") return value / 1024.0 / 1024.0;
  return value;
}

// Rows of the running trials' table:
// "   1  host  1eb6bd43ee7a    3/6       4s  221 MiB   221 MiB  ▁▂▃...",
// and "setup/6" (epoch 0) for a trial caught before its first epoch.
std::vector<RunningRow> running_rows(const std::string& snapshot) {
  static const std::regex kRow(
      R"(^\s*(\d+)\s+(\S+)\s+([0-9a-f]{12})\s+(\d+|setup)/(\d+)\s+\S+\s+([\d.]+) (B|KiB|MiB|GiB)\s+([\d.]+) (B|KiB|MiB|GiB))");
  std::vector<RunningRow> rows;
  std::istringstream lines(snapshot);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (!std::regex_search(line, match, kRow)) continue;
    const int epoch = match[4] == "setup" ? 0 : std::stoi(match[4]);
    rows.push_back({std::stoi(match[1]), match[2], match[3], epoch, std::stoi(match[5]), to_mib(match[6], match[7]),
                    to_mib(match[8], match[9])});
  }
  return rows;
}

void expect_consistent(const Counts& counts) {
  EXPECT_EQ(counts.planned, kPlanned);
  EXPECT_EQ(counts.done + counts.running + counts.failed + counts.left, counts.planned);
  EXPECT_EQ(counts.started, counts.planned - counts.left);
}

TEST(WatchCommand, SnapshotsDuringABackgroundSweepShowItsRunningTrialsThenItsEnd) {
  const TempDir dir;
  const std::string sweep = dir.write("watched.toml", kSweep).string();
  const std::string out = (dir.path() / "watched.h5").string();

  // A watcher started before the file exists, its output a file (no
  // terminal): it waits, prints a snapshot per interval, and ends by itself
  // when the sweep has.
  std::filesystem::create_directories(dir.path() / "follower");
  std::filesystem::create_directories(dir.path() / "run");
  BackgroundProcess follower(memsweep_argv({"watch", out, "--wait", "--interval", "0.3"}), dir.path() / "follower");
  BackgroundProcess run(
      on_ranks(MEMSWEEP_MPIEXEC, 2, memsweep_argv({"run", sweep, "-o", out, "--flush-interval", "0.2"})),
      dir.path() / "run", kEnvironment);

  // Snapshots until one shows a running trial; every one counts each trial once.
  std::optional<RunningRow> seen;
  std::string seen_snapshot;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!seen && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const CommandResult snapshot = watch_once(out);
    if (snapshot.exit_status == kBadInput && snapshot.err.find("no such file") != std::string::npos) continue;
    ASSERT_EQ(snapshot.exit_status, kOk) << snapshot.err;
    const std::optional<Counts> counts = counts_in(snapshot.out);
    ASSERT_TRUE(counts.has_value()) << snapshot.out;
    expect_consistent(*counts);
    const std::vector<RunningRow> rows = running_rows(snapshot.out);
    EXPECT_EQ(rows.size(), static_cast<std::size_t>(counts->running)) << snapshot.out;
    if (counts->running >= 1 && !rows.empty()) {
      seen = rows.front();
      seen_snapshot = snapshot.out;
    }
  }
  ASSERT_TRUE(seen.has_value()) << "no snapshot showed a running trial; run: " << run.err();
  std::cout << "a snapshot during the sweep:\n" << seen_snapshot;
  EXPECT_THAT(seen_snapshot, HasSubstr("watched"));
  EXPECT_THAT(seen_snapshot, HasSubstr("running"));
  EXPECT_EQ(seen->rank, 1) << "the one worker of two ranks";
  EXPECT_GT(seen->rss_now_mib, 1.0);
  EXPECT_GE(seen->rss_peak_mib, seen->rss_now_mib);
  EXPECT_EQ(seen->epochs, kEpochs);
  EXPECT_LE(seen->epoch, kEpochs);

  // The one trial it caught running is in the file afterwards, from that rank
  // and host, and its peak is at least what the snapshot saw.
  ASSERT_EQ(run.wait(), kOk) << run.err();
  const TsvTable trials = h5py_table(out, "trials");
  const std::vector<std::size_t> rows = trials.where("trial_id", seen->trial_id);
  ASSERT_EQ(rows.size(), 1U) << seen->trial_id;
  EXPECT_EQ(trials.at(rows[0], "rank"), "1");
  EXPECT_EQ(trials.at(rows[0], "host"), seen->host);
  EXPECT_GE(std::stod(trials.at(rows[0], "rss_peak")) / 1024.0 / 1024.0, seen->rss_peak_mib * 0.99);

  const CommandResult after = watch_once(out);
  ASSERT_EQ(after.exit_status, kOk) << after.err;
  const std::optional<Counts> final_counts = counts_in(after.out);
  ASSERT_TRUE(final_counts.has_value()) << after.out;
  expect_consistent(*final_counts);
  EXPECT_EQ(final_counts->done, kPlanned);
  EXPECT_THAT(after.out, HasSubstr("finished"));
  EXPECT_TRUE(running_rows(after.out).empty());
  EXPECT_THAT(after.out, HasSubstr("synthetic (4 trials)")) << "the summary, as memsweep summary prints it";

  ASSERT_TRUE(follower.wait_until_ended(std::chrono::seconds(20))) << "the watcher did not end with the sweep";
  EXPECT_EQ(follower.wait(), kOk) << follower.err();
  const std::string followed = follower.out();
  EXPECT_THAT(followed, HasSubstr("waiting for"));
  std::size_t snapshots = 0;
  for (std::size_t at = followed.find("memsweep watch"); at != std::string::npos;
       at = followed.find("memsweep watch", at + 1))
    ++snapshots;
  EXPECT_GE(snapshots, 5U) << "one snapshot per 0.3 s over a sweep of several seconds";
  EXPECT_THAT(followed.substr(followed.rfind("memsweep watch")), HasSubstr("finished"));
}

// One trial whose epochs each last far longer than the sampling interval on
// any CPU (quickstart's 6000 examples train in a few milliseconds on a fast
// one, and a chart cannot number an epoch no sample fell into).
constexpr const char* kSampledEpochs = R"(
[sweep]
name = "sampled-epochs"
[sampler]
interval_ms = 2
[[trial]]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 60000, test_size = 100 }
model = "mlp"
hidden = [256, 128]
batch_size = 32
epochs = 3
)";

TEST(WatchCommand, OneTrialLargeWithItsChartsAndCounters) {
  const TempDir dir;
  const std::string sweep = dir.write("epochs.toml", kSampledEpochs).string();
  const std::string out = (dir.path() / "q.h5").string();
  const CommandResult run = run_command({MEMSWEEP_EXECUTABLE, "run", sweep, "-o", out, "-q"}, "", kEnvironment);
  ASSERT_EQ(run.exit_status, kOk) << run.err;
  const TsvTable trials = h5py_table(out, "trials");
  const std::string id = trials.at(0, "trial_id");
  const CommandResult view = watch_once(out, {"--trial", id});
  ASSERT_EQ(view.exit_status, kOk) << view.err;
  EXPECT_THAT(view.out, HasSubstr("trial " + id));
  EXPECT_THAT(view.out, HasSubstr("RSS of the trial's rank"));
  EXPECT_THAT(view.out, HasSubstr("system used"));
  EXPECT_THAT(view.out, HasSubstr("per second"));
  // Every counter the file recorded (h5py lists them joined by ",").
  std::istringstream counters(h5py_attributes(out).at("counter_columns"));
  for (std::string counter; std::getline(counters, counter, ',');) EXPECT_THAT(view.out, HasSubstr(counter));
  // Its 3 epochs are numbered on the time axis.
  EXPECT_TRUE(std::regex_search(view.out, std::regex(R"(1-+2-+3)"))) << view.out;
}

struct BadWatch {
  const char* name;
  const char* contents;  // nullptr: no such file; "/": a directory
  std::vector<std::string> more;
  const char* message;
};

class WatchBadInput : public ::testing::TestWithParam<BadWatch> {};

TEST_P(WatchBadInput, OneLineAndStatusTwo) {
  const TempDir dir;
  std::filesystem::path file = dir.path() / "results.h5";
  const BadWatch& bad = GetParam();
  if (bad.contents == nullptr) {
  } else if (std::string(bad.contents) == "/") {
    std::filesystem::create_directory(file);
  } else if (std::string(bad.contents) == "quickstart") {
    const CommandResult run = run_command(
        {MEMSWEEP_EXECUTABLE, "run", MEMSWEEP_SOURCE_DIR "/jobs/examples/quickstart.toml", "-o", file.string(), "-q"},
        "", kEnvironment);
    ASSERT_EQ(run.exit_status, kOk) << run.err;
  } else {
    file = dir.write("results.h5", bad.contents);
  }
  for (const bool once : {true, false}) {
    std::vector<std::string> args{"watch", file.string()};
    if (once) args.push_back("--once");
    args.insert(args.end(), bad.more.begin(), bad.more.end());
    const CommandResult watch = run_memsweep(args);
    EXPECT_EQ(watch.exit_status, kBadInput) << watch.out;
    EXPECT_THAT(watch.err, HasSubstr(bad.message));
    // One line (a bad option also gets CLI11's pointer to --help).
    std::string said = watch.err;
    if (const std::size_t help = said.find("Run with --help"); help != std::string::npos) said.erase(help);
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << watch.err;
    EXPECT_TRUE(watch.out.empty()) << watch.out;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WatchBadInput,
    ::testing::Values(BadWatch{"missing", nullptr, {}, "no such file; has the sweep started? (--wait waits for it)"},
                      BadWatch{"directory", "/", {}, "results.h5"}, BadWatch{"empty", "", {}, "not an HDF5 file"},
                      BadWatch{"text", "trial,lr\n1,0.1\n", {}, "not an HDF5 file"},
                      BadWatch{"unknown_trial", "quickstart", {"--trial", "0123456789ab"}, "no trial 0123456789ab"},
                      BadWatch{"zero_interval", "quickstart", {"--interval", "0"}, "--interval"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace memsweep::testing
