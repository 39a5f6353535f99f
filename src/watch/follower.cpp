#include "watch/follower.hpp"

#include "memsweep/error.hpp"
#include "memsweep/search.hpp"
#include "memsweep/sweep_split.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string_view>

namespace memsweep::watch {
namespace {

// Rows read per call: a first update of a long finished sweep reads its
// millions of samples in blocks rather than at once.
constexpr std::uint64_t kReadBlockRows = 65536;

std::vector<std::string> split_hosts(const std::string& joined) {
  std::vector<std::string> hosts;
  std::istringstream in(joined);
  for (std::string host; std::getline(in, host, ',');) hosts.push_back(host);
  return hosts;
}

// Halves a series by merging neighbours, keeping the larger RSS of each
// pair so that the peak survives any number of halvings.
void thin(std::vector<Point>& series) {
  std::vector<Point> merged;
  merged.reserve(series.size() / 2 + 1);
  for (std::size_t i = 0; i < series.size(); i += 2) {
    Point point = series[i];
    if (i + 1 < series.size()) {
      const Point& next = series[i + 1];
      point.rss = std::max(point.rss, next.rss);
      point.sys_used = std::max(point.sys_used, next.sys_used);
      point.epoch = next.epoch;
    }
    merged.push_back(point);
  }
  series = std::move(merged);
}

bool is_final_row(const TrialRow& row) {
  const std::optional<TrialStatus> status = parse_status(get_fixed(row.status));
  return status && is_final(*status);
}

double seconds_since_epoch(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(time.time_since_epoch()).count();
}

// stat() rather than std::filesystem: its file clock has no conversion to
// the system clock before GCC 13.
std::optional<double> file_mtime(const std::filesystem::path& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0) return std::nullopt;
  return static_cast<double>(status.st_mtim.tv_sec) + 1e-9 * static_cast<double>(status.st_mtim.tv_nsec);
}

}  // namespace

SweepFollower::SweepFollower(const std::filesystem::path& path, std::string follow_trial)
    : path_(path), follow_trial_(std::move(follow_trial)), reader_(path) {
  // The sweep's own trials, to name what runs and count what is left. A file
  // whose sweep text no longer parses (written by another memsweep) still
  // shows its rows, with the planned count from the header; so does a sweep
  // too large to hold every trial of (docs/sweep.md, "Large sweeps").
  try {
    SweepSpec sweep = parse_sweep(header().sweep_text, header().sweep_file);
    if (!header().part.empty()) sweep = select_named_part(sweep, header().part);
    if (sweep.trials.size() > kWalkedTrials) return;
    search_ = sweep.search;
    all_programs_ = sweep.trials.size() > 0;
    for (TrialSpec trial : sweep.trials) {
      all_programs_ = all_programs_ && trial.program.has_value();
      planned_order_.push_back(trial.id);
      planned_.emplace(trial.id, std::move(trial));
    }
  } catch (const InputError&) {
    planned_.clear();
    planned_order_.clear();
    search_.reset();
  }
}

void SweepFollower::read_new_rows() {
  reader_.refresh();
  runs_ = reader_.runs();
  search_rows_ = reader_.searches();  // a row per search that ended: few
  for (std::uint64_t total = reader_.trial_count(); trials_read_ < total;) {
    const std::vector<TrialRow> rows = reader_.trials(trials_read_, kReadBlockRows);
    if (rows.empty()) break;
    for (const TrialRow& row : rows) add_trial_row(row);
    trials_read_ += rows.size();
  }
  for (std::uint64_t total = reader_.sample_count(); samples_read_ < total;) {
    const std::vector<SampleRow> rows = reader_.samples(samples_read_, kReadBlockRows);
    if (rows.empty()) break;
    for (const SampleRow& row : rows) add_sample(row);
    samples_read_ += rows.size();
  }
}

void SweepFollower::add_trial_row(const TrialRow& row) {
  const AttemptKey key{get_fixed(row.trial_id), row.attempt};
  const std::size_t index = trial_rows_.size();
  trial_rows_.push_back(row);
  row_of_attempt_[key] = index;
  standing_.add(trial_rows_, index);  // the row that stands for its trial, as `summary` shows it
  if (!keeps_series(key)) attempts_.erase(key);
  if (row.search >= 0) add_probe(row);
}

