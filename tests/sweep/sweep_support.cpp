#include "sweep/sweep_support.hpp"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <thread>

namespace memsweep::testing {
namespace {

// The fake trial's sleep step: how soon it notices its stop flag.
constexpr milliseconds kStep{5};

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

SampleRow fake_sample(const TrialSpec& trial, const TrialContext& context, double t, std::int64_t rss) {
  SampleRow row;
  set_fixed(row.trial_id, trial.id);
  row.attempt = context.attempt;
  row.rank = context.rank;
  row.t = t;
  row.rss = rss;
  return row;
}

}  // namespace

std::vector<TrialSpec> make_trials(std::size_t count) {
  std::vector<TrialSpec> trials;
  for (std::size_t i = 0; i < count; ++i) {
    TrialSpec trial;
    trial.learning_rate = 0.001 * static_cast<double>(i + 1);
    trial.seed = 1000 + i;
    trial.hidden = {16 + static_cast<int>(i)};
    trial.id = trial_id(trial);
    trials.push_back(trial);
  }
  return trials;
}

std::vector<PendingTrial> all_pending(std::size_t count, std::int32_t attempt) {
  std::vector<PendingTrial> pending;
  for (std::size_t i = 0; i < count; ++i) pending.push_back({.index = i, .attempt = attempt});
  return pending;
}

TrialRecord FakeRunner::run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) {
  {
    const std::lock_guard lock(mutex_);
    contexts_.push_back(context);
  }
  const auto found = scripts_.find(trial.id);
  const Script& script = found == scripts_.end() ? default_ : found->second;
  if (script.throws == Throws::runtime_error) throw std::runtime_error("scripted throw");
  if (script.throws == Throws::bad_alloc) throw std::bad_alloc();

  TrialRecord record{trial_row_for(trial, context.attempt), {}};
  TrialRow& row = record.row;
  row.start_time = unix_seconds();
  std::uint64_t sent = 0;
  const std::int64_t peak = script.baseline + script.footprint;

  if (script.burst > 0) {
    std::vector<SampleRow> burst;
    for (std::size_t i = 0; i < script.burst; ++i) burst.push_back(fake_sample(trial, context, 0.0, peak));
    sink.samples(burst);
    sent += burst.size();
  }
  // The script's duration follows the burst: handing a large burst over
  // can take long on a loaded machine, and must not shorten the trial.
  const auto start = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  bool interrupted = false;
  auto next_sample = start;
  while (Clock::now() - start < script.duration) {
    if (context.stop != nullptr && context.stop->load()) {
      interrupted = true;
      break;
    }
    if (script.sample_every.count() > 0 && Clock::now() >= next_sample) {
      const SampleRow sample = fake_sample(trial, context, elapsed(), peak);
      sink.samples(std::span<const SampleRow>(&sample, 1));
      ++sent;
      next_sample += script.sample_every;
    }
    const auto left = script.duration - (Clock::now() - start);
    std::this_thread::sleep_for(std::min<Clock::duration>(kStep, std::max<Clock::duration>(left, {})));
  }
  if (!interrupted) {
    EpochRow epoch;
    set_fixed(epoch.trial_id, trial.id);
    epoch.attempt = context.attempt;
    epoch.epoch = 1;
    epoch.seconds = elapsed();
    sink.epoch(epoch);
  }

  set_fixed(row.status, status_name(interrupted ? TrialStatus::interrupted : script.status));
  set_message(record, interrupted ? std::string("stopped by a signal") : script.message);
  row.end_time = unix_seconds();
  row.wall_seconds = elapsed();
  row.rss_baseline = script.baseline;
  row.rss_peak = peak;
  row.rss_footprint = script.footprint;
  row.samples = sent;
  {
    const std::lock_guard lock(mutex_);
    samples_sent_ += sent;
  }
  return record;
}

std::vector<TrialContext> FakeRunner::contexts() const {
  const std::lock_guard lock(mutex_);
  return contexts_;
}

std::size_t FakeRunner::samples_sent() const {
  const std::lock_guard lock(mutex_);
  return samples_sent_;
}

void MemorySink::samples(std::span<const SampleRow> rows) {
  for (const SampleRow& row : rows) {
    sample_rows.push_back(row);
    arrivals.push_back({Arrival::Kind::samples, get_fixed(row.trial_id), row.attempt, Clock::now()});
  }
}

void MemorySink::epoch(const EpochRow& row) {
  epochs.push_back(row);
  arrivals.push_back({Arrival::Kind::epoch, get_fixed(row.trial_id), row.attempt, Clock::now()});
}

void MemorySink::trial(const TrialRow& row, const std::string& message) {
  ++trial_calls_;
  if (fail_from_ && trial_calls_ >= *fail_from_) throw std::runtime_error("disk full");
  trials.push_back(row);
  messages.push_back(message);
  arrivals.push_back({Arrival::Kind::trial, get_fixed(row.trial_id), row.attempt, Clock::now()});
}

std::string status_of(const TrialRow& row) { return get_fixed(row.status); }

}  // namespace memsweep::testing
