#pragma once
// Follows a results file while a sweep writes it: each update() reads only
// the rows added since the last one (SWMR, never locking the file, so the
// writer does not wait for it) and builds a SweepSnapshot.
//
// What is running is not written anywhere: an attempt is running when its
// samples are in the file but its trial row is not, while a writer is live.
// Attempts left so by a dead run get `killed` rows from the next --resume
// (docs/results-file.md), so they are never mistaken for running ones.

#include "memsweep/config.hpp"
#include "memsweep/eta.hpp"
#include "memsweep/store.hpp"
#include "watch/snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace memsweep::watch {

// How many points a trial's series keeps: beyond it, neighbouring points are
// merged (keeping the larger RSS, so peaks stay). Enough for any terminal.
inline constexpr std::size_t kMaxSeriesPoints = 4096;

class SweepFollower {
 public:
  // Opens the file (StoreError when it is not a readable memsweep file).
  // `follow_trial`: a trial id whose series is kept even once it ended
  // (--trial); empty: none.
  SweepFollower(const std::filesystem::path& path, std::string follow_trial = {});

  const FileHeader& header() const { return reader_.header(); }

  // Reads what the writer added and says how the sweep stands. `writer_live`:
  // whether a writer has the file (writer_is_live(); nullopt: cannot tell,
  // taken as live until every trial is done). `now`: the wall clock, for
  // elapsed times.
  SweepSnapshot update(std::optional<bool> writer_live, std::chrono::system_clock::time_point now);

  // Whether `id` is one of the file's trials (true when its sweep text could
  // not be read to tell).
  bool plans(const std::string& id) const { return planned_.empty() || planned_.contains(id); }

  // The followed trial's newest attempt: nullopt until it has samples or a row.
  std::optional<TrialView> followed_trial() const;

  // Every trial row read so far (for the summary once the sweep ended).
  const std::vector<TrialRow>& trial_rows() const { return trial_rows_; }
  // The searches that ended (/searches), as of the last update.
  const std::vector<SearchRow>& search_rows() const { return search_rows_; }

 private:
  using AttemptKey = std::pair<std::string, std::int32_t>;  // (trial id, attempt)

  struct Attempt {
    std::int32_t rank = -1;
    std::vector<Point> series;
    std::vector<double> epoch_starts;
    std::int64_t peak_rss = -1;
    std::int64_t peak_gpu = -1;  // the largest gpu_tree_used, else gpu_used (schema 7)
    SampleRow last{};
    bool has_samples = false;
  };

  static std::int64_t gpu_of(const SampleRow& row);
  void read_new_rows();
  void add_trial_row(const TrialRow& row);
  void add_sample(const SampleRow& row);
  void add_probe(const TrialRow& row);
  std::vector<SearchView> search_views() const;
  bool keeps_series(const AttemptKey& key) const;
  TrialView view_of(const AttemptKey& key, const Attempt& attempt) const;
  std::string host_of_rank(std::int32_t rank) const;
  std::vector<NodeMemory> node_memory() const;
  TrialCost cost_of(const std::string& id, const ExampleLimits& limits) const;
  // update()'s steps.
  void add_running_trials(SweepSnapshot& snapshot) const;
  // Counts done, failed, running and left; the left ones' ids, in plan order.
  std::vector<std::string> count_trials(SweepSnapshot& snapshot) const;
  void count_trial(const std::string& id, const std::set<std::string>& running_ids, SweepSnapshot& snapshot,
                   std::vector<std::string>& left_ids) const;
  // A search sweep's counts (snapshot.hpp, SearchProgress).
  void count_searches(SweepSnapshot& snapshot) const;
  static SweepState state_of(const SweepSnapshot& snapshot, std::optional<bool> writer_live);
  void add_times(SweepSnapshot& snapshot, std::chrono::system_clock::time_point now) const;
  std::optional<double> eta_of(const SweepSnapshot& snapshot, const std::vector<std::string>& left_ids,
                               std::chrono::system_clock::time_point now);
  std::optional<double> search_eta_of(const SweepSnapshot& snapshot, std::chrono::system_clock::time_point now);
  // A trial's time limit in this run (the run's --trial-timeout or its own
  // `timeout`, the smaller); nullopt: none, or not known.
  std::optional<double> time_limit_of(const TrialSpec* trial) const;
  // What a running probe is: from an earlier attempt's row when it has
  // one (its search and value), else only that it is a probe.
  std::string probe_text(const std::string& id) const;
  std::int64_t searches_planned() const;

  std::filesystem::path path_;
  std::string follow_trial_;
  ResultReader reader_;
  std::map<std::string, TrialSpec> planned_;  // by trial id, from the sweep text in the file (its part only)
  std::vector<std::string> planned_order_;
  std::uint64_t trials_read_ = 0;
  std::uint64_t samples_read_ = 0;
  std::vector<TrialRow> trial_rows_;
  std::map<AttemptKey, std::size_t> row_of_attempt_;  // index in trial_rows_
  StandingRows standing_;                             // the row that stands for each trial (indices into trial_rows_)
  std::map<AttemptKey, Attempt> attempts_;            // with samples and no row yet, and the followed trial's
  std::map<std::int32_t, SampleRow> newest_sample_of_rank_;
  std::vector<RunRow> runs_;
  std::map<std::int32_t, SearchView> searches_;  // by search number, from the probes' rows
  std::vector<SearchRow> search_rows_;
  SweepEta eta_;
  // [search] of the sweep text: planned_ then holds its configurations, and
  // search s is configuration s / limits, limit s % limits.
  std::optional<SearchSpec> search_;
  bool all_programs_ = false;  // every configuration a user's program
};

}  // namespace memsweep::watch