void SweepFollower::add_probe(const TrialRow& row) {
  SearchView& view = searches_[row.search];
  view.search = row.search;
  view.limit = row.search_limit;
  // The same judgement the scheduler makes of the probe (search.hpp).
  switch (probe_outcome(row)) {
    case ProbeOutcome::fits: view.fits = std::max(view.fits.value_or(row.axis_value), row.axis_value); break;
    case ProbeOutcome::does_not_fit:
      view.does_not_fit = std::min(view.does_not_fit.value_or(row.axis_value), row.axis_value);
      break;
    case ProbeOutcome::failed: break;
    case ProbeOutcome::retry: return;  // not a result: the same probe runs again
  }
  ++view.trials;
}

std::int64_t SweepFollower::searches_planned() const {
  return search_ ? static_cast<std::int64_t>(planned_order_.size() * search_->limits.size()) : 0;
}

std::vector<SearchView> SweepFollower::search_views() const {
  // Every search of the sweep file from the start, its axis and limit
  // known before any probe ends.
  std::map<std::int32_t, SearchView> views;
  for (std::int64_t search = 0; search < searches_planned(); ++search) {
    SearchView& view = views[static_cast<std::int32_t>(search)];
    view.search = static_cast<std::int32_t>(search);
    view.limit = static_cast<std::int64_t>(search_->limits[static_cast<std::size_t>(search) % search_->limits.size()]);
    view.axis = search_->axis;
    view.status = "waiting";
  }
  for (const auto& [search, probed] : searches_) {
    SearchView& view = views[search];
    const std::string axis = view.axis;
    view = probed;
    if (view.axis.empty()) view.axis = axis;
  }
  // An ended search's own row says what it found, and how it ended.
  for (const SearchRow& row : search_rows_) {
    SearchView& view = views[row.search];
    view.search = row.search;
    view.limit = row.limit;
    view.axis = get_fixed(row.axis);
    view.status = get_fixed(row.status);
  }
  std::vector<SearchView> ordered;
  for (auto& [search, view] : views) ordered.push_back(std::move(view));
  return ordered;
}

bool SweepFollower::keeps_series(const AttemptKey& key) const {
  return key.first == follow_trial_ || !row_of_attempt_.contains(key);
}

void SweepFollower::add_sample(const SampleRow& row) {
  newest_sample_of_rank_[row.rank] = row;
  const AttemptKey key{get_fixed(row.trial_id), row.attempt};
  if (key.first.empty() || !keeps_series(key)) return;
  Attempt& attempt = attempts_[key];
  attempt.rank = row.rank;
  if (row.epoch > 0 && (attempt.series.empty() || attempt.series.back().epoch < row.epoch))
    attempt.epoch_starts.push_back(row.t);
  attempt.series.push_back({row.t, row.rss, row.sys_used, row.epoch});
  if (attempt.series.size() > kMaxSeriesPoints) thin(attempt.series);
  attempt.peak_rss = std::max(attempt.peak_rss, row.rss);
  attempt.peak_gpu = std::max(attempt.peak_gpu, gpu_of(row));
  attempt.last = row;
  attempt.has_samples = true;
}

std::string SweepFollower::host_of_rank(std::int32_t rank) const {
  std::vector<std::string> hosts = runs_.empty() ? header().hosts : split_hosts(get_fixed(runs_.back().hosts));
  if (rank < 0 || static_cast<std::size_t>(rank) >= hosts.size()) return {};
  return hosts[static_cast<std::size_t>(rank)];
}

std::vector<NodeMemory> SweepFollower::node_memory() const {
  // The newest sample of each host: ranks on one node see the same memory.
  std::map<std::string, NodeMemory> by_host;
  for (const auto& [rank, sample] : newest_sample_of_rank_) {
    const std::string host = host_of_rank(rank);
    NodeMemory node{host.empty() ? "rank " + std::to_string(rank) : host, sample.sys_total, sample.sys_available,
                    sample.sys_used, sample.sys_active};
    by_host[node.host] = node;
  }
  std::vector<NodeMemory> nodes;
  for (auto& [host, node] : by_host) nodes.push_back(std::move(node));
  return nodes;
}

