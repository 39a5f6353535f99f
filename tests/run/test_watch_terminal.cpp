// `memsweep watch` full-screen, on a real terminal: tmux panes of a fixed
// size follow a sweep running under mpirun, and the tests read the screen
// back with `tmux capture-pane` as a user would see it: the layout, that
// nothing overflows the width, the footer on the last row, the trial view's
// chart, and that q and Ctrl-C end the view and give the terminal back.

#include "support/background_process.hpp"
#include "support/skip_or_fail.hpp"
#include "support/subprocess.hpp"
#include "support/temp_dir.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

namespace memsweep::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Four trials of about 15 s each on one worker (6 epochs of 2-3 s): a trial
// is running most of the time, and epochs are long enough to be seen.
constexpr const char* kSlowSweep = R"(
[sweep]
name = "slow"
seed = 1
[sampler]
interval_ms = 10
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 60000, test_size = 1000 }
model = "mlp"
optimizer = "sgd"
batch_size = 16
epochs = 6
[grid]
learning_rate = [0.05, 0.02]
hidden = [[256, 128], [512]]
)";
constexpr int kPlannedTrials = 4;
constexpr int kEpochs = 6;

// The screens the tests look at: the overview in a large and a narrow pane.
constexpr int kWide = 120;
constexpr int kTall = 40;
constexpr int kNarrow = 60;
constexpr int kShort = 20;
constexpr const char* kInterval = "0.5";

// A trial shows as running 1-3 s after it starts (streaming every
// --flush-interval, the file flushed every second); mpirun, the dataset and
// the first epoch take a few seconds more.
constexpr auto kScreenTimeout = 30s;
constexpr auto kQuitTimeout = 10s;

// What the charts draw with on a UTF-8 terminal (src/watch/charts.hpp, Glyphs::unicode).
const std::set<std::string> kBlocks{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
constexpr std::string_view kEpochBoundary = "┊";
constexpr std::string_view kXAxisCorner = "└";
constexpr std::size_t kMinSparkline = 12;  // render.cpp: narrower, no sparkline is drawn

// ---- small helpers ----------------------------------------------------------

// A program on PATH (run_command does not search it), or nullopt.
std::optional<std::string> on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const std::string candidate = (folder.empty() ? "." : folder) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// UTF-8 text as its characters, each one column wide on these screens.
std::vector<std::string> characters(const std::string& line) {
  std::vector<std::string> out;
  for (const char c : line) {
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80 && !out.empty())
      out.back() += c;
    else
      out.emplace_back(1, c);
  }
  return out;
}

std::size_t columns(const std::string& line) { return characters(line).size(); }

