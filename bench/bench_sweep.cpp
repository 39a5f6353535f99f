// The scheduler's figures, one MPI program (rank 0 coordinates, ranks >= 1
// work; docs/sweep.md lists the results):
//   1. efficiency: K equal sleeping trials on the workers; the sum of trial
//      times / workers against the wall time (the issue asks >= 95%);
//   2. uneven trials (log-uniform 50-800 ms): dynamic dispatch against a
//      static round-robin, runs alternating in the same job;
//   3. rank 0's CPU while it waits, from getrusage over the runs of 1,
//      against the same process asleep without MPI calls for as long;
//   4. ingest: every worker sends 256-row SampleRow chunks to rank 0 as fast
//      as MPI takes them, rank 0 appends them to a real ResultStore
//      (compressed, SWMR): rows/s and MB/s, and the same for MPI alone
//      (rank 0 drops the rows) and the store alone (no MPI).
// Medians over --repeats runs. Run:
//   mpirun --allow-run-as-root --oversubscribe -np 5 build/bench/memsweep_bench_sweep

#include "bench_numbers.hpp"
#include "memsweep/mpi_communicator.hpp"
#include "memsweep/random.hpp"
#include "memsweep/store.hpp"
#include "memsweep/sweep.hpp"
#include "sweep/protocol.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <thread>
#include <vector>

namespace {

using memsweep::Communicator;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kChunkRows = 256;     // what the sampler hands over at once
constexpr double kRowsPerRankAt10ms = 100;  // one rank sampling every 10 ms
constexpr milliseconds kUnevenShortest{50};
constexpr double kUnevenSpread = 16.0;  // longest / shortest
constexpr int kIngestDoneTag = 99;
constexpr std::size_t kCounterColumns = 4;

struct Settings {
  int repeats = 5;
  int trial_ms = 200;
  int equal_trials_per_worker = 10;
  int waiting_trial_ms = 3000;
  int uneven_trials_per_worker = 8;
  double ingest_seconds = 4.0;
  int ingest_repeats = 3;
  std::string ingest_dir = std::filesystem::temp_directory_path().string();
  bool skip_ingest = false;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

using memsweep::bench::median;

double cpu_seconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// ---- 1 to 3: sleeping trials ----------------------------------------------

// A trial that sleeps for its scripted time (ending early when stopped).
class SleepingRunner final : public memsweep::TrialRunner {
 public:
  explicit SleepingRunner(std::vector<milliseconds> durations) : durations_(std::move(durations)) {}
  memsweep::TrialRecord run(const memsweep::TrialSpec& trial, const memsweep::TrialContext& context,
                            memsweep::TrialSink& /*sink*/) override {
    const auto start = Clock::now();
    const milliseconds duration = durations_.at(static_cast<std::size_t>(trial.seed));
    while (Clock::now() - start < duration && !(context.stop && context.stop->load())) {
      std::this_thread::sleep_for(std::min<Clock::duration>(milliseconds(5), duration - (Clock::now() - start)));
    }
    memsweep::TrialRow row = memsweep::trial_row_for(trial, context.attempt);
    memsweep::set_fixed(row.status, memsweep::status_name(memsweep::TrialStatus::ok));
    row.wall_seconds = seconds_since(start);
    return memsweep::TrialRecord{row, {}};
  }

