// The sampling threads: a tick thread on absolute deadlines of the
// monotonic clock, and a slower PSS thread, so that a smaps_rollup read
// (milliseconds, under the process's memory lock) never delays a tick.

#include "sampler/gpu/gpu_memory.hpp"
#include "sampler/region.hpp"
#include "sampler/sample_buffer.hpp"

#include <fmt/format.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <stdexcept>

namespace memsweep {
namespace {

constexpr std::int64_t kNsPerSecond = 1'000'000'000;
constexpr std::int64_t kNsPerMs = 1'000'000;
// The kernel adds the thread's timer slack (50 us by default) to every
// sleep; 1 ns asks for wake-ups on time.
constexpr unsigned long kTimerSlackNs = 1;
// A PSS read costs ~0.1 ms for a small process and ~15 ms at 1 GiB resident
// (docs/sampler.md), holding the memory lock: the PSS thread waits at least
// this many times its last read's cost, so it stays under 1% of a core.
constexpr std::int64_t kPssCostSpacing = 100;

std::int64_t now_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * kNsPerSecond + ts.tv_nsec;
}

void set_max(std::atomic<std::int64_t>& max, std::int64_t value) noexcept {
  if (value > max.load(std::memory_order_relaxed)) max.store(value, std::memory_order_relaxed);
}

void name_this_thread(const char* name) noexcept {
  ::pthread_setname_np(::pthread_self(), name);
  ::prctl(PR_SET_TIMERSLACK, kTimerSlackNs);
}

}  // namespace

struct Sampler::Shared {
  // A futex word: the sampling threads sleep on it until their deadline, so
  // that stop() wakes them at once (a PSS thread may be asleep for seconds).
  std::atomic<std::uint32_t> stop{0};
  static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t));
  std::atomic<bool> go{false};
  std::atomic<bool> abandoned{false};  // start() failed, or a held region ended, before the run began
  std::atomic<int> ready{0};
  std::atomic<int> tick_tid{0};
  std::atomic<int> pss_tid{0};
  std::atomic<bool> first_taken{false};  // the run's first sample is in the buffer
  std::atomic<int> gpu_tid{0};
  std::int64_t t0_ns = 0;  // written before `go`
  bool counters_active = false;

  std::atomic<std::int64_t> pss_bytes{-1};
  std::atomic<std::uint64_t> pss_sequence{0};
  std::atomic<std::int64_t> gpu_tree_bytes{-1};
  std::atomic<std::uint64_t> gpu_tree_reads{0};
  std::atomic<std::int64_t> gpu_tree_cost_max{0};
  // Written by the tick thread and the GPU thread, one each; read after
  // they are joined.
  gpu::GpuTrialPeak gpu_device_peak;
  gpu::GpuTrialPeak gpu_tree_peak;

  // Statistics: one writer each, any reader.
  std::atomic<std::uint64_t> samples{0};
  std::atomic<std::uint64_t> missed_ticks{0};
  std::atomic<std::uint64_t> process_failures{0};
  std::atomic<std::uint64_t> system_failures{0};
  std::atomic<std::uint64_t> counter_failures{0};
  std::atomic<std::int64_t> tick_cost_total{0};
  std::atomic<std::int64_t> tick_cost_max{0};
  std::atomic<std::int64_t> wake_late_max{0};
  std::atomic<std::uint64_t> pss_reads{0};
  std::atomic<std::uint64_t> pss_failures{0};
  std::atomic<std::int64_t> pss_cost_total{0};
  std::atomic<std::int64_t> pss_cost_max{0};
  std::uint64_t dropped_at_start = 0;
  std::uint64_t chunks_at_start = 0;

  // Written by one sampling thread each; read after they are joined.
  sampler::detail::RegionTotals totals;

  // Waits for an absolute deadline of the monotonic clock, or until
  // request_stop(). FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC
  // deadline and sleeps on the same high-resolution timer as
  // clock_nanosleep, so ticks stay as punctual. False: stop was requested.
  bool sleep_until(std::int64_t deadline) noexcept {
    for (;;) {
      if (stop.load(std::memory_order_acquire) != 0) return false;
      if (now_ns() >= deadline) return true;
      const timespec ts{static_cast<time_t>(deadline / kNsPerSecond), static_cast<long>(deadline % kNsPerSecond)};
      // EINTR, EAGAIN (stop already set) and ETIMEDOUT: the loop re-checks.
      ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&stop), FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0U, &ts,
                nullptr, FUTEX_BITSET_MATCH_ANY);
    }
  }

  void request_stop() noexcept {
    stop.store(1, std::memory_order_release);
    ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&stop), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, nullptr,
              nullptr, 0);
  }

  void signal_ready() noexcept {
    ready.fetch_add(1, std::memory_order_release);
    ready.notify_all();
  }
  // False if the run was abandoned before it began.
  bool wait_for_go() const noexcept {
    go.wait(false, std::memory_order_acquire);
    return !abandoned.load(std::memory_order_acquire);
  }
};

