#include "cli/watch_command.hpp"

#include "cli/full_screen.hpp"
#include "cli/summary_command.hpp"
#include "memsweep/error.hpp"
#include "memsweep/store.hpp"
#include "watch/follower.hpp"
#include "watch/render.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <thread>

namespace memsweep::cli {
namespace {

using watch::SweepFollower;
using watch::SweepSnapshot;
using watch::SweepState;

// Width of plain snapshots when stdout is not a terminal and COLUMNS is unset.
constexpr int kPlainWidth = 100;
// Failed reads in a row before watch gives up: a resume rewrites the file's
// metadata for a moment before it starts SWMR writing again.
constexpr int kMaxFailedReads = 5;

int plain_width() {
  struct winsize size {};
  if (::isatty(STDOUT_FILENO) != 0 && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0)
    return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const int value = std::atoi(columns);
    if (value >= 40) return value;
  }
  return kPlainWidth;
}

std::optional<ino_t> inode_of(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  return status.st_ino;
}

// The file, followed across the lives of its writers. A SWMR reader follows
// the writer that had the file when it opened it; after a resume (a new
// writer) or a --force (a new file under the same name) it opens it again.
class FollowedFile {
 public:
  explicit FollowedFile(const WatchOptions& options) : options_(options) {}

  // nullopt while the file is not there and --wait was given.
  std::optional<SweepSnapshot> poll() {
    const std::optional<ino_t> inode = inode_of(options_.results_file);
    if (!inode) {
      if (!options_.wait)
        throw InputError(
            fmt::format("{}: no such file; has the sweep started? (--wait waits for it)", options_.results_file));
      follower_.reset();
      return std::nullopt;
    }
    const std::optional<bool> live = writer_is_live(options_.results_file);
    const bool writer_came_back = live == true && last_live_ == false;
    last_live_ = live;
    try {
      if (!follower_ || *inode != inode_ || writer_came_back) open(*inode);
      SweepSnapshot snapshot = follower_->update(live, std::chrono::system_clock::now());
      failed_reads_ = 0;
      snapshot.path = options_.results_file;
      if (snapshot.state != SweepState::running) snapshot.summary = summary();
      return snapshot;
    } catch (const StoreError&) {
      follower_.reset();
      if (++failed_reads_ >= kMaxFailedReads || live != true) throw;
      throw ReadRetry{};
    }
  }

  // A read that failed while a writer changed the file: retried at the next poll.
  struct ReadRetry {};

  const SweepFollower* follower() const { return follower_.get(); }

 private:
  // The summary parses the sweep text and plans every trial: made once per
  // set of rows, not at every refresh of a view left open on an ended sweep.
  const std::string& summary() {
    const std::size_t rows = follower_->trial_rows().size();
    if (!summary_ || summary_rows_ != rows) {
      summary_ =
          format_summary({SummaryInput{options_.results_file, follower_->header(), follower_->trial_rows(), {}}});
      summary_rows_ = rows;
    }
    return *summary_;
  }

  void open(ino_t inode) {
    summary_.reset();
    follower_.reset();
    follower_ = std::make_unique<SweepFollower>(options_.results_file, options_.trial_id);
    inode_ = inode;
    if (!options_.trial_id.empty() && !follower_->plans(options_.trial_id))
      throw InputError(
          fmt::format("{}: no trial {} in its sweep (the trial ids are in memsweep summary's and "
                      "memsweep plan's tables)",
                      options_.results_file, options_.trial_id));
  }