 private:
  std::vector<milliseconds> durations_;
};

class SummingSink final : public memsweep::ResultSink {
 public:
  void samples(std::span<const memsweep::SampleRow>) override {}
  void epoch(const memsweep::EpochRow&) override {}
  void trial(const memsweep::TrialRow& row, const std::string& /*message*/) override {
    trial_seconds += row.wall_seconds;
  }
  double trial_seconds = 0.0;
};

// Trial k's seed is k, which the runner uses to look up its duration.
std::vector<memsweep::TrialSpec> numbered_trials(std::size_t count) {
  std::vector<memsweep::TrialSpec> trials(count);
  for (std::size_t k = 0; k < count; ++k) {
    trials[k].seed = k;
    trials[k].id = memsweep::trial_id(trials[k]);
  }
  return trials;
}

std::vector<memsweep::PendingTrial> all_of(std::size_t count) {
  std::vector<memsweep::PendingTrial> pending(count);
  for (std::size_t k = 0; k < count; ++k) pending[k].index = k;
  return pending;
}

struct SweepRun {
  double wall = 0.0;
  double trial_seconds = 0.0;
  double cpu = 0.0;  // rank 0's
};

SweepRun timed_sweep(Communicator& comm, const std::vector<milliseconds>& durations, memsweep::Dispatch dispatch) {
  const std::vector<memsweep::TrialSpec> trials = numbered_trials(durations.size());
  SleepingRunner runner(durations);
  SummingSink sink;
  memsweep::SweepOptions options;
  options.dispatch = dispatch;
  comm.all_gather("");  // start together
  const double cpu_before = cpu_seconds();
  const auto start = Clock::now();
  memsweep::run_sweep(comm, trials, all_of(trials.size()), &runner, &sink, options);
  return {seconds_since(start), sink.trial_seconds, cpu_seconds() - cpu_before};
}

void efficiency_and_cpu(Communicator& comm, const Settings& settings) {
  const int workers = comm.size() - 1;
  const std::vector<milliseconds> durations(static_cast<std::size_t>(settings.equal_trials_per_worker * workers),
                                            milliseconds(settings.trial_ms));
  std::vector<double> efficiency, cpu_percent, idle_percent;
  for (int r = 0; r < settings.repeats; ++r) {
    const SweepRun run = timed_sweep(comm, durations, memsweep::Dispatch::dynamic);
    efficiency.push_back(run.trial_seconds / workers / run.wall);
    cpu_percent.push_back(100.0 * run.cpu / run.wall);
    // Baseline: the same process asleep for as long, no MPI call (what MPI's
    // own threads cost).
    comm.all_gather("");
    const double cpu_before = cpu_seconds();
    const auto start = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(run.wall));
    idle_percent.push_back(100.0 * (cpu_seconds() - cpu_before) / seconds_since(start));
  }
  // One long trial per worker: rank 0 does nothing but wait.
  std::vector<double> waiting_percent;
  const std::vector<milliseconds> long_trials(static_cast<std::size_t>(workers),
                                              milliseconds(settings.waiting_trial_ms));
  for (int r = 0; r < settings.repeats; ++r) {
    const SweepRun run = timed_sweep(comm, long_trials, memsweep::Dispatch::dynamic);
    waiting_percent.push_back(100.0 * run.cpu / run.wall);
  }
  if (comm.rank() != 0) return;
  fmt::print("1. efficiency: {} equal trials of {} ms on {} workers, {} runs\n", durations.size(), settings.trial_ms,
             workers, settings.repeats);
  fmt::print("   (sum of trial times / workers) / wall: median {:.1f}% (min {:.1f}%, max {:.1f}%)\n",
             100.0 * median(efficiency), 100.0 * *std::min_element(efficiency.begin(), efficiency.end()),
             100.0 * *std::max_element(efficiency.begin(), efficiency.end()));
  fmt::print("3. rank 0's CPU while coordinating those runs: median {:.2f}% of a core (max {:.2f}%);\n",
             median(cpu_percent), *std::max_element(cpu_percent.begin(), cpu_percent.end()));
  fmt::print("   while one {} ms trial per worker runs (nothing but waiting): median {:.2f}% (max {:.2f}%);\n",
             settings.waiting_trial_ms, median(waiting_percent),
             *std::max_element(waiting_percent.begin(), waiting_percent.end()));
  fmt::print("   asleep without MPI calls for as long: {:.2f}%\n", median(idle_percent));
}

void uneven(Communicator& comm, const Settings& settings) {
  const int workers = comm.size() - 1;
  const std::size_t count = static_cast<std::size_t>(settings.uneven_trials_per_worker * workers);
  std::vector<milliseconds> durations;
  double sum = 0.0, longest = 0.0;
  for (std::size_t k = 0; k < count; ++k) {
    const double u = static_cast<double>(memsweep::mix_seed(7, k) >> 11) * 0x1.0p-53;  // [0, 1)
    const double ms = static_cast<double>(kUnevenShortest.count()) * std::pow(kUnevenSpread, u);
    durations.push_back(milliseconds(static_cast<long>(ms)));
    sum += durations.back().count() / 1000.0;
    longest = std::max(longest, durations.back().count() / 1000.0);
  }
  // The same dispatch with no overhead at all: list scheduling in order
  // (the next trial to the first worker free), and trial k on worker k mod P.
  std::vector<double> free_at(static_cast<std::size_t>(workers), 0.0), static_load(free_at);
  for (std::size_t k = 0; k < count; ++k) {
    const double seconds = durations[k].count() / 1000.0;
    *std::min_element(free_at.begin(), free_at.end()) += seconds;
    static_load[k % static_load.size()] += seconds;
  }
  const double ideal_dynamic = *std::max_element(free_at.begin(), free_at.end());
  const double ideal_static = *std::max_element(static_load.begin(), static_load.end());
  std::vector<double> dynamic, round_robin, ratio;
  for (int r = 0; r < settings.repeats; ++r) {
    // Alternating, so that a slow spell of the machine hits both.
    const double d = timed_sweep(comm, durations, memsweep::Dispatch::dynamic).wall;
    const double s = timed_sweep(comm, durations, memsweep::Dispatch::static_round_robin).wall;
    dynamic.push_back(d);
    round_robin.push_back(s);
    ratio.push_back(s / d);
  }
  if (comm.rank() != 0) return;
  const double bound = std::max(longest, sum / workers);
  fmt::print("2. uneven trials: {} trials of 50-800 ms (log-uniform, sum {:.2f} s) on {} workers, {} runs each\n",
             count, sum, workers, settings.repeats);
  fmt::print("   makespan: dynamic {:.3f} s, static round-robin {:.3f} s (medians); static / dynamic {:.2f}\n",
             median(dynamic), median(round_robin), median(ratio));
  fmt::print("   the same dispatch without any overhead: dynamic {:.3f} s, static {:.3f} s\n", ideal_dynamic,
             ideal_static);
  fmt::print("   lower bound max(longest, sum / workers) = {:.3f} s: dynamic at {:.1f}% of it\n", bound,
             100.0 * median(dynamic) / bound);
}

// ---- 4: ingest --------------------------------------------------------------

// Rows like a sampler's, every one different: time going up, RSS and the
// node's memory on a random walk of pages, a few counters growing by uneven
// steps, the unused counter slots -1 (the store does not write them).
class PlausibleSamples {
 public:
  explicit PlausibleSamples(int rank) : rank_(rank), rows_(kChunkRows) {
    for (memsweep::SampleRow& row : rows_) {
      memsweep::set_fixed(row.trial_id, fmt::format("{:012x}", 0xabcdef000000ULL + static_cast<unsigned>(rank)));
      row.rank = rank;
      row.counters.fill(-1);
    }
  }