// A sample's GPU memory as watch shows it: the trial tree's (NVML per
// process), else the devices' used memory; -1: not measured.
std::int64_t SweepFollower::gpu_of(const SampleRow& row) {
  return row.gpu_tree_used >= 0 ? row.gpu_tree_used : row.gpu_used;
}

TrialView SweepFollower::view_of(const AttemptKey& key, const Attempt& attempt) const {
  TrialView view;
  view.trial_id = key.first;
  view.attempt = key.second;
  view.rank = attempt.rank;
  view.status = "running";
  if (const StandingRows::Trial* trial = standing_.find(key.first))
    view.attempts = trial->attempts + (row_of_attempt_.contains(key) ? 0 : 1);
  if (const auto row = row_of_attempt_.find(key); row != row_of_attempt_.end()) {
    const TrialRow& trial = trial_rows_[row->second];
    view.status = get_fixed(trial.status);
    view.message = get_fixed(trial.message);
    view.rank = trial.rank;
    view.host = get_fixed(trial.host);
    const std::string trainer = get_fixed(trial.trainer);
    view.program = !trainer.empty() && trainer != kBuiltinTrainer;  // a row written before trainers: memsweep's
    view.gpu_peak = trial.gpu_peak;
  }
  if (view.host.empty()) view.host = host_of_rank(view.rank);
  if (const auto spec = planned_.find(key.first); spec != planned_.end()) {
    view.hyperparameters = spec->second.summary_text();
    view.program = spec->second.program.has_value();
    view.epochs = spec->second.shows_field("epochs") ? spec->second.epochs : 0;
  } else if (search_) {
    // A search's probe: made as the search goes, so in no plan. Its epochs
    // (probe_epochs or the configuration's) are known only from its row.
    view.hyperparameters = probe_text(key.first);
    view.program = all_programs_;
  }
  view.series = attempt.series;
  view.epoch_starts = attempt.epoch_starts;
  view.rss_peak = attempt.peak_rss;
  if (attempt.has_samples) {
    view.epoch = attempt.last.epoch;
    view.elapsed_s = attempt.last.t;
    view.rss_now = attempt.last.rss;
    view.gpu_now = gpu_of(attempt.last);
  }
  view.gpu_peak = std::max(view.gpu_peak, attempt.peak_gpu);
  view.counter_names = header().counter_columns;
  for (std::size_t i = 0; i < view.counter_names.size() && i < attempt.last.counters.size(); ++i) {
    const std::int64_t value = attempt.has_samples ? attempt.last.counters[i] : -1;
    view.counters.push_back(value);
    view.counter_rates.push_back(value >= 0 && view.elapsed_s > 0 ? static_cast<double>(value) / view.elapsed_s : -1.0);
  }
  return view;
}

std::optional<TrialView> SweepFollower::followed_trial() const {
  if (follow_trial_.empty()) return std::nullopt;
  const Attempt* newest = nullptr;
  AttemptKey newest_key;
  for (const auto& [key, attempt] : attempts_) {
    if (key.first != follow_trial_) continue;
    if (newest == nullptr || key.second > newest_key.second) {
      newest = &attempt;
      newest_key = key;
    }
  }
  if (newest != nullptr) return view_of(newest_key, *newest);
  // A row without samples (e.g. a trial that failed before its first one).
  if (const StandingRows::Trial* trial = standing_.find(follow_trial_))
    return view_of({follow_trial_, trial_rows_[trial->row].attempt}, Attempt{});
  return std::nullopt;
}

TrialCost SweepFollower::cost_of(const std::string& id, const ExampleLimits& limits) const {
  if (const auto spec = planned_.find(id); spec != planned_.end()) return trial_cost(spec->second, limits);
  // A sweep text that does not parse: every trial taken as alike.
  TrialCost alike;
  alike.trial_id = id;
  alike.work = 1.0;
  return alike;
}

