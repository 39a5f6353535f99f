#pragma once
// The sampler: a thread that wakes on absolute deadlines of the monotonic
// clock and records the process's memory, the node's memory and hardware /
// software counters, into preallocated chunks that a consumer thread takes
// whole. What each figure means, and what it costs, is in docs/sampler.md.
//
// Threads: start(), stop(), set_phase() and the region calls belong to the
// thread doing the measured work (the trainer); drain() to one consumer
// thread; stats() to anyone. The sampler's tick never allocates, locks or
// blocks on the consumer: when the consumer falls behind, samples are
// dropped and counted.

#include "memsweep/config.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace memsweep {

namespace gpu {
class GpuMemoryReader;  // NVML, loaded at run time (src/sampler/gpu/gpu_memory.hpp)
}  // namespace gpu

namespace sampler::detail {
class SampleBuffer;  // the chunk pool and its lock-free handoff (src/sampler/sample_buffer.hpp)
}  // namespace sampler::detail

// The results file has one column per counter, so a sample has a fixed
// number of counter slots; chunks are then plain arrays.
inline constexpr std::size_t kMaxCounters = 16;
// 2.56 s of samples at the default 10 ms interval.
inline constexpr std::size_t kSamplesPerChunk = 256;
// 32 chunks x 256 samples x ~300 bytes = 2.4 MB, allocated and touched once:
// 80 s of backlog at 10 ms, 8 s at 1 ms.
inline constexpr std::size_t kDefaultChunkCount = 32;
// Reading smaps_rollup takes milliseconds and the process's memory lock.
inline constexpr std::chrono::milliseconds kDefaultPssInterval{1000};
// A consumer streaming to rank 0 gets a (partial) chunk at least this often.
inline constexpr std::chrono::milliseconds kDefaultMaxChunkAge{2000};

// What one process uses, from /proc/self/statm.
struct ProcessMemory {
  std::int64_t rss_bytes = -1;
  std::int64_t anon_rss_bytes = -1;  // resident minus file-backed and shared memory
};

// The node's memory, from /proc/meminfo. -1: the kernel did not report it.
struct SystemMemory {
  std::int64_t total_bytes = -1;
  std::int64_t free_bytes = -1;
  std::int64_t buffers_bytes = -1;
  std::int64_t cached_bytes = -1;
  std::int64_t available_bytes = -1;
  std::int64_t active_bytes = -1;

  // The source paper's formula 1: total - (free + buffers + cached).
  std::int64_t used_bytes() const;
};

// Bits of Sample::flags.
enum SampleFlag : std::uint32_t {
  kSampleProcessReadFailed = 1U << 0,
  kSampleSystemReadFailed = 1U << 1,
  kSampleCountersReadFailed = 1U << 2,
  kSamplePssFresh = 1U << 3,  // pss_bytes was read since the previous sample
};

// Sample::phase: what the trial was doing when a sample was taken, as the
// trainer reported it (set_phase()).
namespace sample_phase {
inline constexpr std::int32_t kUnknown = -1;    // a program that reports no phases (yet)
inline constexpr std::int32_t kSetup = 0;       // before the first epoch
inline constexpr std::int32_t kTraining = 1;    // an epoch's training pass
inline constexpr std::int32_t kEvaluating = 2;  // the test pass after an epoch
}  // namespace sample_phase