// The longest run of block glyphs in `line`.
std::size_t longest_block_run(const std::string& line) {
  std::size_t longest = 0;
  std::size_t run = 0;
  for (const std::string& character : characters(line)) {
    run = kBlocks.contains(character) ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// The trial ids `memsweep plan` lists for a sweep file, in its order (the
// order one worker runs them in).
std::vector<std::string> planned_ids(const std::filesystem::path& sweep) {
  const CommandResult plan = run_memsweep({"plan", sweep.string()});
  EXPECT_EQ(plan.exit_status, 0) << plan.err;
  std::vector<std::string> ids;
  static const std::regex kId("[0-9a-f]{12}");
  std::istringstream lines(plan.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string first = line.substr(0, line.find(' '));
    if (std::regex_match(first, kId)) ids.push_back(first);
  }
  return ids;
}

// ---- a tmux server of the test's own ----------------------------------------

// A tmux server on a private socket, killed with everything in it when this
// goes out of scope. A guard process kills it too if the test process dies
// first (a ctest timeout): a full-screen watch never ends by itself.
class TmuxServer {
 public:
  TmuxServer(std::string tmux, const std::filesystem::path& scratch)
      : tmux_(std::move(tmux)), socket_(fmt::format("memsweep-test-{}-{}", ::getpid(), next_id_++)) {
    const std::filesystem::path guard_dir = scratch / socket_;
    std::filesystem::create_directories(guard_dir);
    const std::string kill_server = fmt::format("'{}' -L '{}' kill-server", tmux_, socket_);
    guard_ = std::make_unique<BackgroundProcess>(
        std::vector<std::string>{"/bin/sh", "-c", "trap \"" + kill_server + "; exit\" TERM; while :; do sleep 1; done"},
        guard_dir, std::map<std::string, std::string>{}, std::filesystem::path{}, SIGTERM);
  }
  ~TmuxServer() {
    run_command({tmux_, "-L", socket_, "kill-server"});
    // tmux leaves its socket behind: $TMUX_TMPDIR (or /tmp)/tmux-UID/NAME.
    const char* folder = std::getenv("TMUX_TMPDIR");
    std::error_code ignored;
    std::filesystem::remove(std::filesystem::path(folder != nullptr && *folder != '\0' ? folder : "/tmp") /
                                fmt::format("tmux-{}", ::getuid()) / socket_,
                            ignored);
  }
  TmuxServer(const TmuxServer&) = delete;
  TmuxServer& operator=(const TmuxServer&) = delete;

  // A detached session of one pane of `width` x `height` running `argv`
  // directly (no shell: tmux runs a command of several arguments itself).
  void new_session(const std::string& name, int width, int height, const std::vector<std::string>& argv) const {
    std::vector<std::string> args{
        "-f", "/dev/null", "new-session", "-d", "-x", std::to_string(width), "-y", std::to_string(height), "-s", name};
    args.insert(args.end(), argv.begin(), argv.end());
    const CommandResult started = tmux(args);
    ASSERT_EQ(started.exit_status, 0) << started.err;
  }

  // The pane's rows, top to bottom; wrapped lines joined (-J), so a line that
  // overflowed the width would come back longer than the pane.
  std::vector<std::string> capture(const std::string& session) const {
    const CommandResult captured = tmux({"capture-pane", "-p", "-J", "-t", session});
    EXPECT_EQ(captured.exit_status, 0) << captured.err;
    std::vector<std::string> lines;
    std::istringstream in(captured.out);
    for (std::string line; std::getline(in, line);) {
      line.erase(line.find_last_not_of(' ') + 1);
      lines.push_back(line);
    }
    return lines;
  }

  // Polls the pane until `ready` holds for its rows or `timeout` passes;
  // returns the last capture either way.
  std::vector<std::string> wait_for_screen(const std::string& session,
                                           const std::function<bool(const std::vector<std::string>&)>& ready,
                                           std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<std::string> lines = capture(session);
    while (!ready(lines) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(200ms);
      lines = capture(session);
    }
    return lines;
  }

  void send_keys(const std::string& session, const std::string& keys) const {
    const CommandResult sent = tmux({"send-keys", "-t", session, keys});
    EXPECT_EQ(sent.exit_status, 0) << sent.err;
  }

  // A pane variable, e.g. "alternate_on" (1 while the program shows its alternate screen).
  std::string pane_variable(const std::string& session, const std::string& variable) const {
    const CommandResult shown = tmux({"display-message", "-p", "-t", session, "#{" + variable + "}"});
    EXPECT_EQ(shown.exit_status, 0) << shown.err;
    return shown.out.substr(0, shown.out.find('\n'));
  }

 private:
  CommandResult tmux(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{tmux_, "-L", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }

  static inline int next_id_ = 0;
  std::string tmux_;
  std::string socket_;
  std::unique_ptr<BackgroundProcess> guard_;
};

// ---- the sweep, shared by the tests of one process --------------------------

class WatchInTmux : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmux_ = new std::optional<std::string>(on_path("tmux"));
    if (!*tmux_) return;
    dir_ = new TempDir();
    const std::filesystem::path sweep = dir_->write("slow.toml", kSlowSweep);
    ids_ = new std::vector<std::string>(planned_ids(sweep));
    // Killed with SIGTERM if this process dies first; the marker finds its
    // ranks should mpirun leave them behind.
    sweep_ = new BackgroundProcess(on_ranks(MEMSWEEP_MPIEXEC, 2,
                                            memsweep_argv({"run", sweep.string(), "-o", results().string(), "--threads",
                                                           "1", "--flush-interval", "0.5"})),
                                   dir_->path(), {{"OMP_NUM_THREADS", "1"}, {"MEMSWEEP_WATCH_TEST", marker()}},
                                   dir_->path(), SIGTERM);
  }

  static void TearDownTestSuite() {
    if (sweep_ != nullptr) {
      sweep_->signal(SIGTERM);  // mpirun passes it on; memsweep stops its ranks cleanly
      if (!sweep_->wait_until_ended(10s))
        for (const pid_t rank : processes_with_environment("MEMSWEEP_WATCH_TEST", marker())) ::kill(rank, SIGKILL);
    }
    delete sweep_;  // SIGKILLs mpirun if it still runs
    delete ids_;
    delete dir_;
    delete tmux_;
    sweep_ = nullptr;
    ids_ = nullptr;
    dir_ = nullptr;
    tmux_ = nullptr;
  }

  void SetUp() override {
    if (!*tmux_)
      MEMSWEEP_SKIP_OR_FAIL_IN_CI(
          "tmux is not installed (ci/install-deps.sh installs it): the terminal tests of memsweep watch cannot run");
    ASSERT_EQ(ids_->size(), static_cast<std::size_t>(kPlannedTrials));
    // Watch without --wait refuses a file that is not there yet.
    ASSERT_TRUE(sweep_->wait_for([] { return std::filesystem::exists(results()); }, kScreenTimeout))
        << "the sweep did not create its file:\n"
        << sweep_->err();
    server_ = std::make_unique<TmuxServer>(**tmux_, dir_->path());
  }

  void TearDown() override { server_.reset(); }

  static std::filesystem::path results() { return dir_->path() / "results.h5"; }
  static std::string marker() { return std::to_string(::getpid()); }

  // memsweep watch on the results file, as a user types it, in a UTF-8 locale.
  static std::vector<std::string> watch_argv(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv{"env", "-u", "LC_ALL", "-u", "LC_CTYPE", "LANG=C.UTF-8"};
    argv.insert(argv.end(), {MEMSWEEP_EXECUTABLE, "watch", results().string(), "--interval", kInterval});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }

  // The same inside a shell that stays after it (so that the pane can be
  // read once watch ended), says how watch exited and whether the terminal's
  // settings are as before. `trap : INT`: Ctrl-C goes to the whole
  // foreground group, and the shell must outlive it to report.
  static std::vector<std::string> watch_then_report_argv() {
    std::vector<std::string> argv{
        "/bin/sh", "-c",
        "before=$(stty -g); trap : INT; \"$@\"; status=$?; echo \"WATCH-ENDED $status\"; "
        "if [ \"$(stty -g)\" = \"$before\" ]; then echo TTY-SETTINGS-RESTORED; else echo TTY-SETTINGS-CHANGED; fi; "
        "exec sleep 120",
        "sh"};
    const std::vector<std::string> watch = watch_argv();
    argv.insert(argv.end(), watch.begin(), watch.end());
    return argv;
  }

  // A running trial's row in the overview: rank 1 (rank 0 writes, rank 1
  // trains), the host when there is room, the trial id, its epoch ("3/6",
  // "setup/6"), ...
  static std::optional<std::size_t> running_row(const std::vector<std::string>& lines) {
    static const std::regex kRow(R"(^ *1 +(\S+ +)?([0-9a-f]{12}) +(setup|\d+)/\d+ )");
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::smatch m;
      if (std::regex_search(lines[i], m, kRow) && std::find(ids_->begin(), ids_->end(), m[2]) != ids_->end()) return i;
    }
    return std::nullopt;
  }

  void quits_on(const std::string& keys);

  static std::optional<std::string>* tmux_;
  static TempDir* dir_;
  static std::vector<std::string>* ids_;
  static BackgroundProcess* sweep_;
  std::unique_ptr<TmuxServer> server_;
};
std::optional<std::string>* WatchInTmux::tmux_ = nullptr;
TempDir* WatchInTmux::dir_ = nullptr;
std::vector<std::string>* WatchInTmux::ids_ = nullptr;
BackgroundProcess* WatchInTmux::sweep_ = nullptr;