SweepSnapshot SweepFollower::update(std::optional<bool> writer_live, std::chrono::system_clock::time_point now) {
  read_new_rows();
  SweepSnapshot snapshot;
  snapshot.sweep_name = header().sweep_name;
  snapshot.part = header().part;
  snapshot.counter_names = header().counter_columns;
  snapshot.ranks = runs_.empty() ? header().ranks : runs_.back().ranks;
  snapshot.workers = snapshot.ranks > 1 ? snapshot.ranks - 1 : 1;
  // Every trial counted once: running first, then its row that stands for it.
  if (writer_live.value_or(true)) add_running_trials(snapshot);
  std::vector<std::string> left_ids;
  if (search_)
    count_searches(snapshot);
  else
    left_ids = count_trials(snapshot);
  snapshot.state = state_of(snapshot, writer_live);
  add_times(snapshot, now);
  if (snapshot.state == SweepState::running && !runs_.empty()) {
    snapshot.eta_s = search_ ? search_eta_of(snapshot, now) : eta_of(snapshot, left_ids, now);
    snapshot.eta_is_bound = search_.has_value() && snapshot.eta_s.has_value();
  }
  snapshot.nodes = node_memory();
  snapshot.searches = search_views();
  return snapshot;
}

void SweepFollower::add_running_trials(SweepSnapshot& snapshot) const {
  for (const auto& [key, attempt] : attempts_) {
    if (!attempt.has_samples || row_of_attempt_.contains(key)) continue;
    // A search's probes are in no plan: any attempt without its row runs.
    if (!search_ && !planned_.empty() && !planned_.contains(key.first)) continue;
    if (const StandingRows::Trial* trial = standing_.find(key.first); trial && is_final_row(trial_rows_[trial->row]))
      continue;  // its result is in: these samples were left by an earlier run
    snapshot.running_trials.push_back(view_of(key, attempt));
  }
  std::sort(snapshot.running_trials.begin(), snapshot.running_trials.end(),
            [](const TrialView& a, const TrialView& b) { return a.rank < b.rank; });
}

void SweepFollower::count_trial(const std::string& id, const std::set<std::string>& running_ids,
                                SweepSnapshot& snapshot, std::vector<std::string>& left_ids) const {
  if (running_ids.contains(id)) {
    ++snapshot.running;
    return;
  }
  const StandingRows::Trial* trial = standing_.find(id);
  const std::optional<TrialStatus> status =
      trial ? parse_status(get_fixed(trial_rows_[trial->row].status)) : std::nullopt;
  if (status == TrialStatus::ok) {
    ++snapshot.done;
  } else if (status && (is_final(*status) || *status == TrialStatus::killed)) {
    ++snapshot.failed;  // a killed trial runs again only with --retry-killed
  } else {
    ++snapshot.left;
    left_ids.push_back(id);
  }
}

std::vector<std::string> SweepFollower::count_trials(SweepSnapshot& snapshot) const {
  std::set<std::string> running_ids;
  for (const TrialView& trial : snapshot.running_trials) running_ids.insert(trial.trial_id);
  std::vector<std::string> left_ids;  // in plan order: the scheduler's
  if (!planned_order_.empty()) {
    for (const std::string& id : planned_order_) count_trial(id, running_ids, snapshot, left_ids);
    snapshot.planned = static_cast<std::int64_t>(planned_order_.size());
    return left_ids;
  }
  for (const auto& [id, trial] : standing_.by_id()) count_trial(id, running_ids, snapshot, left_ids);
  for (const std::string& id : running_ids)
    if (standing_.find(id) == nullptr) ++snapshot.running;
  snapshot.planned = std::max<std::int64_t>(header().planned_trials,
                                            snapshot.done + snapshot.failed + snapshot.running + snapshot.left);
  snapshot.left = snapshot.planned - snapshot.done - snapshot.failed - snapshot.running;
  return left_ids;
}

SweepState SweepFollower::state_of(const SweepSnapshot& snapshot, std::optional<bool> writer_live) {
  const bool complete = snapshot.left == 0 && snapshot.running == 0;
  if (writer_live == true || (!writer_live && !complete)) return SweepState::running;
  return complete ? SweepState::finished : SweepState::stopped;
}

