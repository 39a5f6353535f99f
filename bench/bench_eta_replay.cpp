// How honest was the ETA on a sweep that has run? Replays a finished run of a
// results file: at a fraction f of the run's wall time it rebuilds what the
// progress lines knew then (the trials that had ended, those running and for
// how long, those waiting in the order they were handed out) from each trial
// row's end time and wall time, asks the ETA (eta.hpp's remaining_seconds)
// and compares it with the time that was really left. Replaying one recorded
// run makes two ETA rules comparable on the same trials, which two live runs
// on a shared machine are not.
//
// Reproduce (issue 31's figures, docs/sweep.md "ETA"):
//   OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 3 build/memsweep run
//     jobs/examples/cnn-memory-study.toml -o cnn-study.h5
//   cmake --build build --target memsweep_bench_eta_replay
//   build/bench/memsweep_bench_eta_replay cnn-study.h5
// Usage: memsweep_bench_eta_replay FILE [--at F ...]

#include "memsweep/config.hpp"
#include "memsweep/eta.hpp"
#include "memsweep/results.hpp"
#include "memsweep/store.hpp"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace memsweep;

struct Replayed {
  TrialRow row;
  TrialCost cost;
  double start = 0.0;  // seconds since the run began
  double end = 0.0;
};

std::string seconds_text(std::optional<double> seconds) {
  return seconds ? fmt::format("{:.0f} s", *seconds) : std::string("unknown");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Replays a finished run of a results file and prints the ETA's error at fractions of its wall time"};
  std::string file;
  std::vector<double> fractions{0.25, 0.5, 0.75};
  app.add_option("file", file, "a results file whose last run ended")->required()->check(CLI::ExistingFile);
  app.add_option("--at", fractions, "fractions of the run's wall time");
  CLI11_PARSE(app, argc, argv);

  const ResultReader reader(file);
  const std::vector<RunRow> runs = reader.runs();
  if (runs.empty()) {
    fmt::print(stderr, "{}: no run recorded\n", file);
    return 1;
  }
  const RunRow& run = runs.back();
  SweepSpec sweep = parse_sweep(reader.header().sweep_text, reader.header().sweep_file);
  std::map<std::string, TrialSpec> planned;
  for (TrialSpec trial : sweep.trials) planned.emplace(trial.id, std::move(trial));
  const ExampleLimits limits{static_cast<std::size_t>(run.max_train_examples),
                             static_cast<std::size_t>(run.max_test_examples)};

  std::vector<Replayed> trials;
  for (const TrialRow& row : reader.trials()) {
    if (row.run != run.run) continue;  // every attempt of the run held a worker, killed ones too
    const auto spec = planned.find(get_fixed(row.trial_id));
    if (spec == planned.end()) continue;
    const double end = row.end_time - run.start_time;
    trials.push_back({row, trial_cost(spec->second, limits), end - row.wall_seconds, end});
  }
  if (trials.empty()) {
    fmt::print(stderr, "{}: run {} has no final trial rows of its sweep's trials\n", file, run.run);
    return 1;
  }
  // The order the scheduler handed them out in.
  std::sort(trials.begin(), trials.end(), [](const Replayed& a, const Replayed& b) { return a.start < b.start; });
  double last_end = 0.0;
  for (const Replayed& trial : trials) last_end = std::max(last_end, trial.end);
  const int workers = std::max(run.ranks - 1, 1);

  fmt::print("{}: {} trials on {} workers, {:.0f} s\n", file, trials.size(), workers, last_end);
  fmt::print("{:>6} {:>8} {:>6} {:>8} {:>10} {:>10} {:>8}\n", "at", "t", "ended", "running", "ETA", "true", "error");
  std::vector<double> errors;
  for (const double fraction : fractions) {
    const double now = fraction * last_end;
    std::vector<FinishedTrial> finished;
    std::vector<RunningTrial> running;
    std::vector<TrialCost> waiting;
    for (const Replayed& trial : trials) {
      if (trial.end <= now)
        finished.push_back(finished_trial(trial.cost, trial.row));
      else if (trial.start <= now)
        running.push_back({trial.cost, now - trial.start});
      else
        waiting.push_back(trial.cost);
    }
    const std::optional<double> eta = remaining_seconds(finished, running, waiting, workers);
    const double left = last_end - now;
    const std::string error = eta ? fmt::format("{:+.0f} %", 100.0 * (*eta - left) / left) : std::string("-");
    fmt::print("{:>5.0f}% {:>7.0f}s {:>6} {:>8} {:>10} {:>10} {:>8}\n", 100.0 * fraction, now, finished.size(),
               running.size(), seconds_text(eta), seconds_text(left), error);
  }
  return 0;
}