// "trials 2/4: done 1, running 1, failed 0, left 2"
struct Counts {
  int started = 0;
  int planned = 0;
  int done = 0;
  int running = 0;
  int failed = 0;
  int left = 0;
};

std::optional<Counts> counts_in(const std::vector<std::string>& lines) {
  static const std::regex kCounts(R"(^trials (\d+)/(\d+): done (\d+), running (\d+), failed (\d+), left (\d+)$)");
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_match(line, m, kCounts))
      return Counts{std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]),
                    std::stoi(m[4]), std::stoi(m[5]), std::stoi(m[6])};
  }
  return std::nullopt;
}

// The overview with a trial running, in a pane of `width` x `height`.
void expect_overview_layout(const std::vector<std::string>& lines, int width, int height,
                            const std::optional<std::size_t>& trial_row) {
  const std::string screen = joined(lines);
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(height)) << screen;
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_LE(columns(lines[i]), static_cast<std::size_t>(width)) << "row " << i + 1 << " overflows:\n" << screen;

  EXPECT_THAT(lines.front(), ::testing::StartsWith("memsweep watch  slow  ")) << "the first line names the sweep";
  EXPECT_THAT(lines.front(), HasSubstr("results.h5"));
  const std::optional<Counts> counts = counts_in(lines);
  ASSERT_TRUE(counts.has_value()) << "no line of trial counts:\n" << screen;
  EXPECT_EQ(counts->planned, kPlannedTrials);
  EXPECT_EQ(counts->done + counts->running + counts->failed + counts->left, counts->planned) << screen;
  EXPECT_EQ(counts->started, counts->planned - counts->left) << screen;
  EXPECT_EQ(counts->running, 1) << "one worker, one trial at a time:\n" << screen;

  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                          [](const std::string& line) {
                            return std::regex_search(line,
                                                     std::regex(R"(^host +total +available +used % +used +active$)"));
                          }))
      << "no node memory table:\n"
      << screen;
  ASSERT_TRUE(trial_row.has_value()) << "no running trial row:\n" << screen;
  EXPECT_GE(longest_block_run(lines[*trial_row]), kMinSparkline) << "no sparkline: " << lines[*trial_row];

  EXPECT_THAT(lines.back(), HasSubstr("q quit")) << "the footer is on the last row:\n" << screen;
  EXPECT_THAT(lines.back(), HasSubstr(fmt::format("every {} s", kInterval)));
}