void SweepFollower::add_times(SweepSnapshot& snapshot, std::chrono::system_clock::time_point now) const {
  const std::optional<double> written = file_mtime(path_);
  const double now_s = seconds_since_epoch(now);
  if (written) snapshot.file_age_s = std::max(0.0, now_s - *written);
  if (!runs_.empty()) {
    const double start = runs_.back().start_time;
    const double end = snapshot.state == SweepState::running || !written ? now_s : *written;
    snapshot.elapsed_s = std::max(0.0, end - start);
  }
}

std::optional<double> SweepFollower::eta_of(const SweepSnapshot& snapshot, const std::vector<std::string>& left_ids,
                                            std::chrono::system_clock::time_point now) {
  // From this run's final rows, as the progress lines see the sweep.
  const RunRow& run = runs_.back();
  const ExampleLimits limits{static_cast<std::size_t>(run.max_train_examples),
                             static_cast<std::size_t>(run.max_test_examples)};
  std::vector<FinishedTrial> finished;
  for (const TrialRow& row : trial_rows_)
    if (row.run == run.run && is_final_row(row))
      finished.push_back(finished_trial(cost_of(get_fixed(row.trial_id), limits), row));
  std::vector<RunningTrial> running;
  for (const TrialView& trial : snapshot.running_trials)
    running.push_back({cost_of(trial.trial_id, limits), trial.elapsed_s});
  std::vector<TrialCost> waiting;
  for (const std::string& id : left_ids) waiting.push_back(cost_of(id, limits));
  // Without the sweep's text the left ones have no ids: alike, unnamed.
  for (auto i = static_cast<std::int64_t>(left_ids.size()); i < snapshot.left; ++i)
    waiting.push_back(cost_of({}, limits));
  const std::optional<double> seconds =
      eta_.seconds_left(finished, running, waiting, snapshot.workers, seconds_since_epoch(now));
  // Never past what the trials' time limits allow, where every trial has one.
  std::vector<TimeLimited> running_limits;
  for (const TrialView& trial : snapshot.running_trials) {
    const auto spec = planned_.find(trial.trial_id);
    running_limits.push_back({time_limit_of(spec == planned_.end() ? nullptr : &spec->second), trial.elapsed_s});
  }
  std::vector<TimeLimited> waiting_limits;
  for (const TrialCost& cost : waiting) {
    const auto spec = planned_.find(cost.trial_id);
    waiting_limits.push_back({time_limit_of(spec == planned_.end() ? nullptr : &spec->second), 0.0});
  }
  return capped_by_time_limits(seconds, running_limits, waiting_limits, snapshot.workers);
}

std::optional<double> SweepFollower::time_limit_of(const TrialSpec* trial) const {
  std::optional<double> limit;
  if (!runs_.empty() && runs_.back().trial_timeout > 0.0) limit = runs_.back().trial_timeout;
  if (trial == nullptr) return planned_.empty() ? limit : std::nullopt;  // an unknown trial: its own limit unknown
  if (trial->timeout_seconds) limit = std::min(limit.value_or(*trial->timeout_seconds), *trial->timeout_seconds);
  return limit;
}

std::string SweepFollower::probe_text(const std::string& id) const {
  // A probe run again (its earlier attempt interrupted) has a row that says what it is.
  if (const StandingRows::Trial* trial = standing_.find(id)) {
    const TrialRow& row = trial_rows_[trial->row];
    if (row.search >= 0)
      return fmt::format("search {} probe {}: {}={}", row.search, row.probe, search_->axis, row.axis_value);
  }
  return "a search's probe (its search and value come with its row)";
}

