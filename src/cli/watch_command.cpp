#include "cli/watch_command.hpp"

#include "cli/full_screen.hpp"
#include "cli/results_path.hpp"
#include "memsweep/error.hpp"
#include "watch/followed_file.hpp"
#include "watch/render.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <thread>

namespace memsweep::cli {
namespace {

using watch::FilePoll;
using watch::FollowedFile;
using watch::SweepSnapshot;
using watch::SweepState;

// Width of plain snapshots when stdout is not a terminal and COLUMNS is unset.
constexpr int kPlainWidth = 100;

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

watch::FollowOptions follow_options(const WatchOptions& options) {
  return {options.results_file, options.trial_id, options.wait};
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
  FollowedFile file(follow_options(options));
  const watch::Frame frame{plain_width(), 0, watch::Glyphs::ascii()};
  bool waiting_said = false;
  auto due = std::chrono::steady_clock::now();
  for (bool first = true;; first = false) {
    if (!first) {
      due = next_due(due, options);
      std::this_thread::sleep_until(due);
    }
    const FilePoll poll = file.poll(std::chrono::system_clock::now());
    if (poll.outcome == FilePoll::Outcome::being_changed) continue;
    if (poll.outcome == FilePoll::Outcome::absent) {
      if (!waiting_said) print_lines({waiting_line(options)});
      waiting_said = true;
      continue;
    }
    if (!first) print_lines({""});
    print_lines(render(options, file, poll.snapshot, frame));
    if (options.once || poll.snapshot.state != SweepState::running) return exit_status::kOk;
  }
}

std::string footer(const WatchOptions& options, const std::string& problem) {
  const std::time_t now = std::time(nullptr);
  std::string text =
      fmt::format(" q quit   every {:g} s   {:%H:%M:%S} ", options.interval_seconds, fmt::localtime(now));
  if (!problem.empty()) text += "  " + problem;
  return text;
}

// The lines of one poll; `problem` says a read to be tried again.
std::vector<std::string> full_screen_lines(const WatchOptions& options, FollowedFile& file, const FullScreen& screen,
                                           const watch::Glyphs& glyphs, std::vector<std::string> lines,
                                           std::string& problem) {
  const FilePoll poll = file.poll(std::chrono::system_clock::now());
  switch (poll.outcome) {
    case FilePoll::Outcome::read:
      return render(options, file, poll.snapshot, watch::Frame{screen.width(), screen.height(), glyphs});
    case FilePoll::Outcome::absent: return {waiting_line(options)};
    case FilePoll::Outcome::being_changed: problem = "(the file is being changed: reading it again)"; break;
  }
  return lines;  // the last ones stay while the file is read again
}

int run_full_screen(const WatchOptions& options) {
  FollowedFile file(follow_options(options));
  // A file that is not a memsweep file, or not there without --wait, is
  // said on the ordinary terminal, before the full screen takes it.
  file.poll(std::chrono::system_clock::now());
  FullScreen screen;
  const watch::Glyphs glyphs = watch::Glyphs::for_charset(screen.utf8());
  std::vector<std::string> lines;
  auto due = std::chrono::steady_clock::now();
  do {
    due = next_due(due, options);
    std::string problem;
    lines = full_screen_lines(options, file, screen, glyphs, std::move(lines), problem);
    screen.draw(lines, watch::fit(footer(options, problem), screen.width()));
  } while (!screen.wait_for_quit(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(due - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration::zero()))));
  return exit_status::kOk;
}

}  // namespace

void add_watch_command(CLI::App& app, WatchOptions& options) {
  CLI::App* watch = add_results_command(
      app, "watch",
      "A live view of a running sweep from its results file: progress, running trials with their memory over "
      "time, the nodes' memory; full-screen on a terminal (q or Ctrl-C quits)",
      options.results_file, "The results file (HDF5) a memsweep run is writing");
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