  std::span<const memsweep::SampleRow> next() {
    constexpr std::int64_t kPage = 4096;
    for (memsweep::SampleRow& row : rows_) {
      const std::uint64_t noise = memsweep::mix_seed(static_cast<std::uint64_t>(rank_), index_);
      rss_ += kPage * (static_cast<std::int64_t>(noise % 9) - 4);
      sys_used_ += kPage * (static_cast<std::int64_t>((noise >> 8) % 33) - 16);
      row.epoch = static_cast<std::int32_t>(index_ / 6000);
      row.t = 0.01 * static_cast<double>(index_);
      row.rss = rss_;
      row.anon_rss = rss_ - (30LL << 20);
      row.pss = rss_ - (10LL << 20);
      row.sys_used = sys_used_;
      row.sys_total = 8LL << 30;
      row.sys_available = (8LL << 30) - sys_used_;
      row.sys_active = sys_used_ / 2 + kPage * static_cast<std::int64_t>((noise >> 16) % 64);
      for (std::size_t c = 0; c < kCounterColumns; ++c) {
        counters_[c] += 10000 + static_cast<std::int64_t>((noise >> (24 + 8 * c)) % 256) * 37;
        row.counters[c] = counters_[c];
      }
      ++index_;
    }
    return rows_;
  }