// One tick. Byte values are -1 when their read failed (see flags).
struct Sample {
  std::int64_t t_ns = 0;                        // since start(), monotonic clock
  std::int32_t epoch = 0;                       // the epoch set_phase() last set
  std::uint32_t flags = 0;                      // SampleFlag bits
  std::int32_t phase = sample_phase::kUnknown;  // the phase set_phase() last set
  std::int64_t rss_bytes = -1;
  std::int64_t anon_rss_bytes = -1;
  std::int64_t pss_bytes = -1;  // last known proportional set size (slower cadence)
  std::int64_t sys_total_bytes = -1;
  std::int64_t sys_free_bytes = -1;
  std::int64_t sys_buffers_bytes = -1;
  std::int64_t sys_cached_bytes = -1;
  std::int64_t sys_available_bytes = -1;
  std::int64_t sys_active_bytes = -1;
  std::int64_t sys_used_bytes = -1;  // formula 1
  // GPU memory (src/sampler/gpu/, docs/runner.md "GPU memory"); -1: not measured.
  std::int64_t gpu_used_bytes = -1;       // NVML: every device's used memory, summed (the sampler's cadence)
  std::int64_t gpu_tree_used_bytes = -1;  // NVML: the process tree's, last known (a slower cadence)
  // Counts since start(), already scaled up for multiplexing, in the order
  // of Sampler::counter_names(); unused slots are zero.
  std::array<std::int64_t, kMaxCounters> counters{};
  // Per counter: time running / time enabled. 1 means counted all the time;
  // below 1 the counter was multiplexed and its value is an estimate.
  std::array<float, kMaxCounters> counter_running{};

  double t_seconds() const { return static_cast<double>(t_ns) * 1e-9; }
};

struct SampleChunk {
  std::uint64_t sequence = 0;        // 0, 1, 2, ... in the order chunks were filled
  std::uint64_t dropped_before = 0;  // samples lost since the previous chunk (consumer behind)
  std::size_t count = 0;
  std::array<Sample, kSamplesPerChunk> samples{};

  std::span<const Sample> view() const { return {samples.data(), count}; }
};

// What read_peak_rss and read_process give, read at one moment; empty where
// that read failed.
struct PeakAndProcess {
  std::optional<std::int64_t> peak_bytes;
  std::optional<ProcessMemory> process;
};

// Side effects on memory, behind an interface so that tests can script them.
// read_pss() is called from its own thread, concurrently with the other reads.
class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  virtual bool read_process(ProcessMemory& out) noexcept = 0;
  virtual bool read_system(SystemMemory& out) noexcept = 0;
  virtual bool read_pss(std::int64_t& pss_bytes) noexcept = 0;
  virtual bool read_peak_rss(std::int64_t& peak_bytes) noexcept = 0;  // VmHWM
  virtual bool reset_peak_rss() noexcept = 0;                         // clear_refs 5
  virtual void release_free_memory() noexcept = 0;                    // malloc_trim
  // The processes this probe reads (for NVML's per-process figures), from
  // a thread of its own; false when it cannot say.
  virtual bool read_pids(std::vector<int>& pids) noexcept {
    (void)pids;
    return false;
  }
  // Both reads of the runner's checks. A process-tree probe overrides it to
  // look for the tree's new processes once, not once per read.
  virtual PeakAndProcess read_peak_and_process() noexcept {
    PeakAndProcess reading;
    std::int64_t peak = 0;
    if (read_peak_rss(peak)) reading.peak_bytes = peak;
    ProcessMemory process;
    if (read_process(process)) reading.process = process;
    return reading;
  }
};

// /proc/self/{statm,status,smaps_rollup} and /proc/meminfo, opened once and
// re-read with pread. A file that cannot be opened makes its reads fail
// (counted in the stats), never the construction.
std::unique_ptr<MemoryProbe> make_proc_memory_probe();
// The same files of another process (a trial's, watched from outside). Its
// reads fail once it has exited; it has no peak to reset, nothing to trim.
std::unique_ptr<MemoryProbe> make_proc_memory_probe(int pid);

// Counters of every thread of a process, behind an interface for tests.
class CounterSource {
 public:
  virtual ~CounterSource() = default;
  virtual const std::vector<std::string>& names() const = 0;
  // Counts every thread of process `pid` (0: this process) except
  // `excluded_tids` (the sampler's own, when it samples its own process),
  // and every thread they create from now on. Returns false when nothing
  // could be started; problems() says why.
  virtual bool start(int pid, std::span<const int> excluded_tids) = 0;
  // Writes names().size() values and running fractions.
  virtual bool read(std::span<std::int64_t> values, std::span<float> running) noexcept = 0;
  virtual void stop() noexcept = 0;
  virtual std::vector<std::string> problems() const = 0;
};

