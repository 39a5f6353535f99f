// Does `memsweep watch` slow the writer down? Rank 0's ingest rate (as in
// bench_store.cpp: /samples rows appended through ResultStore, SWMR, the
// store's own buffering and flush policy, messages of 256 samples from 64
// workers in turn, plus a trial row whenever a worker's trial has 2,048
// samples) with no watcher, with one, and with four (a login node with
// several users), each `memsweep watch FILE --interval 0.2` started right
// after the file is created, printing plain snapshots to a file until the
// writer closes it. Variants rotate over the rounds; medians, and the ratio
// to no watcher in the same invocation. Each watcher's snapshots and its last
// trial count prove it read the file; its CPU time comes from wait4().
// Optionally (--sweep-rounds), a real sweep's wall time (quickstart on 2
// ranks) with and without a watcher.
//
// Reproduce:
//   cmake --build build --target memsweep memsweep_bench_watch
//   build/bench/memsweep_bench_watch 1000000 5 /tmp --sweep-rounds 3
// Usage: memsweep_bench_watch [rows per run] [rounds] [folder] [--memsweep PATH] [--interval S] [--sweep-rounds N]

#include "bench_numbers.hpp"
#include "memsweep/config.hpp"
#include "memsweep/results.hpp"
#include "memsweep/store.hpp"
#include "sample_stream.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using memsweep::bench::kRowsPerMessage;
using memsweep::bench::kWorkers;

constexpr std::size_t kDefaultRows = 1'000'000;
constexpr int kDefaultRounds = 5;
constexpr double kDefaultInterval = 0.2;  // s between a watcher's snapshots
// A worker's trial ends (and its row is appended, which flushes the file)
// after this many samples: 20 s at 10 ms.
constexpr std::size_t kSamplesPerTrial = 2048;
// How long watchers may take to read the rest and print their last snapshot
// once the writer closed the file, before they are killed.
constexpr auto kWatcherExitTimeout = std::chrono::seconds(120);
const std::vector<int> kWatcherCounts{0, 1, 4};

// ---- the sweep the file holds ----

// A sweep of `trials` distinct trials (one per batch size), so that watch
// names, counts and summarises real trials.
std::string sweep_text(std::size_t trials) {
  std::string sizes;
  for (std::size_t i = 0; i < trials; ++i) sizes += fmt::format("{}{}", i == 0 ? "" : ", ", 8 + i);
  return fmt::format(
      "[sweep]\nname = \"bench-watch\"\n[sampler]\ninterval_ms = 10\n[defaults]\ndataset = \"synthetic\"\n"
      "model = \"mlp\"\nhidden = [256, 128]\nepochs = 5\n[grid]\nbatch_size = [{}]\n",
      sizes);
}

struct BenchSweep {
  memsweep::SweepSpec spec;
  memsweep::FileHeader header;
};

BenchSweep bench_sweep(std::size_t rows) {
  // Every worker starts a trial, then one more per kSamplesPerTrial of its rows.
  const std::size_t trials = kWorkers + rows / kSamplesPerTrial + 1;
  BenchSweep sweep;
  const std::string text = sweep_text(trials);
  sweep.spec = memsweep::parse_sweep(text, "bench-watch.toml");
  sweep.header = memsweep::bench::sample_stream_header(sweep.spec.name);
  sweep.header.sweep_file = "bench-watch.toml";
  sweep.header.sweep_text = text;
  sweep.header.sweep_hash = memsweep::sweep_hash(sweep.spec);
  sweep.header.planned_trials = static_cast<std::int64_t>(sweep.spec.trials.size());
  sweep.header.hosts.assign(kWorkers + 1, "bench-node");
  return sweep;
}

// ---- watchers ----

struct Watcher {
  pid_t pid = -1;
  std::filesystem::path out;
};

