// Progress lines on rank 0's stderr, e.g.
//   [ 3/40] 5e1f0c2a9b7d ok 12.4s peak 1.50 GiB rank 2 ETA 3m20s
// One line per finished trial, flushed at once so that a job's log follows
// the sweep.

#include "common/duration_text.hpp"
#include "memsweep/byte_size.hpp"
#include "memsweep/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace memsweep {
ProgressReporter::ProgressReporter(std::ostream& out, Verbosity verbosity, std::size_t total_trials, int workers)
    : out_(out), verbosity_(verbosity), total_(total_trials), workers_(std::max(workers, 1)) {}

void ProgressReporter::trial_started(const TrialSpec& trial, int attempt, int rank) {
  if (verbosity_ != Verbosity::verbose) return;
  out_ << fmt::format("start {} attempt {} on rank {}: {}\n", trial.id, attempt, rank, trial.summary_text())
       << std::flush;
}

void ProgressReporter::trial_finished(const TrialRow& row) {
  ++finished_;
  seconds_sum_ += std::max(row.wall_seconds, 0.0);
  const std::string status = get_fixed(row.status);
  // Every other status (failed, diverged, over_budget, timeout, interrupted,
  // killed) is shown with its message, even when quiet.
  const bool ok = status == status_name(TrialStatus::ok);
  if (verbosity_ == Verbosity::quiet && ok) return;

  const int width = static_cast<int>(std::to_string(std::max(total_, finished_)).size());
  std::string line = fmt::format("[{:>{}}/{}] {} {} {:.1f}s", finished_, width, total_, get_fixed(row.trial_id), status,
                                 row.wall_seconds);
  line += row.rss_peak >= 0 ? " peak " + format_byte_size(static_cast<std::uint64_t>(row.rss_peak)) : " peak -";
  line += fmt::format(" rank {}", row.rank);
  if (finished_ >= total_) {
    line += " done in " + format_duration(std::chrono::duration<double>(Clock::now() - start_).count());
  } else if (const std::optional<std::chrono::seconds> left = eta()) {
    line += " ETA " + format_duration(static_cast<double>(left->count()));
  }
  if (!ok) {
    // The row's message column: the message's first bytes, enough for a line.
    const std::string message = one_line_message(get_fixed(row.message), kMessageChars);
    if (!message.empty()) line += ": " + message;
  }
  out_ << line << '\n' << std::flush;
}

void ProgressReporter::note(const std::string& text) {
  if (verbosity_ == Verbosity::quiet) return;
  out_ << text << '\n' << std::flush;
}

std::optional<std::chrono::seconds> ProgressReporter::eta() const {
  if (finished_ == 0) return std::nullopt;
  const double mean = seconds_sum_ / static_cast<double>(finished_);
  const std::size_t left = total_ > finished_ ? total_ - finished_ : 0;
  const double seconds = mean * static_cast<double>(left) / static_cast<double>(workers_);
  return std::chrono::seconds(static_cast<long long>(std::llround(seconds)));
}

}  // namespace memsweep