// Where a counter's events come from (docs/sampler.md, "Counter sources").
enum class EventSource {
  none,    // not counted
  papi,    // PAPI named it, libpfm4 encoded it
  kernel,  // one of the kernel's generic perf events
};
// "papi", "kernel"; "" for none.
std::string_view event_source_name(EventSource source);

// One perf_event_open attribute set: what the kernel was asked to count.
struct EventEncoding {
  std::uint32_t type = 0;  // perf_event_attr::type (PERF_TYPE_*, or a PMU's own)
  std::uint64_t config = 0;
  std::uint64_t config1 = 0;  // extra fields of some CPU events; usually 0
  int sign = 1;               // -1: subtracted (presets PAPI derives by difference)
};
// "type=1 config=0x2"; several terms joined by " + " or " - ".
std::string encoding_text(std::span<const EventEncoding> terms);

// What became of one requested event.
struct EventStatus {
  std::string name;
  bool available = false;
  EventSource source = EventSource::none;  // what serves it, when available
  std::vector<EventEncoding> encoding;     // how, when available
  std::string detail;                      // the description, or why the event is left out
};

// An event to count, and where it may come from.
struct CounterRequest {
  std::string name;
  CounterSourceChoice source = CounterSourceChoice::automatic;
};

struct CounterSetup {
  std::unique_ptr<CounterSource> source;  // null when no event is available
  std::vector<EventStatus> events;        // every requested event, in order
};

// The candidates `memsweep events` lists: memory-related presets, the
// instruction, cycle and branch presets, and the software events.
std::vector<std::string> candidate_events();
// The available subset of the memory hardware presets, plus the software
// page-fault and context-switch events always.
std::vector<std::string> default_events(CounterSourceChoice choice = CounterSourceChoice::automatic);
// Checks each name (naming by PAPI or the kernel, then a trial
// perf_event_open on the calling thread).
std::vector<EventStatus> probe_events(const std::vector<std::string>& names,
                                      CounterSourceChoice choice = CounterSourceChoice::automatic);
// Opens the available ones among `requested`, at most kMaxCounters; the
// others are reported in `events`, never fatal.
CounterSetup open_counter_columns(const std::vector<CounterRequest>& requested);
// The same for names of one choice (the defaults when empty).
CounterSetup open_counters(const std::vector<std::string>& names,
                           CounterSourceChoice choice = CounterSourceChoice::automatic);
// "PAPI 7.0.0.0", or why PAPI could not start.
std::string counter_library_version();

// PAPI's CPU component (perf_event): disabled on a CPU newer than its
// libpfm4 knows, and then PAPI names no event at all.
struct PapiCpuComponent {
  std::string name;  // "perf_event"
  bool active = false;
  std::string reason;  // why not, when not active (PAPI's words)
  int native_events = 0;
  std::vector<std::string> pmus;  // libpfm4's PMUs it uses: "amd64_fam19h_zen4", "perf", ...
};
// Throws std::runtime_error when PAPI cannot start.
PapiCpuComponent papi_cpu_component();

struct SamplerOptions {
  std::chrono::nanoseconds interval{std::chrono::milliseconds(kDefaultSamplerIntervalMs)};
  // Zero: no PSS thread. Stretched to 100 x the last read's cost when longer.
  std::chrono::nanoseconds pss_interval{kDefaultPssInterval};
  std::chrono::nanoseconds max_chunk_age{kDefaultMaxChunkAge};
  std::size_t chunk_count = kDefaultChunkCount;
};