// ---- the overview ------------------------------------------------------------

TEST_F(WatchInTmux, OverviewFillsA120x40PaneWithoutOverflow) {
  server_->new_session("watch", kWide, kTall, watch_argv());
  const std::vector<std::string> lines = server_->wait_for_screen(
      "watch", [](const auto& rows) { return running_row(rows) && !rows.back().empty(); }, kScreenTimeout);
  EXPECT_EQ(server_->pane_variable("watch", "alternate_on"), "1") << "the view is on the alternate screen";
  expect_overview_layout(lines, kWide, kTall, running_row(lines));
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& line) {
    return std::regex_search(line,
                             std::regex(R"(^rank +host +trial +epoch +elapsed +rss now +rss peak +rss over time)"));
  })) << joined(lines);

  std::cout << "\n---- memsweep watch in a " << kWide << "x" << kTall << " tmux pane ----\n"
            << joined(lines) << "---- end of the screen ----\n"
            << std::endl;
}

TEST_F(WatchInTmux, OverviewFitsANarrow60x20Pane) {
  server_->new_session("narrow", kNarrow, kShort, watch_argv());
  const std::vector<std::string> lines = server_->wait_for_screen(
      "narrow", [](const auto& rows) { return running_row(rows) && !rows.back().empty(); }, kScreenTimeout);
  expect_overview_layout(lines, kNarrow, kShort, running_row(lines));
}

// ---- quitting gives the terminal back ---------------------------------------------

