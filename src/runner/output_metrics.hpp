#pragma once
// A program trial's own metrics (docs/sweep-file.md, "Metrics"): its
// [programs.NAME] metrics patterns matched against each line of its
// standard output, as the output pump reads it (capped_log.hpp: before the
// log's limit, so a capped log loses no metric). Per metric and epoch the last value matched is kept, and goes to the
// trial's sink as a MetricRow when the epoch ends and at the trial's end.
//
// The epoch a line belongs to: the last value of the metric named
// kEpochMetric when the program has one (matched before the other metrics
// of the same line), else the epoch the events protocol last reported when
// the line was read, else 0.

#include "runner/line_splitter.hpp"

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::runner::detail {

// What scan() reads at most per call: the watch calls it every check
// interval, and must get back to its budget and time checks.
inline constexpr std::size_t kMetricScanBytesPerCall = 256 * 1024;
// What the feed holds at most of output not yet matched: beyond it, the
// oldest is dropped (a note says how much), as the last values are wanted.
inline constexpr std::size_t kMetricFinalScanBytes = 16 * 1024 * 1024;
// Longer lines are not matched: std::regex recurses along the line, and a
// long one could exhaust the stack (a progress bar rewritten with \r is cut at
// its last \r first).
inline constexpr std::size_t kMetricMaxLineBytes = 8 * 1024;

// Pure: the value of a captured text ("123.4", " 5e-3", "+7"), or nullopt
// when it is not a whole decimal number.
std::optional<double> metric_value(std::string_view captured);

// The program's stdout between two threads: the output pump appends what
// it reads, the watch takes it to match. Bounded: a program that writes
// faster than the watch matches loses its oldest unmatched output.
class OutputFeed {
 public:
  void append(std::string_view bytes);
  struct Taken {
    std::string bytes;
    std::uint64_t dropped = 0;  // bytes dropped before these, since the last take
  };
  Taken take(std::size_t most);

 private:
  std::mutex mutex_;
  std::string held_;
  std::uint64_t dropped_ = 0;
};

class OutputMetrics {
 public:
  // `feed`: the program's standard output; outlives this.
  OutputMetrics(OutputFeed& feed, const std::vector<ProgramMetric>& metrics, const FixedString<kTrialIdChars>& trial_id,
                std::int32_t attempt, TrialSink& sink);

  // Matches the lines written since the last call (at most
  // kMetricScanBytesPerCall); `events_epoch`: the events protocol's epoch now.
  void scan(std::int32_t events_epoch);
  // After the program's end and its output pump's: the rest (a last line
  // without its newline included), and every value still held, to the sink.
  void finish(std::int32_t events_epoch);
  // What went wrong, for the trial's message (values that were not
  // numbers, lines too long, output skipped); empty when nothing did.
  std::string problems() const;

 private:
  struct Metric {
    std::string name;
    std::regex pattern;
    bool is_epoch = false;
  };
  struct Held {  // a metric's last value in the epoch
    double value = 0.0;
    double seconds = 0.0;
    std::int32_t matches = 0;
  };
  void match(const OutputFeed::Taken& taken, bool at_end);
  void take_line(std::string_view line);
  void enter_epoch(std::int32_t epoch);
  void flush_epoch();

  OutputFeed& feed_;
  std::vector<Metric> metrics_;
  bool epoch_from_output_ = false;
  FixedString<kTrialIdChars> trial_id_;
  std::int32_t attempt_;
  TrialSink& sink_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  LineSplitter lines_{kMetricMaxLineBytes};
  std::int32_t epoch_ = 0;
  std::map<std::string, Held> held_;  // this epoch's, by metric name
  // Problems, counted once each.
  std::int64_t not_numbers_ = 0;
  std::string first_not_number_;
  std::int64_t long_lines_ = 0;
  std::uint64_t skipped_bytes_ = 0;
};

}  // namespace memsweep::runner::detail
