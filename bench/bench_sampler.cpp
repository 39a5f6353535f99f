// The sampler's overhead on a workload: throughput with the sampler at 1, 10
// and 100 ms against none, repeats interleaved (the order rotates every
// round), medians compared. Also the sampler's own cost per sample, its
// interval jitter, and the cost of one PSS read.
// Run: memsweep_bench_sampler [repeats] [seconds per run] [child|trainer|matmul]
//
// The default, `child`, is how a sweep measures: the trainer (an MLP of the
// source paper's kind, 784-512-256-10 at batch 64, on OMP_NUM_THREADS
// threads) runs in a process of its own (this binary, exec'd), and the
// sampler watches it from this one (/proc/PID, its counters by pid).
// `trainer` runs the same steps in the sampler's own process; `matmul` is a
// plain blocked matrix multiply on two threads, for a workload without
// oneDNN.

#include "memsweep/random.hpp"
#include "memsweep/sampler.hpp"
#include "memsweep/trainer.hpp"

#include <fmt/format.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kDefaultRepeats = 11;
constexpr double kDefaultSecondsPerRun = 1.0;
constexpr int kCalibrationSteps = 4;
constexpr std::size_t kMatrixSize = 256;  // 3 x 256 KiB of doubles per thread: past L2
constexpr std::size_t kBlock = 32;
constexpr int kWorkerThreads = 2;
constexpr int kMicroRepeats = 2000;
constexpr int kPssRepeats = 50;
constexpr std::size_t kLargeProcessBytes = std::size_t{1} << 30;

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string name() const = 0;
  virtual void run(int steps) = 0;
};

// Each step: every worker multiplies its own pair of matrices (blocked), then
// all workers meet at a barrier, as training threads do after each layer.
class BlockedMatmul final : public Workload {
 public:
  BlockedMatmul() : start_(kWorkerThreads + 1), finish_(kWorkerThreads + 1), step_(kWorkerThreads) {
    for (int t = 0; t < kWorkerThreads; ++t) {
      data_.emplace_back(3 * kMatrixSize * kMatrixSize);
      std::vector<double>& m = data_.back();
      for (std::size_t i = 0; i < m.size(); ++i) m[i] = static_cast<double>(i % 7) * 0.5;
    }
    for (int t = 0; t < kWorkerThreads; ++t) threads_.emplace_back([this, t] { work(t); });
  }
  ~BlockedMatmul() override {
    steps_ = -1;
    start_.arrive_and_wait();
    for (std::thread& thread : threads_) thread.join();
  }
  BlockedMatmul(const BlockedMatmul&) = delete;
  BlockedMatmul& operator=(const BlockedMatmul&) = delete;

  std::string name() const override {
    return fmt::format("blocked matmul {}x{} on {} threads", kMatrixSize, kMatrixSize, kWorkerThreads);
  }

  void run(int steps) override {
    steps_ = steps;
    start_.arrive_and_wait();
    finish_.arrive_and_wait();
  }

 private:
  void work(int t) {
    for (;;) {
      start_.arrive_and_wait();
      if (steps_ < 0) return;
      for (int s = 0; s < steps_; ++s) {
        multiply(data_[static_cast<std::size_t>(t)]);
        step_.arrive_and_wait();
      }
      finish_.arrive_and_wait();
    }
  }

  static void multiply(std::vector<double>& m) {
    constexpr std::size_t n = kMatrixSize;
    const double* a = m.data();
    const double* b = m.data() + n * n;
    double* c = m.data() + 2 * n * n;
    std::fill(c, c + n * n, 0.0);
    for (std::size_t ii = 0; ii < n; ii += kBlock)
      for (std::size_t kk = 0; kk < n; kk += kBlock)
        for (std::size_t jj = 0; jj < n; jj += kBlock)
          for (std::size_t i = ii; i < ii + kBlock; ++i)
            for (std::size_t k = kk; k < kk + kBlock; ++k) {
              const double aik = a[i * n + k];
              for (std::size_t j = jj; j < jj + kBlock; ++j) c[i * n + j] += aik * b[k * n + j];
            }
  }

  std::vector<std::vector<double>> data_;
  std::vector<std::thread> threads_;
  std::barrier<> start_;
  std::barrier<> finish_;
  std::barrier<> step_;
  int steps_ = 0;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return NAN;
  std::sort(values.begin(), values.end());
  const auto at = static_cast<std::size_t>(std::lround(p * static_cast<double>(values.size() - 1)));
  return values[at];
}

// Training steps of the real trainer on one fixed synthetic batch.
class TrainerSteps final : public Workload {
 public:
  TrainerSteps() : trainer_(config()) {
    memsweep::Rng rng(1);
    for (float& x : trainer_.batch_images(kBatch)) x = static_cast<float>(rng.uniform01());
    for (std::int32_t& y : trainer_.batch_labels(kBatch)) y = static_cast<std::int32_t>(rng.uniform_int(0, 9));
  }
  std::string name() const override { return "trainer: MLP 784-512-256-10, batch 64, SGD"; }
  void run(int steps) override {
    for (int i = 0; i < steps; ++i) trainer_.train_step(kBatch);
  }