  const WatchOptions& options_;
  std::unique_ptr<SweepFollower> follower_;
  ino_t inode_ = 0;
  std::optional<bool> last_live_;
  int failed_reads_ = 0;
  std::optional<std::string> summary_;
  std::size_t summary_rows_ = 0;
};

std::vector<std::string> render(const WatchOptions& options, const FollowedFile& file, const SweepSnapshot& snapshot,
                                const watch::Frame& frame) {
  if (options.trial_id.empty()) return watch::render_overview(snapshot, frame);
  if (const std::optional<watch::TrialView> trial = file.follower()->followed_trial())
    return watch::render_trial(snapshot, *trial, frame);
  std::vector<std::string> lines{
      watch::fit(fmt::format("trial {} has not started yet: no samples or result of it in the file", options.trial_id),
                 frame.width)};
  watch::Frame below = frame;
  if (below.height > 0) --below.height;  // the line above takes one row
  const std::vector<std::string> overview = watch::render_overview(snapshot, below);
  lines.insert(lines.end(), overview.begin(), overview.end());
  return lines;
}

std::string waiting_line(const WatchOptions& options) {
  return fmt::format("waiting for {} to appear (the sweep has not created it yet)", options.results_file);
}

void print_lines(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + '\n';
  fmt::print("{}", text);
  std::fflush(stdout);
}

std::chrono::milliseconds interval_of(const WatchOptions& options) {
  return std::chrono::milliseconds(static_cast<long long>(options.interval_seconds * 1000.0));
}

// Snapshots at a fixed rate, whatever a read costs: the next one is due an
// interval after the previous one was, not after it was shown; a read that
// took longer than the interval does not make a burst of them.
std::chrono::steady_clock::time_point next_due(std::chrono::steady_clock::time_point due, const WatchOptions& options) {
  return std::max(due + interval_of(options), std::chrono::steady_clock::now());
}

// --once, or stdout not a terminal: plain snapshots, one per interval, until
// the sweep is no longer running (then its summary), so that a script or a
// log gets an end.
int run_plain(const WatchOptions& options) {
  FollowedFile file(options);
  const watch::Frame frame{plain_width(), 0, watch::Glyphs::ascii()};
  bool waiting_said = false;
  auto due = std::chrono::steady_clock::now();
  for (bool first = true;; first = false) {
    if (!first) {
      due = next_due(due, options);
      std::this_thread::sleep_until(due);
    }
    std::optional<SweepSnapshot> snapshot;
    try {
      snapshot = file.poll();
    } catch (const FollowedFile::ReadRetry&) {
      continue;
    }
    if (!snapshot) {
      if (!waiting_said) print_lines({waiting_line(options)});
      waiting_said = true;
      continue;
    }
    if (!first) print_lines({""});
    print_lines(render(options, file, *snapshot, frame));
    if (options.once || snapshot->state != SweepState::running) return exit_status::kOk;
  }
}

std::string footer(const WatchOptions& options, const std::string& problem) {
  const std::time_t now = std::time(nullptr);
  std::string text =
      fmt::format(" q quit   every {:g} s   {:%H:%M:%S} ", options.interval_seconds, fmt::localtime(now));
  if (!problem.empty()) text += "  " + problem;
  return text;
}

int run_full_screen(const WatchOptions& options) {
  FollowedFile file(options);
  // A file that is not a memsweep file, or not there without --wait, is
  // said on the ordinary terminal, before the full screen takes it.
  try {
    file.poll();
  } catch (const FollowedFile::ReadRetry&) {
  }
  FullScreen screen;
  const watch::Glyphs glyphs = watch::Glyphs::for_charset(screen.utf8());
  std::vector<std::string> lines;
  auto due = std::chrono::steady_clock::now();
  do {
    due = next_due(due, options);
    std::string problem;
    try {
      if (const std::optional<SweepSnapshot> snapshot = file.poll())
        lines = render(options, file, *snapshot, watch::Frame{screen.width(), screen.height(), glyphs});
      else
        lines = {waiting_line(options)};
    } catch (const FollowedFile::ReadRetry&) {
      problem = "(the file is being changed: reading it again)";
    }
    screen.draw(lines, watch::fit(footer(options, problem), screen.width()));
  } while (!screen.wait_for_quit(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(due - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()))));
  return exit_status::kOk;
}

}  // namespace

void add_watch_command(CLI::App& app, WatchOptions& options) {
  CLI::App* watch = app.add_subcommand(
      "watch",
      "A live view of a running sweep from its results file: progress, running trials with their memory over "
      "time, the nodes' memory; full-screen on a terminal (q or Ctrl-C quits)");
  watch->add_option("results", options.results_file, "The results file (HDF5) a memsweep run is writing")->required();
  watch->add_option("--interval", options.interval_seconds, "Seconds between refreshes")
      ->check(CLI::Range(0.05, 3600.0))
      ->capture_default_str();
  watch->add_option("--trial", options.trial_id,
                    "Show one trial large: RSS and system memory over time with epoch boundaries, and its counters");
  watch->add_flag("--once", options.once, "Print one plain-text snapshot and exit (for scripts)");
  watch->add_flag("--wait", options.wait, "Wait for the results file to appear instead of failing");
}

int run_watch_command(const WatchOptions& options) {
  const bool terminal = ::isatty(STDOUT_FILENO) != 0 && ::isatty(STDIN_FILENO) != 0;
  if (options.once || !terminal) return run_plain(options);
  return run_full_screen(options);
}

}  // namespace memsweep::cli