// Since the last start(). Costs are wall time on the sampler's threads.
struct SamplerStats {
  std::uint64_t samples = 0;          // taken (including dropped ones)
  std::uint64_t dropped_samples = 0;  // no free chunk: the consumer fell behind
  std::uint64_t missed_ticks = 0;     // deadlines skipped after an overrun
  std::uint64_t chunks_filled = 0;
  std::uint64_t process_read_failures = 0;
  std::uint64_t system_read_failures = 0;
  std::uint64_t counter_read_failures = 0;
  std::int64_t tick_cost_ns_total = 0;
  std::int64_t tick_cost_ns_max = 0;
  std::int64_t wake_late_ns_max = 0;  // how late after its deadline a tick woke
  std::uint64_t pss_reads = 0;
  std::uint64_t pss_read_failures = 0;
  std::int64_t pss_read_ns_total = 0;
  std::int64_t pss_read_ns_max = 0;
  std::uint64_t gpu_tree_reads = 0;  // NVML per-process reads
  std::int64_t gpu_tree_read_ns_max = 0;

  double mean_tick_cost_us() const;
  double mean_pss_read_us() const;
};

// The state at the start of a measured region.
struct RegionBaseline {
  std::int64_t rss_bytes = -1;
  bool peak_reset = false;  // false: the peak is the process's since it began
};

// Per measured region (a trial): the figures of docs/sampler.md, "Measured
// regions (trials)".
struct RegionSummary {
  std::int64_t baseline_rss_bytes = -1;
  std::int64_t peak_rss_bytes = -1;  // VmHWM; the largest sample if it could not be read
  bool peak_since_baseline = false;  // the kernel's peak was reset at the baseline
  std::int64_t max_sampled_rss_bytes = -1;
  double mean_rss_bytes = -1;
  std::int64_t footprint_bytes = -1;  // peak - baseline
  double sys_used_mean_bytes = -1;    // formula 2: mean of formula 1 over the samples
  double pss_mean_bytes = -1;         // over the PSS reads in the region; -1: none
  std::int64_t pss_peak_bytes = -1;
  std::uint64_t samples = 0;
  std::uint64_t dropped_samples = 0;
  std::uint64_t missed_ticks = 0;
  std::vector<std::string> counter_names{};
  std::vector<std::int64_t> counter_totals{};  // at the end of the region, scaled
  float counter_min_running = 1.0F;            // the least time any counter ran
  // GPU memory (docs/runner.md, "GPU memory"): -1 / empty when not measured.
  std::int64_t gpu_peak_bytes = -1;
  std::string gpu_devices{};      // "0,2": NVML indices
  std::string gpu_peak_source{};  // "tree" or "device_delta" (gpu_peak_source_name)
  // NVML calls that failed for the first time in this region ("; "-joined):
  // each is reported once, with the first trial it happened in.
  std::string gpu_warning{};
};

// Before a measured region (after the caller freed what the previous one
// held): returns free heap memory to the OS, resets the kernel's peak RSS and
// records the baseline.
RegionBaseline prepare_region(MemoryProbe& probe);

class Sampler {
 public:
  // `counters` may be null: memory is sampled either way. It samples the
  // process `probe` reads, and counts this process's threads.
  Sampler(SamplerOptions options, std::unique_ptr<MemoryProbe> probe, std::unique_ptr<CounterSource> counters);