// `memsweep watch FILE --interval S [extra]`, its stdout and stderr to `out`.
Watcher start_watcher(const std::string& memsweep, const std::filesystem::path& file, double interval,
                      const std::filesystem::path& out, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args{memsweep, "watch", file.string(), "--interval", fmt::format("{}", interval)};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    const int stdout_fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int null = ::open("/dev/null", O_RDWR);
    if (stdout_fd < 0 || null < 0) ::_exit(126);
    ::dup2(null, STDIN_FILENO);
    ::dup2(stdout_fd, STDOUT_FILENO);
    ::dup2(stdout_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return {pid, out};
}

struct WatcherResult {
  int exit_status = -1;  // -1: killed (did not end in time) or ended by a signal
  double cpu_seconds = 0.0;
  int snapshots = 0;
  std::optional<long long> trials_done;  // from its last snapshot's counts line
};

// Snapshots begin with the title line; the counts line says what it read.
WatcherResult read_watcher_output(const std::filesystem::path& out) {
  WatcherResult result;
  std::ifstream in(out);
  static const std::regex kCounts(R"(^trials \d+/\d+: done (\d+), )");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("memsweep watch  ")) ++result.snapshots;
    std::smatch match;
    if (std::regex_search(line, match, kCounts)) result.trials_done = std::stoll(match[1]);
  }
  return result;
}