Sampler::Sampler(SamplerOptions options, std::unique_ptr<MemoryProbe> probe, std::unique_ptr<CounterSource> counters)
    : options_(options),
      probe_(std::move(probe)),
      counters_(std::move(counters)),
      buffer_(std::make_unique<sampler::detail::SampleBuffer>(options.chunk_count)),
      shared_(std::make_unique<Shared>()) {
  if (!probe_) throw std::invalid_argument("the sampler needs a memory probe");
  if (counters_ && counters_->names().size() > kMaxCounters)
    throw std::invalid_argument(fmt::format("the sampler records at most {} counters", kMaxCounters));
}

Sampler::~Sampler() { stop(); }

void Sampler::set_target(int pid, std::unique_ptr<MemoryProbe> probe) {
  if (running_) throw std::logic_error("the sampler's target cannot change while it runs");
  if (!probe) throw std::invalid_argument("the sampler needs a memory probe");
  target_pid_ = pid;
  probe_ = std::move(probe);
}

void Sampler::set_gpu(std::shared_ptr<gpu::GpuMemoryReader> reader) {
  if (running_) throw std::logic_error("the sampler's GPU reader cannot change while it runs");
  gpu_ = std::move(reader);
}

void Sampler::set_gpu_devices(const std::vector<int>& nvml_indices) {
  if (running_) throw std::logic_error("the sampler's GPU devices cannot change while it runs");
  if (gpu_) gpu_->select_devices(nvml_indices);
}

std::string Sampler::open_gpu() {
  gpu::GpuOpen opened = gpu::open_gpu_memory();
  if (opened.reader) set_gpu(std::move(opened.reader));
  return opened.problem;
}

std::int64_t Sampler::gpu_tree_bytes() const noexcept {
  return shared_ ? shared_->gpu_tree_bytes.load(std::memory_order_relaxed) : -1;
}

std::vector<std::string> Sampler::gpu_problems() const { return gpu_ ? gpu_->problems() : std::vector<std::string>{}; }

void Sampler::start() { launch(false); }

void Sampler::launch(bool held) {
  using std::chrono::milliseconds;
  if (running_) throw std::logic_error("the sampler is already running");
  if (options_.interval < milliseconds(kMinSamplerIntervalMs) ||
      options_.interval > milliseconds(kMaxSamplerIntervalMs))
    throw std::invalid_argument(
        fmt::format("sampler interval must be {} ms to {} ms", kMinSamplerIntervalMs, kMaxSamplerIntervalMs));
  if (options_.pss_interval.count() < 0) throw std::invalid_argument("the PSS interval cannot be negative");

  shared_ = std::make_unique<Shared>();
  Shared& shared = *shared_;
  shared.dropped_at_start = buffer_->dropped_total();
  shared.chunks_at_start = buffer_->chunks_filled();
  const bool with_pss = options_.pss_interval.count() > 0;
  const bool with_gpu_tree = gpu_ && gpu_->per_process_available();
  const int threads = 1 + (with_pss ? 1 : 0) + (with_gpu_tree ? 1 : 0);

  const auto abandon = [&] {
    shared.abandoned.store(true, std::memory_order_release);
    shared.request_stop();
    shared.go.store(true, std::memory_order_release);
    shared.go.notify_all();
    if (tick_thread_.joinable()) tick_thread_.join();
    if (pss_thread_.joinable()) pss_thread_.join();
    if (gpu_thread_.joinable()) gpu_thread_.join();
  };
  try {
    tick_thread_ = std::thread(&Sampler::tick_loop, this);
    if (with_pss) pss_thread_ = std::thread(&Sampler::pss_loop, this);
    if (with_gpu_tree) gpu_thread_ = std::thread(&Sampler::gpu_loop, this);
    for (int seen = 0; (seen = shared.ready.load(std::memory_order_acquire)) < threads;)
      shared.ready.wait(seen, std::memory_order_acquire);
    // The sampler's own threads exist before the counters open, so they can
    // be left out; every other thread, present or future, is counted.
    if (counters_) {
      std::array<int, 3> excluded{};
      std::size_t excluded_count = 0;
      for (const int tid : {shared.tick_tid.load(), shared.pss_tid.load(), shared.gpu_tid.load()})
        if (tid != 0 && target_pid_ == 0) excluded[excluded_count++] = tid;
      shared.counters_active = counters_->start(target_pid_, std::span<const int>(excluded.data(), excluded_count));
    }
  } catch (...) {
    abandon();
    throw;
  }
  running_ = true;
  held_ = held;
  if (!held) open_go();
}