 private:
  int rank_;
  std::vector<memsweep::SampleRow> rows_;
  std::uint64_t index_ = 0;
  std::int64_t rss_ = 200LL << 20;
  std::int64_t sys_used_ = 3LL << 30;
  std::array<std::int64_t, kCounterColumns> counters_{};
};

memsweep::ResultStore new_store(const std::filesystem::path& path, int ranks) {
  memsweep::FileHeader header;
  header.sweep_name = "bench-ingest";
  header.sweep_hash = "0000000000000000";
  header.ranks = ranks;
  header.start_time = "2024-01-01T00:00:00Z";
  header.sampler_interval_ms = 10;
  for (std::size_t c = 0; c < kCounterColumns; ++c) header.counter_columns.push_back(fmt::format("counter_{}", c));
  return memsweep::ResultStore::create(path, header, /*replace=*/true, memsweep::StoreOptions{});
}

struct IngestRun {
  double rows = 0.0;
  double seconds = 0.0;
  double file_bytes = 0.0;
};

// Workers send for `seconds`; rank 0 receives until each says it is done.
IngestRun ingest_over_mpi(Communicator& comm, const Settings& settings, bool write) {
  namespace detail = memsweep::sweep::detail;
  IngestRun result;
  const std::filesystem::path path = std::filesystem::path(settings.ingest_dir) / "memsweep-bench-ingest.h5";
  comm.all_gather("");
  if (comm.rank() != 0) {
    PlausibleSamples samples(comm.rank());
    const auto start = Clock::now();
    while (seconds_since(start) < settings.ingest_seconds) {
      comm.send(0, detail::tag::kSamples, detail::payload_of(samples.next()));
    }
    detail::send_empty(comm, 0, kIngestDoneTag);
    return result;
  }
  std::optional<memsweep::ResultStore> store;
  if (write) store.emplace(new_store(path, comm.size()));
  std::vector<memsweep::SampleRow> rows;
  int done = 0;
  const auto start = Clock::now();
  while (done < comm.size() - 1) {
    std::optional<memsweep::Message> message = comm.receive(memsweep::kAnySource, milliseconds(1000));
    if (!message) continue;
    if (message->tag == kIngestDoneTag) {
      ++done;
      continue;
    }
    detail::payload_rows(*message, rows);
    if (store) store->append_samples(rows);
    result.rows += static_cast<double>(rows.size());
  }
  if (store) {
    store->close();
    result.file_bytes = static_cast<double>(std::filesystem::file_size(path));
    std::filesystem::remove(path);
  }
  result.seconds = seconds_since(start);
  return result;
}

// Rank 0 alone appends the chunk for as long, no MPI.
IngestRun ingest_store_only(Communicator& comm, const Settings& settings) {
  IngestRun result;
  comm.all_gather("");
  if (comm.rank() != 0) return result;
  const std::filesystem::path path = std::filesystem::path(settings.ingest_dir) / "memsweep-bench-store.h5";
  memsweep::ResultStore store = new_store(path, 1);
  PlausibleSamples samples(1);
  const auto start = Clock::now();
  while (seconds_since(start) < settings.ingest_seconds) {
    store.append_samples(samples.next());
    result.rows += kChunkRows;
  }
  store.close();
  result.seconds = seconds_since(start);
  result.file_bytes = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  return result;
}

void ingest(Communicator& comm, const Settings& settings) {
  constexpr double kMB = 1e6;
  const double row_bytes = sizeof(memsweep::SampleRow);
  std::vector<double> full, mpi_only, store_only, compression;
  for (int r = 0; r < settings.ingest_repeats; ++r) {
    const IngestRun f = ingest_over_mpi(comm, settings, true);
    const IngestRun m = ingest_over_mpi(comm, settings, false);
    const IngestRun s = ingest_store_only(comm, settings);
    if (comm.rank() != 0) continue;
    full.push_back(f.rows / f.seconds);
    mpi_only.push_back(m.rows / m.seconds);
    store_only.push_back(s.rows / s.seconds);
    compression.push_back(f.rows * row_bytes / f.file_bytes);
  }
  if (comm.rank() != 0) return;
  const auto line = [&](const char* what, double rows_per_second) {
    fmt::print("   {:<34} {:>10.0f} rows/s {:>8.1f} MB/s\n", what, rows_per_second, rows_per_second * row_bytes / kMB);
  };
  fmt::print("4. ingest: {} workers send {}-row chunks ({}-byte rows) for {:.0f} s; medians of {} runs\n",
             comm.size() - 1, kChunkRows, sizeof(memsweep::SampleRow), settings.ingest_seconds,
             settings.ingest_repeats);
  line("MPI + ResultStore (compressed):", median(full));
  line("MPI only (rank 0 drops the rows):", median(mpi_only));
  line("ResultStore only (no MPI):", median(store_only));
  fmt::print("   file: {:.1f}x smaller than the rows (deflate, {} counter columns)\n", median(compression),
             kCounterColumns);
  fmt::print("   at 10 ms sampling (100 rows/s per rank) rank 0 follows {:.0f} ranks\n",
             median(full) / kRowsPerRankAt10ms);
}

}  // namespace