WatcherResult wait_for_watcher(const Watcher& watcher) {
  const auto deadline = Clock::now() + kWatcherExitTimeout;
  int status = 0;
  rusage usage{};
  pid_t ended = 0;
  while ((ended = ::wait4(watcher.pid, &status, WNOHANG, &usage)) == 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  bool killed = false;
  if (ended == 0) {
    ::kill(watcher.pid, SIGKILL);
    ::wait4(watcher.pid, &status, 0, &usage);
    killed = true;
  }
  WatcherResult result = read_watcher_output(watcher.out);
  result.exit_status = !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  return result;
}

// ---- one run ----

double cpu_seconds_of_self() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

struct RunResult {
  double seconds = 0.0;
  double writer_cpu_seconds = 0.0;
  std::size_t trial_rows = 0;
  std::vector<WatcherResult> watchers;
};

// Appends `rows` sample rows from the pool as the workers send them; each
// worker's rows carry its current trial's id, and a trial's row is appended
// when it has kSamplesPerTrial samples.
RunResult run_once(const BenchSweep& sweep, const std::vector<memsweep::SampleRow>& pool, std::size_t rows,
                   int watcher_count, const std::string& memsweep, double interval, const std::filesystem::path& file) {
  std::filesystem::remove(file);
  const std::vector<memsweep::TrialSpec> trials = sweep.spec.trials.list();
  std::vector<std::size_t> trial_of_worker(kWorkers);
  std::vector<std::size_t> samples_of_worker(kWorkers, 0);
  for (std::size_t w = 0; w < kWorkers; ++w) trial_of_worker[w] = w;
  std::size_t next_trial = kWorkers;
  std::vector<memsweep::SampleRow> message(kRowsPerMessage);

  RunResult result;
  std::vector<Watcher> watchers;
  const double cpu_before = cpu_seconds_of_self();
  const auto start = Clock::now();
  {
    memsweep::ResultStore store =
        memsweep::ResultStore::create(file, sweep.header, false, memsweep::StoreOptions{true});
    for (int i = 0; i < watcher_count; ++i)
      watchers.push_back(start_watcher(memsweep, file, interval, file.string() + fmt::format(".watcher-{}.txt", i)));
    for (std::size_t written = 0; written < rows; written += kRowsPerMessage) {
      const std::size_t offset = written % pool.size();
      const std::size_t count = std::min(kRowsPerMessage, rows - written);
      const auto worker = static_cast<std::size_t>(pool[offset].rank - 1);
      const std::string& id = trials[trial_of_worker[worker]].id;
      std::copy_n(pool.begin() + static_cast<std::ptrdiff_t>(offset), count, message.begin());
      for (std::size_t i = 0; i < count; ++i) memsweep::set_fixed(message[i].trial_id, id);
      store.append_samples(std::span(message).first(count));

      samples_of_worker[worker] += count;
      if (samples_of_worker[worker] >= kSamplesPerTrial && next_trial < trials.size()) {
        memsweep::TrialRow row = memsweep::trial_row_for(trials[trial_of_worker[worker]], 0);
        memsweep::set_fixed(row.status, "ok");
        row.rank = static_cast<std::int32_t>(worker + 1);
        memsweep::set_fixed(row.host, "bench-node");
        row.wall_seconds = 0.01 * static_cast<double>(samples_of_worker[worker]);
        row.rss_peak = message[count - 1].rss;
        row.epochs_done = row.epochs;
        row.samples = samples_of_worker[worker];
        store.append_trial(row);
        ++result.trial_rows;
        trial_of_worker[worker] = next_trial++;
        samples_of_worker[worker] = 0;
      }
    }
    store.close();
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result.writer_cpu_seconds = cpu_seconds_of_self() - cpu_before;
  for (const Watcher& watcher : watchers) {
    result.watchers.push_back(wait_for_watcher(watcher));
    std::filesystem::remove(watcher.out);
  }
  std::filesystem::remove(file);
  return result;
}

// ---- a real sweep with and without a watcher ----

// Wall time of `mpirun -np 2 memsweep run quickstart.toml`; when `watched`,
// with a watcher started before it (--wait: it follows the file from the
// moment the run creates it).
double sweep_seconds(const std::string& memsweep, const std::filesystem::path& folder, bool watched, double interval) {
  const std::filesystem::path out = folder / fmt::format("memsweep-bench-watch-sweep-{}.h5", ::getpid());
  std::filesystem::remove(out);
  std::optional<Watcher> watcher;
  if (watched) watcher = start_watcher(memsweep, out, interval, out.string() + ".watcher.txt", {"--wait"});
  const std::string command = fmt::format(
      "cd '{}' && OMP_NUM_THREADS=1 '{}' --allow-run-as-root --oversubscribe -np 2 '{}' run '{}/jobs/examples/"
      "quickstart.toml' -o '{}' -q --threads 1 > /dev/null 2>&1",
      folder.string(), MEMSWEEP_MPIEXEC, memsweep, MEMSWEEP_SOURCE_DIR, out.string());
  const auto start = Clock::now();
  const int status = std::system(command.c_str());
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (watcher) {
    const WatcherResult result = wait_for_watcher(*watcher);
    std::filesystem::remove(watcher->out);
    if (result.snapshots == 0) throw std::runtime_error("the sweep's watcher printed no snapshot");
  }
  std::filesystem::remove(out);
  if (status != 0) throw std::runtime_error(fmt::format("the sweep failed (status {}): {}", status, command));
  return seconds;
}

// ---- statistics ----

using memsweep::bench::median;

std::string variant_name(int watchers) {
  return watchers == 0 ? "no watcher" : watchers == 1 ? "1 watcher" : fmt::format("{} watchers", watchers);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"memsweep watch against the writer: ingest rate with 0, 1 and 4 watchers on the file"};
  std::size_t rows = kDefaultRows;
  int rounds = kDefaultRounds;
  std::filesystem::path folder = std::filesystem::temp_directory_path();
  std::string memsweep = MEMSWEEP_EXECUTABLE;
  double interval = kDefaultInterval;
  int sweep_rounds = 0;
  app.add_option("rows", rows, "Sample rows appended per run")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("rounds", rounds, "Rounds (each runs every variant once)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("folder", folder, "Folder for the files")->capture_default_str()->check(CLI::ExistingDirectory);
  app.add_option("--memsweep", memsweep, "The memsweep executable")->capture_default_str();
  app.add_option("--interval", interval, "Seconds between a watcher's snapshots")->capture_default_str();
  app.add_option("--sweep-rounds", sweep_rounds,
                 "Also time a real sweep (quickstart, 2 ranks) with and without a watcher this many times")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const BenchSweep sweep = bench_sweep(rows);
  const std::vector<memsweep::SampleRow> pool = memsweep::bench::realistic_rows();
  const std::filesystem::path file = folder / fmt::format("memsweep-bench-watch-{}.h5", ::getpid());
  const std::size_t variants = kWatcherCounts.size();
  std::vector<std::vector<RunResult>> results(variants);
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t j = 0; j < variants; ++j) {
      const std::size_t i = (j + static_cast<std::size_t>(round)) % variants;  // rotate the order
      results[i].push_back(run_once(sweep, pool, rows, kWatcherCounts[i], memsweep, interval, file));
    }
  }

  const unsigned cores = std::thread::hardware_concurrency();
  fmt::print(
      "/samples append through ResultStore, one process: {} rows per run (4 counters) in messages of {} rows from {} "
      "workers in turn, a trial row (flushed at once) per {} samples of a worker ({} trial rows per run), SWMR, the "
      "store's flush policy; {} rounds, variants in rotating order; files in {}\n"
      "watchers: `memsweep watch FILE --interval {}` started right after create, stdout to a file (plain "
      "snapshots); they read until the writer closes, then print the summary and exit.\n"
      "This machine has {} cores: the watchers share them with the writer.\n\n",
      rows, kRowsPerMessage, kWorkers, kSamplesPerTrial, results[0].front().trial_rows, rounds, folder.string(),
      interval, cores);
  fmt::print("{:<12} {:>9} {:>12} {:>6} {:>11} {:>17} {:>18} {:>14}\n", "variant", "rows/s", "min..max s", "ratio",
             "writer CPU", "snapshots/watcher", "watcher CPU s", "trials seen");
  const double none_rate = static_cast<double>(rows) / median([&] {
                             std::vector<double> s;
                             for (const RunResult& r : results[0]) s.push_back(r.seconds);
                             return s;
                           }());
  for (std::size_t i = 0; i < variants; ++i) {
    std::vector<double> seconds;
    std::vector<double> writer_cpu;
    std::vector<double> snapshots;
    std::vector<double> watcher_cpu;
    std::size_t saw_all = 0;
    std::size_t watcher_runs = 0;
    int failures = 0;
    for (const RunResult& run : results[i]) {
      seconds.push_back(run.seconds);
      writer_cpu.push_back(run.writer_cpu_seconds / run.seconds);
      for (const WatcherResult& watcher : run.watchers) {
        snapshots.push_back(watcher.snapshots);
        watcher_cpu.push_back(watcher.cpu_seconds);
        ++watcher_runs;
        saw_all += watcher.trials_done == static_cast<long long>(run.trial_rows) ? 1 : 0;
        failures += watcher.exit_status == 0 ? 0 : 1;
      }
    }
    const double s = median(seconds);
    const double rate = static_cast<double>(rows) / s;
    const auto [low, high] = std::minmax_element(seconds.begin(), seconds.end());
    const std::string watcher_columns =
        watcher_runs == 0 ? fmt::format("{:>17} {:>18} {:>14}", "-", "-", "-")
                          : fmt::format("{:>17.0f} {:>18.2f} {:>14}", median(snapshots), median(watcher_cpu),
                                        fmt::format("{}/{} all", saw_all, watcher_runs));
    fmt::print("{:<12} {:>9.0f} {:>5.2f}..{:<5.2f} {:>6.2f} {:>10.0f}% {}{}\n", variant_name(kWatcherCounts[i]), rate,
               *low, *high, rate / none_rate, 100.0 * median(writer_cpu), watcher_columns,
               failures > 0 ? fmt::format("  ({} watcher runs did not exit 0)", failures) : "");
  }
  fmt::print(
      "\nrows/s and min..max: from create to close, medians over the rounds; ratio: rows/s over the no-watcher "
      "median of this invocation; writer CPU: the writer's CPU time over its wall time; snapshots/watcher and "
      "watcher CPU s: medians per watcher and run (CPU from wait4, including the final read and summary after the "
      "writer closed); trials seen: watcher runs whose last snapshot counted every trial row written.\n");

  if (sweep_rounds > 0) {
    std::vector<double> plain;
    std::vector<double> watched;
    for (int round = 0; round < sweep_rounds; ++round) {
      for (int j = 0; j < 2; ++j) {
        const bool with_watcher = (j + round) % 2 == 1;  // alternate which goes first
        (with_watcher ? watched : plain).push_back(sweep_seconds(memsweep, folder, with_watcher, interval));
      }
    }
    const auto range = [](const std::vector<double>& v) {
      const auto [low, high] = std::minmax_element(v.begin(), v.end());
      return fmt::format("{:.2f}..{:.2f}", *low, *high);
    };
    fmt::print(
        "\nA real sweep: mpirun -np 2 memsweep run jobs/examples/quickstart.toml --threads 1 (OMP_NUM_THREADS=1), {} "
        "rounds, wall time from mpirun's start to its end\n",
        sweep_rounds);
    fmt::print("{:<12} {:>9} {:>11} {:>6}\n", "variant", "median s", "min..max s", "ratio");
    fmt::print("{:<12} {:>9.2f} {:>11} {:>6.2f}\n", "no watcher", median(plain), range(plain), 1.0);
    fmt::print("{:<12} {:>9.2f} {:>11} {:>6.2f}\n", "1 watcher", median(watched), range(watched),
               median(watched) / median(plain));
  }
  return 0;
}