void Sampler::open_go() {
  Shared& shared = *shared_;
  shared.t0_ns = now_ns();
  shared.go.store(true, std::memory_order_release);
  shared.go.notify_all();
}

void Sampler::release() {
  if (!running_ || !held_) return;
  held_ = false;
  open_go();
  // The first sample before the caller goes on: it is the region's starting
  // point, with the phase in force at the release, however late a loaded
  // machine lets the sampling thread run.
  shared_->first_taken.wait(false, std::memory_order_acquire);
}

void Sampler::stop() {
  if (!running_) return;
  Shared& shared = *shared_;
  if (held_) {
    // Never released: the threads end without a sample.
    held_ = false;
    shared.abandoned.store(true, std::memory_order_release);
    shared.go.store(true, std::memory_order_release);
    shared.go.notify_all();
  }
  shared.request_stop();
  if (tick_thread_.joinable()) tick_thread_.join();
  if (pss_thread_.joinable()) pss_thread_.join();
  if (gpu_thread_.joinable()) gpu_thread_.join();
  // One last read, after the last tick: the region's totals.
  if (counters_ && shared.counters_active) {
    const std::size_t n = counters_->names().size();
    std::array<std::int64_t, kMaxCounters> values{};
    std::array<float, kMaxCounters> running{};
    if (!counters_->read(std::span(values.data(), n), std::span(running.data(), n)))
      shared.counter_failures.fetch_add(1, std::memory_order_relaxed);
    shared.totals.counter_names = counters_->names();
    shared.totals.counter_totals.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
    shared.totals.counter_running.assign(running.begin(), running.begin() + static_cast<std::ptrdiff_t>(n));
    counters_->stop();
  }
  running_ = false;
}

void Sampler::begin_region() {
  baseline_ = prepare_region(*probe_);
  start();
}

void Sampler::begin_region(const RegionBaseline& baseline) {
  baseline_ = baseline;
  start();
}

void Sampler::begin_held_region(const RegionBaseline& baseline) {
  baseline_ = baseline;
  launch(true);
}

RegionSummary Sampler::end_region() {
  stop();
  sampler::detail::RegionTotals totals = shared_->totals;
  const SamplerStats now = stats();
  totals.dropped_samples = now.dropped_samples;
  totals.missed_ticks = now.missed_ticks;
  RegionSummary summary = sampler::detail::summarize_region(baseline_, *probe_, totals);
  gpu::GpuTrialPeak gpu_peak = shared_->gpu_device_peak;
  gpu_peak.take_tree_from(shared_->gpu_tree_peak);
  summary.gpu_peak_bytes = gpu_peak.peak_bytes();
  summary.gpu_devices = gpu::GpuTrialPeak::devices_text(gpu_peak.devices());
  summary.gpu_peak_source = std::string(gpu::gpu_peak_source_name(gpu_peak.source()));
  const std::vector<std::string> problems = gpu_problems();
  for (std::size_t i = gpu_problems_reported_; i < problems.size(); ++i)
    summary.gpu_warning += (summary.gpu_warning.empty() ? "" : "; ") + problems[i];
  gpu_problems_reported_ = problems.size();
  return summary;
}

std::size_t Sampler::drain(const std::function<void(const SampleChunk&)>& consume) { return buffer_->drain(consume); }

