#include "runner/trial_monitor.hpp"

#include "runner/budget.hpp"

#include <pthread.h>

namespace memsweep::runner_detail {
namespace {

std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---- SerialSink ---------------------------------------------------------------

template <typename Call>
void SerialSink::guarded(Call&& call) noexcept {
  const std::lock_guard lock(mutex_);
  if (error_) return;
  try {
    call();
  } catch (...) {
    error_ = std::current_exception();
    stop_trial_.store(true, std::memory_order_relaxed);
  }
}

void SerialSink::samples(std::span<const SampleRow> rows) noexcept {
  guarded([&] { sink_.samples(rows); });
}

void SerialSink::epoch(const EpochRow& row) noexcept {
  guarded([&] { sink_.epoch(row); });
}

void SerialSink::rethrow_if_failed() {
  const std::lock_guard lock(mutex_);
  if (error_) std::rethrow_exception(error_);
}

// ---- TrialMonitor ---------------------------------------------------------------

TrialMonitor::TrialMonitor(MonitorSettings settings, Sampler& sampler, SerialSink& sink, MemoryProbe& probe,
                           std::atomic<bool>& stop_trial, const std::atomic<int>& epoch)
    : settings_(std::move(settings)),
      sampler_(sampler),
      sink_(sink),
      probe_(probe),
      stop_trial_(stop_trial),
      epoch_(epoch),
      start_ns_(steady_now_ns()) {
  // Allocated here, before the trial's baseline, and reused for every chunk.
  rows_.reserve(kSamplesPerChunk);
  thread_ = std::thread(&TrialMonitor::loop, this);
}

TrialMonitor::~TrialMonitor() { join(); }

void TrialMonitor::trial_started() noexcept { start_ns_.store(steady_now_ns(), std::memory_order_relaxed); }

void TrialMonitor::finish() {
  if (finished_) return;
  join();
  finished_ = true;
  forward_chunks();  // the thread is gone: this is now the sampler's one consumer
}

void TrialMonitor::join() noexcept {
  {
    const std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TrialMonitor::loop() {
  ::pthread_setname_np(::pthread_self(), "memsweep-monitor");
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, settings_.check_interval, [&] { return quit_; })) {
    lock.unlock();
    if (settings_.external_stop != nullptr && settings_.external_stop->load(std::memory_order_relaxed))
      stop_trial_.store(true, std::memory_order_relaxed);
    check_budget();
    forward_chunks();
    lock.lock();
  }
}

void TrialMonitor::check_budget() {
  if (!settings_.budget_bytes || budget_message_) return;
  ProcessMemory memory;
  if (!probe_.read_process(memory) || !passes_budget(memory.rss_bytes, *settings_.budget_bytes)) return;
  const double seconds = static_cast<double>(steady_now_ns() - start_ns_.load(std::memory_order_relaxed)) * 1e-9;
  budget_message_ = over_budget_while_running(memory.rss_bytes, *settings_.budget_bytes, seconds,
                                              epoch_.load(std::memory_order_relaxed));
  stop_trial_.store(true, std::memory_order_relaxed);
}

void TrialMonitor::forward_chunks() {
  sampler_.drain([&](const SampleChunk& chunk) {
    rows_.clear();
    for (const Sample& sample : chunk.view()) {
      SampleRow row = sample_row(sample, settings_.counter_sources);
      row.trial_id = settings_.trial_id;
      row.attempt = settings_.attempt;
      row.rank = settings_.rank;
      rows_.push_back(row);
    }
    sink_.samples(rows_);
  });
}

}  // namespace memsweep::runner_detail