void SweepFollower::count_searches(SweepSnapshot& snapshot) const {
  SearchProgress progress;
  progress.searches = searches_planned();
  std::set<std::int32_t> ended;
  for (const SearchRow& row : search_rows_)
    if (ended.insert(row.search).second && get_fixed(row.status) == search_status::kFailed) ++progress.failed;
  progress.ended = static_cast<std::int64_t>(ended.size());
  for (const TrialRow& row : trial_rows_) progress.probes_finished += row.search >= 0 ? 1 : 0;
  progress.probes_running = static_cast<std::int64_t>(snapshot.running_trials.size());
  std::int64_t possible = 0;
  for (std::int64_t search = 0; search < progress.searches; ++search) {
    if (ended.contains(static_cast<std::int32_t>(search))) continue;
    const auto probed = searches_.find(static_cast<std::int32_t>(search));
    const std::int64_t used = probed == searches_.end() ? 0 : probed->second.trials;
    possible += std::max<std::int64_t>(search_->max_trials - used, 0);
  }
  progress.probes_at_most = std::max<std::int64_t>(possible - progress.probes_running, 0);
  snapshot.planned = progress.searches;
  snapshot.failed = progress.failed;
  snapshot.done = progress.ended - progress.failed;
  snapshot.left = std::max<std::int64_t>(progress.searches - progress.ended, 0);
  snapshot.running = progress.probes_running;
  snapshot.search_progress = progress;
}

// A search sweep's probes are made as its searches go: how many are left
// is not known, only how many at most (each open search's max_trials less
// its results). The ETA is then that many probes, each taking what this
// run's probes of its search took on average (of every search, before one
// of its own ended), handed out round the open searches as the board does:
// an upper figure, shown as one ("ETA at most ..."). A probe's FLOPs would
// say nothing here: the axis changes them, and the search is what is alike.
std::optional<double> SweepFollower::search_eta_of(const SweepSnapshot& snapshot,
                                                   std::chrono::system_clock::time_point now) {
  const auto probe_cost = [](std::int64_t search) {
    TrialCost cost;
    cost.trainer = cost.kind = "search probe";
    cost.work = 1.0;
    cost.configuration = search >= 0 ? fmt::format("search {}", search) : std::string("search ?");
    return cost;
  };
  const RunRow& run = runs_.back();
  std::vector<FinishedTrial> finished;
  for (const TrialRow& row : trial_rows_) {
    if (row.run != run.run || row.search < 0 || !is_final_row(row)) continue;
    // Every final probe took a probe's time, whether it fit or not.
    FinishedTrial trial;
    trial.cost = probe_cost(row.search);
    trial.wall_seconds = row.wall_seconds;
    trial.start_seconds = row.start_seconds;
    trial.ran_to_end = true;
    finished.push_back(std::move(trial));
  }
  const SearchProgress& progress = *snapshot.search_progress;
  std::vector<RunningTrial> running;
  for (const TrialView& trial : snapshot.running_trials) running.push_back({probe_cost(-1), trial.elapsed_s});
  // Round the open searches, as the board hands their probes out.
  std::map<std::int64_t, std::int64_t> possible;
  std::set<std::int32_t> ended;
  for (const SearchRow& row : search_rows_) ended.insert(row.search);
  for (std::int64_t search = 0; search < progress.searches; ++search) {
    if (ended.contains(static_cast<std::int32_t>(search))) continue;
    const auto probed = searches_.find(static_cast<std::int32_t>(search));
    possible[search] = search_->max_trials - (probed == searches_.end() ? 0 : probed->second.trials);
  }
  std::vector<TrialCost> waiting;
  for (std::int64_t round = 0; round < search_->max_trials; ++round)
    for (const auto& [search, count] : possible)
      if (round < count) waiting.push_back(probe_cost(search));
  waiting.resize(static_cast<std::size_t>(progress.probes_at_most));  // those running are among them
  const std::optional<double> seconds =
      eta_.seconds_left(finished, running, waiting, snapshot.workers, seconds_since_epoch(now));
  // Every probe's time limit, where the run or every configuration has one.
  std::optional<double> limit;
  for (const std::string& id : planned_order_) {
    const std::optional<double> own = time_limit_of(&planned_.at(id));
    if (!own) {
      limit.reset();
      break;
    }
    limit = std::max(limit.value_or(*own), *own);
  }
  std::vector<TimeLimited> running_limits;
  for (const RunningTrial& trial : running) running_limits.push_back({limit, trial.elapsed_seconds});
  const std::vector<TimeLimited> waiting_limits(waiting.size(), TimeLimited{limit, 0.0});
  return capped_by_time_limits(seconds, running_limits, waiting_limits, snapshot.workers);
}

}  // namespace memsweep::watch