SamplerStats Sampler::stats() const {
  const Shared& shared = *shared_;
  constexpr auto relaxed = std::memory_order_relaxed;
  SamplerStats stats;
  stats.samples = shared.samples.load(relaxed);
  stats.dropped_samples = buffer_->dropped_total() - shared.dropped_at_start;
  stats.missed_ticks = shared.missed_ticks.load(relaxed);
  stats.chunks_filled = buffer_->chunks_filled() - shared.chunks_at_start;
  stats.process_read_failures = shared.process_failures.load(relaxed);
  stats.system_read_failures = shared.system_failures.load(relaxed);
  stats.counter_read_failures = shared.counter_failures.load(relaxed);
  stats.tick_cost_ns_total = shared.tick_cost_total.load(relaxed);
  stats.tick_cost_ns_max = shared.tick_cost_max.load(relaxed);
  stats.wake_late_ns_max = shared.wake_late_max.load(relaxed);
  stats.pss_reads = shared.pss_reads.load(relaxed);
  stats.pss_read_failures = shared.pss_failures.load(relaxed);
  stats.pss_read_ns_total = shared.pss_cost_total.load(relaxed);
  stats.pss_read_ns_max = shared.pss_cost_max.load(relaxed);
  stats.gpu_tree_reads = shared.gpu_tree_reads.load(relaxed);
  stats.gpu_tree_read_ns_max = shared.gpu_tree_cost_max.load(relaxed);
  return stats;
}

double SamplerStats::mean_tick_cost_us() const {
  return samples == 0 ? 0.0 : static_cast<double>(tick_cost_ns_total) / static_cast<double>(samples) * 1e-3;
}

double SamplerStats::mean_pss_read_us() const {
  return pss_reads == 0 ? 0.0 : static_cast<double>(pss_read_ns_total) / static_cast<double>(pss_reads) * 1e-3;
}

std::vector<std::string> Sampler::counter_names() const {
  return counters_ ? counters_->names() : std::vector<std::string>{};
}

std::vector<std::string> Sampler::counter_problems() const {
  return counters_ ? counters_->problems() : std::vector<std::string>{};
}

void Sampler::tick_loop() {
  Shared& shared = *shared_;
  name_this_thread("memsweep-tick");
  shared.tick_tid.store(static_cast<int>(::gettid()), std::memory_order_relaxed);
  shared.signal_ready();
  if (!shared.wait_for_go()) return;

  constexpr auto relaxed = std::memory_order_relaxed;
  const std::int64_t interval = options_.interval.count();
  const std::int64_t max_age = options_.max_chunk_age.count();
  const std::size_t counter_count = counters_ && shared.counters_active ? counters_->names().size() : 0;
  sampler::detail::RegionTotals& totals = shared.totals;
  std::uint64_t pss_seen = 0;
  gpu::GpuMemoryReader* const gpu = gpu_.get();
  std::array<std::int64_t, gpu::kMaxGpuDevices> gpu_used{};
  const auto gpu_devices = static_cast<std::size_t>(gpu != nullptr ? gpu->device_count() : 0);
  // The first sample at once, even if stop() follows start() immediately:
  // every run has at least its starting point.
  std::int64_t deadline = shared.t0_ns;
  do {
    const std::int64_t woke = now_ns();
    set_max(shared.wake_late_max, woke - deadline);

    Sample sample;
    sample.t_ns = woke - shared.t0_ns;
    const std::uint64_t phase = phase_.load(relaxed);
    sample.epoch = static_cast<std::int32_t>(static_cast<std::uint32_t>(phase >> 32));
    sample.phase = static_cast<std::int32_t>(static_cast<std::uint32_t>(phase));
    ProcessMemory process;
    if (probe_->read_process(process)) {
      sample.rss_bytes = process.rss_bytes;
      sample.anon_rss_bytes = process.anon_rss_bytes;
    } else {
      sample.flags |= kSampleProcessReadFailed;
      shared.process_failures.fetch_add(1, relaxed);
    }
    SystemMemory system;
    if (probe_->read_system(system)) {
      sample.sys_total_bytes = system.total_bytes;
      sample.sys_free_bytes = system.free_bytes;
      sample.sys_buffers_bytes = system.buffers_bytes;
      sample.sys_cached_bytes = system.cached_bytes;
      sample.sys_available_bytes = system.available_bytes;
      sample.sys_active_bytes = system.active_bytes;
      sample.sys_used_bytes = system.used_bytes();
    } else {
      sample.flags |= kSampleSystemReadFailed;
      shared.system_failures.fetch_add(1, relaxed);
    }
    const std::uint64_t pss_now = shared.pss_sequence.load(std::memory_order_acquire);
    sample.pss_bytes = shared.pss_bytes.load(relaxed);
    if (pss_now != pss_seen) sample.flags |= kSamplePssFresh;
    pss_seen = pss_now;
    if (gpu != nullptr) {
      sample.gpu_used_bytes = gpu->read_device_used(gpu_used);
      shared.gpu_device_peak.add_device_used(std::span<const std::int64_t>(gpu_used.data(), gpu_devices));
      sample.gpu_tree_used_bytes = shared.gpu_tree_bytes.load(relaxed);
    }
    if (counter_count > 0 && !counters_->read(std::span(sample.counters.data(), counter_count),
                                              std::span(sample.counter_running.data(), counter_count))) {
      sample.flags |= kSampleCountersReadFailed;
      shared.counter_failures.fetch_add(1, relaxed);
    }
    buffer_->push(sample, max_age);
    if (totals.samples == 0) {
      shared.first_taken.store(true, std::memory_order_release);
      shared.first_taken.notify_all();
    }

    ++totals.samples;
    if (sample.rss_bytes >= 0) {
      ++totals.rss_count;
      totals.rss_sum += static_cast<double>(sample.rss_bytes);
      totals.rss_max = std::max(totals.rss_max, sample.rss_bytes);
    }
    if (sample.sys_used_bytes >= 0) {
      ++totals.sys_used_count;
      totals.sys_used_sum += static_cast<double>(sample.sys_used_bytes);
    }
    shared.samples.store(totals.samples, relaxed);

    const std::int64_t done = now_ns();
    shared.tick_cost_total.fetch_add(done - woke, relaxed);
    set_max(shared.tick_cost_max, done - woke);
    deadline += interval;
    // An overrun skips the deadlines it missed instead of catching up in a
    // burst of back-to-back samples.
    if (done >= deadline) {
      const std::int64_t missed = (done - deadline) / interval + 1;
      deadline += missed * interval;
      shared.missed_ticks.fetch_add(static_cast<std::uint64_t>(missed), relaxed);
    }
  } while (shared.sleep_until(deadline));
  buffer_->hand_over();
}

