#pragma once
// The screens of `memsweep watch`, drawn from a snapshot as lines of UTF-8
// text: the overview of the sweep, and one trial (--trial). No terminal here:
// the terminal layer puts the lines on the screen below its own hint line,
// and --once prints them.

#include "watch/charts.hpp"
#include "watch/snapshot.hpp"

#include <string>
#include <vector>

namespace memsweep::watch {

struct Frame {
  int width = 80;   // columns; no returned line is wider
  int height = 0;   // rows; <= 0: no limit (--once, or stdout not a terminal)
  Glyphs glyphs{};  // Glyphs::for_charset(the terminal's charset is UTF-8)
};

// The lines of a trial's two charts (RSS, the node's used memory) and the
// blank line between them, when the height is not limited.
inline constexpr int kPlainChartHeight = 27;

// The sweep at a glance: what it is, its state (a stopped sweep says how to go
// on), the trial counts and times, the nodes' memory, the running trials with
// a sparkline of their RSS each, and once the sweep ended its summary. With a
// limited height, at most height - 1 lines (the last row is the terminal
// layer's): running trials that do not fit are counted in a line of their own.
std::vector<std::string> render_overview(const SweepSnapshot& snapshot, const Frame& frame);

// One trial: what it is and where it runs, a chart of its RSS and the node's
// used memory over time with the epoch boundaries (most of the height, or
// kPlainChartHeight rows), then its counters now and per second.
std::vector<std::string> render_trial(const SweepSnapshot& snapshot, const TrialView& trial, const Frame& frame);

}  // namespace memsweep::watch