void WatchInTmux::quits_on(const std::string& keys) {
  server_->new_session("quit", kWide, kTall, watch_then_report_argv());
  const std::vector<std::string> view = server_->wait_for_screen(
      "quit", [](const auto& rows) { return !rows.empty() && rows.back().find("q quit") != std::string::npos; },
      kScreenTimeout);
  ASSERT_THAT(view.back(), HasSubstr("q quit")) << joined(view);
  ASSERT_EQ(server_->pane_variable("quit", "alternate_on"), "1");

  server_->send_keys("quit", keys);
  const std::vector<std::string> after = server_->wait_for_screen(
      "quit",
      [](const auto& rows) {
        return std::any_of(rows.begin(), rows.end(),
                           [](const std::string& row) { return row.starts_with("TTY-SETTINGS-"); });
      },
      kQuitTimeout);
  const std::string screen = joined(after);
  EXPECT_THAT(screen, HasSubstr("WATCH-ENDED 0\n")) << "watch ends with status 0 on " << keys;
  EXPECT_THAT(screen, HasSubstr("TTY-SETTINGS-RESTORED")) << "stty settings differ after watch";
  EXPECT_EQ(server_->pane_variable("quit", "alternate_on"), "0") << "the alternate screen is still on";
  EXPECT_EQ(server_->pane_variable("quit", "cursor_flag"), "1") << "the cursor is still hidden";
  EXPECT_THAT(screen, ::testing::Not(HasSubstr("memsweep watch"))) << "the view's lines are still there";
  EXPECT_THAT(screen, ::testing::Not(HasSubstr("q quit")));
}

TEST_F(WatchInTmux, QQuitsAndGivesTheTerminalBack) { quits_on("q"); }

TEST_F(WatchInTmux, CtrlCQuitsAndGivesTheTerminalBack) { quits_on("C-c"); }

// ---- one trial large -----------------------------------------------------------

TEST_F(WatchInTmux, TrialViewShowsTheChartWithEpochMarksAndCounters) {
  const std::string id = ids_->front();  // the first to run
  server_->new_session("trial", kWide, kTall, watch_argv({"--trial", id}));
  // Until the trial is in its second epoch (or over): its line says "epoch N/6".
  static const std::regex kEpoch(R"(^epoch (\d+)/(\d+)  )");
  const auto in_second_epoch = [](const std::vector<std::string>& rows) {
    for (const std::string& row : rows) {
      std::smatch m;
      if (std::regex_search(row, m, kEpoch)) return std::stoi(m[1]) >= 2;
    }
    return false;
  };
  const std::vector<std::string> lines = server_->wait_for_screen("trial", in_second_epoch, 2 * kScreenTimeout);
  const std::string screen = joined(lines);
  ASSERT_TRUE(in_second_epoch(lines)) << "the trial never reached epoch 2:\n" << screen;
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kTall)) << screen;
  for (std::size_t i = 0; i < lines.size(); ++i)
    EXPECT_LE(columns(lines[i]), static_cast<std::size_t>(kWide)) << "row " << i + 1 << " overflows:\n" << screen;

  EXPECT_THAT(lines.front(), ::testing::StartsWith("memsweep watch  slow  "));
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.starts_with("trial " + id + "  attempt 0  ");
  })) << screen;
  EXPECT_THAT(screen, HasSubstr(fmt::format("/{}  elapsed", kEpochs)));

  // The chart: filled with block glyphs, epoch boundaries in its empty cells,
  // the epochs numbered on the x axis.
  std::size_t block_cells = 0;
  for (const std::string& line : lines)
    for (const std::string& character : characters(line)) block_cells += kBlocks.contains(character) ? 1 : 0;
  EXPECT_GT(block_cells, 50U) << "no chart of block glyphs:\n" << screen;
  EXPECT_THAT(screen, HasSubstr(std::string(kEpochBoundary))) << "no epoch boundary:\n" << screen;
  const auto axis = std::find_if(lines.begin(), lines.end(),
                                 [](const std::string& line) { return line.find(kXAxisCorner) != std::string::npos; });
  ASSERT_NE(axis, lines.end()) << "no x axis:\n" << screen;
  EXPECT_THAT(*axis, ::testing::ContainsRegex("1[^0-9].*2")) << "epochs 1 and 2 are not numbered on the axis";

  // The counters: their table, or the line that says none were recorded
  // (perf events may be closed to this machine's processes).
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                          [](const std::string& line) {
                            return std::regex_search(line, std::regex(R"(^counter +now +per second$)")) ||
                                   line.starts_with("counters: none were recorded");
                          }))
      << "no counters section:\n"
      << screen;
  EXPECT_THAT(lines.back(), HasSubstr("q quit"));
}

}  // namespace
}  // namespace memsweep::testing