int main(int argc, char** argv) {
  const memsweep::MpiSession session(&argc, &argv);
  const std::unique_ptr<Communicator> comm = memsweep::make_mpi_communicator(MPI_COMM_WORLD);

  Settings settings;
  CLI::App app("memsweep's scheduler benchmarks (run under mpirun, 2 ranks or more)");
  app.add_option("--repeats", settings.repeats, "runs of 1-3 (medians)");
  app.add_option("--trial-ms", settings.trial_ms, "length of the equal trials");
  app.add_option("--trials-per-worker", settings.equal_trials_per_worker, "equal trials per worker");
  app.add_option("--waiting-trial-ms", settings.waiting_trial_ms, "length of the trials rank 0 only waits for");
  app.add_option("--uneven-trials-per-worker", settings.uneven_trials_per_worker, "uneven trials per worker");
  app.add_option("--ingest-seconds", settings.ingest_seconds, "length of one ingest run");
  app.add_option("--ingest-repeats", settings.ingest_repeats, "ingest runs (medians)");
  app.add_option("--ingest-dir", settings.ingest_dir, "where the ingest benchmark writes its file");
  app.add_flag("--skip-ingest", settings.skip_ingest, "only 1-3");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return comm->rank() == 0 ? app.exit(error) : 1;
  }
  if (comm->size() < 2) {
    fmt::print(stderr, "memsweep_bench_sweep needs 2 ranks or more (mpirun -np 5 ...)\n");
    return 1;
  }
  if (comm->rank() == 0) {
    fmt::print("memsweep scheduler benchmark: {} ranks ({} workers), {}, {} cores\n", comm->size(), comm->size() - 1,
               comm->library_version(), std::thread::hardware_concurrency());
  }
  efficiency_and_cpu(*comm, settings);
  uneven(*comm, settings);
  if (!settings.skip_ingest) ingest(*comm, settings);
  return 0;
}