 private:
  static constexpr std::size_t kBatch = 64;
  static memsweep::TrainerConfig config() {
    memsweep::TrainerConfig c;
    c.model = memsweep::ModelSpec{{1, 28, 28}, 10, {}, {512, 256}};
    c.learning_rate = 0.01;
    c.train_batch_sizes = {kBatch};
    return c;
  }
  memsweep::Trainer trainer_;
};

// The trainer's steps in a process of their own: the child reads a step
// count per line on its stdin, trains, and answers with the count when done.
class ChildTrainer final : public Workload {
 public:
  explicit ChildTrainer(const char* self) {
    int to_child[2];
    int from_child[2];
    if (::pipe(to_child) != 0 || ::pipe(from_child) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, to_child[1]);
    posix_spawn_file_actions_addclose(&actions, from_child[0]);
    char* argv[] = {const_cast<char*>(self), const_cast<char*>("--child-worker"), nullptr};
    if (posix_spawn(&pid_, self, &actions, nullptr, argv, environ) != 0) throw std::runtime_error("posix_spawn");
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    to_ = ::fdopen(to_child[1], "w");
    from_ = ::fdopen(from_child[0], "r");
  }
  ~ChildTrainer() override {
    std::fclose(to_);
    std::fclose(from_);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  ChildTrainer(const ChildTrainer&) = delete;
  ChildTrainer& operator=(const ChildTrainer&) = delete;

  std::string name() const override { return "trainer in a child process: MLP 784-512-256-10, batch 64, SGD"; }
  void run(int steps) override {
    std::fprintf(to_, "%d\n", steps);
    std::fflush(to_);
    int done = 0;
    if (std::fscanf(from_, "%d", &done) != 1 || done != steps)
      throw std::runtime_error("the child worker did not answer");
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::FILE* to_ = nullptr;
  std::FILE* from_ = nullptr;
};

int child_worker() {
  TrainerSteps steps;
  for (int count = 0; std::scanf("%d", &count) == 1;) {
    steps.run(count);
    std::printf("%d\n", count);
    std::fflush(stdout);
  }
  return 0;
}

struct Config {
  Config(std::string name, int interval) : label(std::move(name)), interval_ms(interval) {}
  std::string label;
  int interval_ms;  // 0: no sampler
  std::vector<double> seconds;
  std::vector<double> deviation_us;  // |measured interval - requested|
  double cost_ns_total = 0;
  std::uint64_t samples = 0;
  std::uint64_t missed = 0;
  std::uint64_t dropped = 0;
  std::uint64_t pss_reads = 0;
  double pss_ns_total = 0;
};

// `target`: the process the workload runs in (0: this one).
void run_once(Workload& workload, int steps, Config& config, pid_t target) {
  if (config.interval_ms == 0) {
    const auto start = Clock::now();
    workload.run(steps);
    config.seconds.push_back(seconds_since(start));
    return;
  }
  memsweep::SamplerOptions options;
  options.interval = milliseconds(config.interval_ms);
  memsweep::CounterSetup counters = memsweep::open_counters({});
  memsweep::Sampler sampler(options, memsweep::make_proc_memory_probe(), std::move(counters.source));
  if (target != 0) sampler.set_target(target, memsweep::make_proc_memory_probe(target));
  sampler.start();
  const auto start = Clock::now();
  workload.run(steps);
  config.seconds.push_back(seconds_since(start));
  sampler.stop();
  std::int64_t previous = -1;
  const double interval_us = config.interval_ms * 1e3;
  sampler.drain([&](const memsweep::SampleChunk& chunk) {
    for (const memsweep::Sample& sample : chunk.view()) {
      if (previous >= 0) config.deviation_us.push_back(std::fabs((sample.t_ns - previous) * 1e-3 - interval_us));
      previous = sample.t_ns;
    }
  });
  const memsweep::SamplerStats stats = sampler.stats();
  config.cost_ns_total += static_cast<double>(stats.tick_cost_ns_total);
  config.samples += stats.samples;
  config.missed += stats.missed_ticks;
  config.dropped += stats.dropped_samples;
  config.pss_reads += stats.pss_reads;
  config.pss_ns_total += static_cast<double>(stats.pss_read_ns_total);
}

// Each part of a tick alone, for the breakdown in docs/sampler.md.
template <typename F>
double median_us(int repeats, F&& f) {
  std::vector<double> us;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    f();
    us.push_back(seconds_since(start) * 1e6);
  }
  return percentile(us, 0.5);
}

void print_breakdown() {
  auto probe = memsweep::make_proc_memory_probe();
  memsweep::ProcessMemory process;
  memsweep::SystemMemory system;
  std::int64_t pss = 0;
  fmt::print("one tick's parts (median of {}):\n", kMicroRepeats);
  fmt::print("  statm read+parse      {:7.2f} us\n", median_us(kMicroRepeats, [&] { probe->read_process(process); }));
  fmt::print("  meminfo read+parse    {:7.2f} us\n", median_us(kMicroRepeats, [&] { probe->read_system(system); }));
  memsweep::CounterSetup setup = memsweep::open_counters({});
  if (setup.source) {
    setup.source->start(0, {});
    std::array<std::int64_t, memsweep::kMaxCounters> values{};
    std::array<float, memsweep::kMaxCounters> running{};
    const std::size_t n = setup.source->names().size();
    fmt::print("  {} counters read       {:7.2f} us\n", n, median_us(kMicroRepeats, [&] {
                 setup.source->read(std::span(values.data(), n), std::span(running.data(), n));
               }));
    setup.source->stop();
  }
  const auto pss_line = [&] {
    const double us = median_us(kPssRepeats, [&] { probe->read_pss(pss); });
    probe->read_process(process);
    fmt::print("  smaps_rollup (PSS)    {:7.2f} us   (process RSS {:.0f} MiB)\n", us,
               static_cast<double>(process.rss_bytes) / (1 << 20));
  };
  pss_line();
  // The walk is over every resident page: a training-sized process costs more.
  std::vector<char> large(kLargeProcessBytes, 1);
  pss_line();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--child-worker") return child_worker();
  const int repeats = argc > 1 ? std::atoi(argv[1]) : kDefaultRepeats;
  const double seconds_per_run = argc > 2 ? std::atof(argv[2]) : kDefaultSecondsPerRun;

  const std::string kind = argc > 3 ? argv[3] : "child";
  std::unique_ptr<Workload> chosen;
  pid_t target = 0;
  if (kind == "matmul") {
    chosen = std::make_unique<BlockedMatmul>();
  } else if (kind == "trainer") {
    chosen = std::make_unique<TrainerSteps>();
  } else {
    auto child = std::make_unique<ChildTrainer>("/proc/self/exe");
    target = child->pid();
    chosen = std::move(child);
  }
  Workload& workload = *chosen;
  workload.run(1);  // warm up
  const auto calibration = Clock::now();
  workload.run(kCalibrationSteps);
  const double step_seconds = seconds_since(calibration) / kCalibrationSteps;
  const int steps = std::max(1, static_cast<int>(seconds_per_run / step_seconds));

  fmt::print("memsweep sampler overhead: {}, {} steps per run ({:.2f} ms per step), {} repeats\n", workload.name(),
             steps, step_seconds * 1e3, repeats);
  fmt::print("counters: {}\n", fmt::join(memsweep::default_events(), " "));

  std::vector<Config> configs{{"no sampler", 0}, {"100 ms", 100}, {"10 ms", 10}, {"1 ms", 1}};
  for (int round = 0; round < repeats; ++round)
    for (std::size_t i = 0; i < configs.size(); ++i)
      run_once(workload, steps, configs[(i + static_cast<std::size_t>(round)) % configs.size()], target);

  const double baseline = percentile(configs[0].seconds, 0.5);
  fmt::print("\n{:<11} {:>9} {:>10} {:>9} {:>13} {:>11} {:>11} {:>7} {:>8}\n", "sampler", "median s", "slowdown",
             "samples", "cost/sample", "jitter p50", "jitter p99", "missed", "dropped");
  for (const Config& config : configs) {
    const double median = percentile(config.seconds, 0.5);
    if (config.interval_ms == 0) {
      fmt::print("{:<11} {:>9.4f} {:>10}\n", config.label, median, "-");
      continue;
    }
    fmt::print("{:<11} {:>9.4f} {:>9.2f}% {:>9} {:>10.1f} us {:>8.1f} us {:>8.1f} us {:>7} {:>8}\n", config.label,
               median, (median / baseline - 1) * 100, config.samples,
               config.cost_ns_total / static_cast<double>(config.samples) * 1e-3, percentile(config.deviation_us, 0.5),
               percentile(config.deviation_us, 0.99), config.missed, config.dropped);
  }
  std::uint64_t pss_reads = 0;
  double pss_ns = 0;
  for (const Config& config : configs) {
    pss_reads += config.pss_reads;
    pss_ns += config.pss_ns_total;
  }
  if (pss_reads > 0)
    fmt::print("PSS reads during the runs: {}, mean {:.1f} us\n", pss_reads, pss_ns / pss_reads * 1e-3);
  fmt::print("(jitter: |measured interval - requested|; slowdown: median run time against no sampler)\n\n");
  print_breakdown();
  return 0;
}
