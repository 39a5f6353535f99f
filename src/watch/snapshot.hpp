#pragma once
// What `memsweep watch` shows at one moment: the sweep's progress, each
// running trial with its memory over time, and the nodes' memory. Built from
// the results file by SweepFollower (follower.hpp), drawn by render.hpp.
// Plain data, so that drawing is tested without a file or a terminal.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::watch {

// One memory sample of a trial, as the charts draw it.
struct Point {
  double t = 0.0;              // s since the trial's sampler started
  std::int64_t rss = -1;       // bytes; -1: not measured
  std::int64_t sys_used = -1;  // bytes: the node's total - (free + buffers + cached)
  std::int32_t epoch = 0;      // 0: setup, then 1, 2, ...
};

// A node's memory as the source paper's tool showed it (psutil's
// virtual_memory()): from the newest sample taken on that host.
struct NodeMemory {
  std::string host;
  std::int64_t total = -1;      // bytes; -1: unknown
  std::int64_t available = -1;  // MemAvailable
  std::int64_t used = -1;       // total - (free + buffers + cached)
  std::int64_t active = -1;     // Active
  // psutil's percent: (total - available) / total * 100; nullopt when unknown.
  std::optional<double> used_percent() const;
};

// One trial attempt: a running one in the overview, or the one --trial shows.
struct TrialView {
  std::string trial_id;
  std::int32_t attempt = 0;
  std::int32_t attempts = 1;  // the trial's attempts so far, this one included
  std::int32_t rank = -1;
  std::string host;             // empty: unknown
  std::string hyperparameters;  // one line, e.g. "mnist mlp adam lr=0.001 batch=64 epochs=5 hidden=[128,64]"
  std::string status;           // "running", or the final row's status ("ok", "failed", ...)
  std::string message;          // the row's message, for a trial that did not end ok
  std::int32_t epoch = 0;       // the newest sample's epoch (0: setup)
  std::int32_t epochs = 0;      // epochs asked for; 0: unknown (a program whose file sets none)
  // A user's program: it has epochs only if it reports them (events lines);
  // until then it is "running", its memory its process tree's.
  bool program = false;
  double elapsed_s = 0.0;      // the newest sample's t
  std::int64_t rss_now = -1;   // bytes, the newest sample
  std::int64_t rss_peak = -1;  // bytes, the largest sample
  // GPU memory (schema 7; -1: not measured): the tree's from NVML, else
  // the devices' used memory; the peak is the row's gpu_peak once there.
  std::int64_t gpu_now = -1;
  std::int64_t gpu_peak = -1;
  std::vector<Point> series;  // in time order; may be thinned to a few thousand points
  // The t at which each epoch from 1 on began (the first sample of it):
  // where the charts draw epoch boundaries.
  std::vector<double> epoch_starts;
  // The newest sample's counters, as /samples' counter columns name them;
  // -1: not counted. counter_rates: per second over the trial so far
  // (-1 when unknown).
  std::vector<std::string> counter_names;
  std::vector<std::int64_t> counters;
  std::vector<double> counter_rates;
};

// One search (a configuration at one memory limit, [search]): its bracket
// as its probes narrow it, from the trial rows of the search.
struct SearchView {
  std::int32_t search = 0;                   // TrialRow::search
  std::int64_t limit = -1;                   // bytes
  std::optional<std::int64_t> fits;          // the largest axis value that fit so far
  std::optional<std::int64_t> does_not_fit;  // the smallest that did not
  std::int32_t trials = 0;                   // probes with a result (not those to run again)
  std::string axis;                          // the sweep file's [search] axis (the /searches row's once in)
  // The /searches row's status once the search ended; before, "running"
  // once a probe of it has ended, "waiting" until then (one may be running:
  // a probe's search is known only from its row).
  std::string status = "running";
};

// A sweep with [search] makes its trials as the searches go (docs/search.md):
// what it has done is counted in searches and probes, not in planned trials.
struct SearchProgress {
  std::int64_t searches = 0;         // configurations x limits
  std::int64_t ended = 0;            // with a /searches row
  std::int64_t failed = 0;           // of those, ended `failed`
  std::int64_t probes_finished = 0;  // probe attempts with a row, in every run
  std::int64_t probes_running = 0;
  // The most probes the open searches may still run: each one's max_trials
  // less its probes with a result, less those running. A search usually ends
  // sooner.
  std::int64_t probes_at_most = 0;
};

enum class SweepState {
  running,   // a writer has the file open
  finished,  // no writer, and every planned trial has a final result
  stopped,   // no writer, trials left (stopped by a signal, the time limit, or killed): --resume goes on
};

struct SweepSnapshot {
  std::string path;        // the results file, as given
  std::string sweep_name;  // [sweep] name
  std::string part;        // "dataset=mnist" for one part of a split sweep; empty: the whole sweep
  SweepState state = SweepState::running;
  // Trials counted once each, by their newest attempt:
  // planned = done + failed + running + left. Of a search sweep: searches
  // (done: ended, failed: ended failed, left: not ended) and running probes;
  // `search_progress` says more.
  std::int64_t planned = 0;
  std::int64_t done = 0;     // a final row with status ok
  std::int64_t failed = 0;   // a final row not ok (failed, diverged, over_budget, timeout) or killed
  std::int64_t running = 0;  // samples of an attempt without its row yet, while a writer is live
  std::int64_t left = 0;     // not started, or interrupted and to run again
  double elapsed_s = 0.0;    // since the current run (the last /runs row) started
  std::optional<double> eta_s;
  // The ETA is an upper figure: a search sweep's, as if every open search
  // used all its max_trials (most end sooner).
  bool eta_is_bound = false;
  std::optional<SearchProgress> search_progress;  // a sweep with [search] only
  std::int32_t ranks = 0;                         // of the current run
  std::int32_t workers = 0;
  double file_age_s = -1.0;                // since the file was last written (its mtime); -1: unknown
  std::vector<std::string> counter_names;  // /samples' counter columns
  std::vector<TrialView> running_trials;   // by rank
  std::vector<NodeMemory> nodes;           // by host name
  std::vector<SearchView> searches;        // by search number; empty for a sweep without [search]
  std::string summary;                     // once the sweep ended: what `memsweep summary` prints
};

}  // namespace memsweep::watch