void Sampler::pss_loop() {
  Shared& shared = *shared_;
  name_this_thread("memsweep-pss");
  shared.pss_tid.store(static_cast<int>(::gettid()), std::memory_order_relaxed);
  shared.signal_ready();
  if (!shared.wait_for_go()) return;

  constexpr auto relaxed = std::memory_order_relaxed;
  const std::int64_t interval = options_.pss_interval.count();
  sampler::detail::RegionTotals& totals = shared.totals;
  std::int64_t deadline = shared.t0_ns;
  do {
    const std::int64_t begin = now_ns();
    std::int64_t pss = -1;
    const bool ok = probe_->read_pss(pss);
    const std::int64_t end = now_ns();
    shared.pss_reads.fetch_add(1, relaxed);
    shared.pss_cost_total.fetch_add(end - begin, relaxed);
    set_max(shared.pss_cost_max, end - begin);
    if (ok) {
      shared.pss_bytes.store(pss, relaxed);
      shared.pss_sequence.fetch_add(1, std::memory_order_release);
      ++totals.pss_count;
      totals.pss_sum += static_cast<double>(pss);
      totals.pss_max = std::max(totals.pss_max, pss);
    } else {
      shared.pss_failures.fetch_add(1, relaxed);
    }
    deadline = std::max(deadline + interval, end + kPssCostSpacing * (end - begin));
  } while (shared.sleep_until(deadline));
}

// NVML's per-process lists cost milliseconds and take the driver's lock
// (which the trial's own CUDA calls take too): on a thread of their own,
// spaced by next_tree_read_delay, so that a tick never waits for one.
void Sampler::gpu_loop() {
  Shared& shared = *shared_;
  name_this_thread("memsweep-gpu");
  shared.gpu_tid.store(static_cast<int>(::gettid()), std::memory_order_relaxed);
  shared.signal_ready();
  if (!shared.wait_for_go()) return;

  constexpr auto relaxed = std::memory_order_relaxed;
  std::vector<int> pids;
  std::int64_t deadline = shared.t0_ns;
  do {
    const std::int64_t begin = now_ns();
    pids.clear();
    if (!probe_->read_pids(pids) && target_pid_ > 0) pids.assign(1, target_pid_);
    if (!pids.empty()) {
      try {
        const gpu::TreeGpuReading reading = gpu_->read_tree(pids);
        shared.gpu_tree_peak.add_tree(reading);
        if (reading.ok) shared.gpu_tree_bytes.store(reading.bytes, relaxed);
      } catch (const std::bad_alloc&) {
        // A longer process list than memory allows: this read is skipped.
      }
    }
    const std::int64_t end = now_ns();
    shared.gpu_tree_reads.fetch_add(1, relaxed);
    set_max(shared.gpu_tree_cost_max, end - begin);
    deadline = end + gpu::next_tree_read_delay(std::chrono::nanoseconds(end - begin)).count();
  } while (shared.sleep_until(deadline));
}

}  // namespace memsweep