  // Samples and counts another process from now on (a trial's, watched from
  // outside; pid 0: this process again), with `probe` reading its files.
  // Throws std::logic_error while running.
  void set_target(int pid, std::unique_ptr<MemoryProbe> probe);
  // Samples GPU memory through `reader` from the next start() on (null:
  // not). Throws std::logic_error while running.
  void set_gpu(std::shared_ptr<gpu::GpuMemoryReader> reader);
  // From the next start() on, reads only these GPUs (NVML indices: a
  // trial's own, rank_gpus.hpp); empty: every device. Throws
  // std::logic_error while running.
  void set_gpu_devices(const std::vector<int>& nvml_indices);
  // set_gpu with the node's NVML (libnvidia-ml.so.1, opened now). Returns
  // why GPU memory will not be sampled ("no NVIDIA driver: GPU memory not
  // sampled"), or empty. Never throws for a missing or failing driver.
  std::string open_gpu();
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the counters (on every existing thread but the sampler's, and on
  // threads created later) and the sampling threads; the first sample is
  // taken at once. Throws std::invalid_argument for an interval outside
  // [kMinSamplerIntervalMs, kMaxSamplerIntervalMs] and std::logic_error
  // when already running.
  void start();
  // Joins the threads, hands the partial chunk over and stops the counters.
  // The sleeping threads wake at once; returns after a tick or a PSS read
  // in progress. Idempotent.
  void stop();
  bool running() const { return running_; }

  // prepare_region() then start(); end_region() stops and summarises.
  void begin_region();
  // start() from a baseline the caller read (a watched process's, when it
  // was ready): nothing is trimmed or reset.
  void begin_region(const RegionBaseline& baseline);
  // begin_region(baseline), but no sample is taken until release(): the
  // counters open now, on a trial process still waiting before its exec, so
  // that they count it from its first instruction, while its memory is
  // sampled only once it runs its own image (until then a forked child's
  // memory is the rank's: docs/runner.md, "Programs"). A region ended
  // before release() has no samples.
  void begin_held_region(const RegionBaseline& baseline);
  // The first sample at once: returns once it is taken, so that it carries
  // the phase in force now. Sample times count from here. Nothing when the
  // region is not held.
  void release();
  RegionSummary end_region();

  // The epoch and phase (sample_phase) the samples taken from now on carry;
  // stored as one word, so that no sample pairs an epoch with the phase
  // before it.
  void set_phase(std::int32_t epoch, std::int32_t phase) noexcept {
    phase_.store(pack_phase(epoch, phase), std::memory_order_relaxed);
  }

  // Consumer side: passes each full (or aged, or final) chunk to `consume`
  // and recycles it; returns the number of chunks passed.
  std::size_t drain(const std::function<void(const SampleChunk&)>& consume);

  SamplerStats stats() const;
  std::vector<std::string> counter_names() const;
  std::vector<std::string> counter_problems() const;
  // The GPU reader's failed NVML calls, once each.
  std::vector<std::string> gpu_problems() const;
  // The trial's tree's GPU memory at the last per-process read of this
  // region (-1: none yet): what a GPU limit's watch compares. The thread
  // that runs the region's calls may ask.
  std::int64_t gpu_tree_bytes() const noexcept;
  const SamplerOptions& options() const { return options_; }

 private:
  struct Shared;  // what the sampling threads and the caller share
  void launch(bool held);
  void open_go();
  void tick_loop();
  void pss_loop();
  void gpu_loop();

  SamplerOptions options_;
  std::unique_ptr<MemoryProbe> probe_;
  std::unique_ptr<CounterSource> counters_;
  std::unique_ptr<sampler::detail::SampleBuffer> buffer_;
  std::unique_ptr<Shared> shared_;
  static std::uint64_t pack_phase(std::int32_t epoch, std::int32_t phase) noexcept {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(epoch)) << 32) | static_cast<std::uint32_t>(phase);
  }
  std::atomic<std::uint64_t> phase_{pack_phase(0, sample_phase::kUnknown)};
  int target_pid_ = 0;  // 0: this process
  std::thread tick_thread_;
  std::thread pss_thread_;
  std::thread gpu_thread_;
  std::shared_ptr<gpu::GpuMemoryReader> gpu_;
  std::size_t gpu_problems_reported_ = 0;
  bool running_ = false;
  bool held_ = false;  // running, its threads waiting for release()
  RegionBaseline baseline_;
};

}  // namespace memsweep
