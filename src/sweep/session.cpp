// One `memsweep run` on every rank (session.hpp). Each step that can fail
// before the sweep is agreed on: every rank learns rank 0's outcome (or the
// first failing rank's) and stops alike, so that no rank waits in a
// collective for one that left; rank 0 alone prints the message. What the
// ranks tell each other goes through protocol.hpp's session messages.

#include "memsweep/session.hpp"

#include "common/duration_text.hpp"
#include "memsweep/error.hpp"
#include "memsweep/run_record.hpp"
#include "memsweep/stop_signals.hpp"
#include "sweep/launcher_watch.hpp"
#include "sweep/protocol.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

namespace memsweep {
namespace {

using sweep::detail::RunRowMessage;
using sweep::detail::SetupMessage;
using sweep::detail::StepOutcome;

// The session ends before the sweep's end on every rank alike, with
// `outcome` (rank 0 prints its message).
struct SessionEnded {
  StepOutcome outcome;
};

// A step's exception as the status every rank exits with.
StepOutcome outcome_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& input) {
    return {exit_status::kBadInput, input.what()};
  } catch (const std::exception& other) {
    return {exit_status::kFailure, other.what()};
  }
}

// Runs `step` on this rank, its exception caught as an outcome.
StepOutcome attempt(const std::function<void()>& step) {
  try {
    step();
    return {};
  } catch (const std::exception&) {
    return outcome_of(std::current_exception());
  }
}

// Collective: ends the session on every rank when any rank's `local` is not
// ok, with the first such rank's outcome, named by its rank and, when
// `hosts` are known, its node (one node of many may lack what the others have).
void agree_on(Communicator& comm, const StepOutcome& local, const std::vector<std::string>& hosts = {}) {
  const std::vector<std::string> outcomes = comm.all_gather(sweep::detail::encode(local));
  for (std::size_t rank = 0; rank < outcomes.size(); ++rank) {
    StepOutcome outcome = sweep::detail::decode_step_outcome(outcomes[rank]);
    if (outcome.ok()) continue;
    if (rank > 0 && rank < hosts.size())
      outcome.message = fmt::format("rank {} on {}: {}", rank, hosts[rank], outcome.message);
    else if (rank > 0)
      outcome.message = fmt::format("rank {}: {}", rank, outcome.message);
    throw SessionEnded{outcome};
  }
}

// Collective: rank 0's outcome of a step only it runs, on every rank.
void end_unless_ok(const StepOutcome& outcome) {
  if (!outcome.ok()) throw SessionEnded{outcome};
}

// A rank's error during the sweep, with other ranks: they may be waiting
// for this one, so the job ends rather than hangs.
[[noreturn]] void abort_job(Communicator& comm, const std::exception& error) {
  fmt::print(stderr, "memsweep: rank {}: error during the sweep: {}\n", comm.rank(), error.what());
  comm.abort(exit_status::kFailure);
  std::abort();  // not reached: abort() ends the job (the compiler cannot see a virtual [[noreturn]])
}

// "5 ok, 1 failed", or "none".
std::string status_counts(const SweepResult& result) {
  std::vector<std::string> parts;
  for (const auto& [status, count] : result.by_status) parts.push_back(fmt::format("{} {}", count, status));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

class Session {
 public:
  Session(Communicator& comm, SessionSteps& steps) : comm_(comm), steps_(steps), root_(comm.rank() == 0) {}

  int run() {
    const std::atomic<bool>& stop = install_stop_signals();
    load_on_every_rank();
    hosts_ = comm_.all_gather(comm_.host_name());
    // Notes before the sweep; the trials' progress needs the number left,
    // known once rank 0 has read the file. Notes count no trials (10^6
    // placeholder costs on every rank took time and memory).
    ProgressReporter notes(std::cerr, steps_.verbosity(), std::size_t{0}, workers());
    if (root_)
      for (const std::string& note : steps_.notes()) notes.note(note);
    agree_on_run_row(notes);
    agree_on(comm_, attempt([&] { steps_.check_datasets(run_); }), hosts_);
    agree_on(comm_, attempt([&] { steps_.assign_gpus(hosts_, comm_.rank()); }), hosts_);
    const SetupMessage setup = agree_on_results(notes);
    const std::unique_ptr<TrialRunner> runner = runner_if_training(setup, notes);
    const auto started = std::chrono::steady_clock::now();
    const SweepResult result = sweep(runner.get(), setup.run_index, stop);
    StepOutcome final_status;
    if (root_) {
      final_status = finish(result, std::chrono::steady_clock::now() - started);
      steps_.ending(final_status.status, trials_left_);
    }
    // A silent rank takes part in nothing more: the ranks cannot agree, so
    // the job ends here (the file is closed), and with it the silent rank.
    if (root_ && !result.silent_ranks.empty()) comm_.abort(final_status.status);
    const StepOutcome agreed = agree_on_exit_status(final_status);
    // A message: rank 0's file failed (sweep()), and it has not printed it yet.
    if (!agreed.message.empty()) throw SessionEnded{agreed};
    return agreed.status;
  }

 private:
  int workers() const { return comm_.size() > 1 ? comm_.size() - 1 : 1; }

  // Every rank read the options and the sweep file itself: they agree on
  // the sweep or all stop.
  void load_on_every_rank() {
    std::string hash;
    agree_on(comm_, attempt([&] { hash = steps_.load(); }));
    try {
      check_same_sweep(comm_, hash);
    } catch (const InputError& error) {
      throw SessionEnded{{exit_status::kBadInput, error.what()}};
    }
  }

  // What the run measures with: on a resume, what the file's last run did.
  void agree_on_run_row(ProgressReporter& notes) {
    std::string bytes;
    if (root_) {
      RunRowMessage decision;
      decision.outcome = attempt([&] { decision.run = steps_.decide_run_row(comm_.size(), hosts_, notes); });
      bytes = sweep::detail::encode(decision);
    }
    comm_.broadcast(bytes);
    const RunRowMessage decision = sweep::detail::decode_run_row_message(bytes);
    end_unless_ok(decision.outcome);
    run_ = decision.run;
  }

  // Rank 0 opens the file; every rank learns whether that worked, and the
  // run's index and counter columns that its rows carry.
  SetupMessage agree_on_results(ProgressReporter& notes) {
    std::string bytes;
    if (root_) {
      SetupMessage setup;
      setup.outcome = attempt([&] { opened_ = steps_.open_results(run_, comm_, hosts_, notes); });
      setup.run_index = opened_.run_index;
      setup.counter_columns = opened_.counter_columns;
      bytes = sweep::detail::encode(setup);
    }
    comm_.broadcast(bytes);
    SetupMessage setup = sweep::detail::decode_setup_message(bytes);
    end_unless_ok(setup.outcome);
    counter_columns_ = setup.counter_columns.size();
    return setup;
  }

  std::unique_ptr<TrialRunner> runner_if_training(const SetupMessage& setup, ProgressReporter& notes) {
    if (root_ && comm_.size() > 1) return nullptr;
    const RunnerSetup runner_setup{.counter_columns = setup.counter_columns,
                                   .flush_interval = flush_interval_of(run_),
                                   .notes = root_ ? &notes : nullptr};
    return steps_.make_runner(run_, runner_setup);
  }

  SweepOptions sweep_options(std::int32_t run_index, const std::atomic<bool>& stop, ProgressReporter& progress) const {
    SweepOptions options;
    options.run = run_index;
    if (run_.mem_budget >= 0) options.mem_budget_bytes = static_cast<std::uint64_t>(run_.mem_budget);
    options.flush_interval = flush_interval_of(run_);
    // Workers compress whole chunks of samples; a rank alone writes rows.
    if (comm_.size() > 1)
      options.sample_chunks =
          worker_sample_chunk_format(counter_columns_, steps_.sweep().sampler.interval_ms, options.flush_interval);
    options.worker_silence = steps_.worker_silence();
    if (run_.trial_timeout > 0) options.trial_timeout = limit_milliseconds(run_.trial_timeout);
    options.stop = &stop;
    options.progress = root_ ? &progress : nullptr;
    if (steps_.sweep().search) {
      options.search = &*steps_.sweep().search;
      if (root_) options.search_history = &opened_.search_history;
    }
    return options;
  }

  // Only rank 0 reports; the others would cost trials for nothing. A
  // search's trials are made as it goes: its count is what the searches
  // may use at most, and its ETA takes them as alike.
  ProgressReporter progress_reporter(const ExampleLimits& limits) const {
    const SweepSpec& sweep = steps_.sweep();
    if (sweep.search)
      return ProgressReporter(
          std::cerr, steps_.verbosity(),
          sweep.trials.size() * sweep.search->limits.size() * static_cast<std::size_t>(sweep.search->max_trials),
          workers());
    return ProgressReporter(std::cerr, steps_.verbosity(),
                            root_ ? waiting_costs(sweep.trials, opened_.pending, limits) : WaitingCosts{}, workers(),
                            limits);
  }

  SweepResult sweep(TrialRunner* runner, std::int32_t run_index, const std::atomic<bool>& stop) {
    const ExampleLimits limits{static_cast<std::size_t>(run_.max_train_examples),
                               static_cast<std::size_t>(run_.max_test_examples)};
    ProgressReporter progress = progress_reporter(limits);
    try {
      return run_sweep(comm_, steps_.sweep().trials, opened_.pending, runner, opened_.sink,
                       sweep_options(run_index, stop, progress));
    } catch (const SinkFailure& failure) {
      const StepOutcome outcome = outcome_of(failure.cause());
      if (comm_.size() == 1) {
        steps_.ending(outcome.status, std::nullopt);
        std::rethrow_exception(failure.cause());  // printed and mapped by main
      }
      // Every worker has returned from the sweep and waits for the status
      // (run()); with this one's message, they end the session with it.
      agree_on_exit_status(outcome);
      throw SessionEnded{outcome};
    } catch (const std::exception& error) {
      if (comm_.size() == 1) throw;
      abort_job(comm_, error);
    }
  }

  // Rank 0: the file closed, the last lines, and the exit status.
  StepOutcome finish(const SweepResult& result, std::chrono::steady_clock::duration took) {
    // A silent rank's attempt is `interrupted` and ran again: only the
    // interrupted rows beyond those leave a trial to resume.
    const auto interrupted = result.by_status.find("interrupted");
    const std::size_t left_interrupted =
        (interrupted == result.by_status.end() ? 0 : interrupted->second) - result.silent_attempts;
    const bool complete = result.not_started == 0 && left_interrupted == 0;
    trials_left_ = result.not_started + left_interrupted;
    steps_.close_results(complete);
    fmt::print(stderr, "memsweep: sweep \"{}\": {} trials run in {:.1f} s ({}); results in {}\n", steps_.sweep().name,
               result.finished, std::chrono::duration<double>(took).count(), status_counts(result),
               steps_.results_path());
    if (!result.silent_ranks.empty()) return silent_ranks_outcome(result, complete, left_interrupted);
    if (!result.stopped || complete) return {};
    fmt::print(stderr,
               "memsweep: stopped by signal {} with {} trials not started (exit status {}); continue with:\n  {}\n",
               stop_signal_number(), result.not_started, exit_status::kStopped,
               continue_command(run_, steps_.results_path(),
                                CommandContext{::geteuid() == 0, std::thread::hardware_concurrency()}));
    return {exit_status::kStopped, ""};
  }

  // The job ends without the silent ranks: what happened, and what is left.
  StepOutcome silent_ranks_outcome(const SweepResult& result, bool complete, std::size_t left_interrupted) {
    const std::string ranks = fmt::format("{}", fmt::join(result.silent_ranks, ", "));
    const bool one = result.silent_ranks.size() == 1;
    fmt::print(stderr,
               "memsweep: rank{} {} went silent (stopped or hung: nothing from {} for over {:.0f} s, past the time "
               "limit of the trial {} ran): {} attempt{} recorded interrupted and handed to another rank; ending "
               "the job (exit status {})\n",
               one ? "" : "s", ranks, one ? "it" : "them",
               std::chrono::duration<double>(steps_.worker_silence()).count(), one ? "it" : "each",
               result.silent_attempts, result.silent_attempts == 1 ? "" : "s", exit_status::kRankSilent);
    if (complete)
      fmt::print(stderr, "memsweep: every trial has a final status\n");
    else
      fmt::print(stderr, "memsweep: {} trials without a final status; continue with:\n  {}\n",
                 result.not_started + left_interrupted,
                 continue_command(run_, steps_.results_path(),
                                  CommandContext{::geteuid() == 0, std::thread::hardware_concurrency()}));
    return {exit_status::kRankSilent, ""};
  }

  // Every rank exits with rank 0's status, so mpirun's and srun's is the same.
  StepOutcome agree_on_exit_status(const StepOutcome& rank_zero) {
    std::string bytes = root_ ? sweep::detail::encode(rank_zero) : std::string();
    comm_.broadcast(bytes);
    return sweep::detail::decode_step_outcome(bytes);
  }

  Communicator& comm_;
  SessionSteps& steps_;
  const bool root_;
  std::vector<std::string> hosts_;
  RunRow run_;
  OpenedResults opened_;                    // rank 0's
  std::size_t counter_columns_ = 0;         // of /samples: what workers compress
  std::optional<std::size_t> trials_left_;  // rank 0's, once the sweep ran
};

}  // namespace

std::chrono::milliseconds flush_interval_of(const RunRow& run) {
  // Read back from the results file on a resume, so any double: saturated, not wrapped.
  return limit_milliseconds(run.flush_interval);
}

int run_session(Communicator& comm, SessionSteps& steps) {
  // Under a launcher (mpirun, srun) with other ranks: end with it.
  std::optional<LauncherWatch> launcher;
  if (comm.size() > 1) launcher.emplace(comm.rank());
  try {
    return Session(comm, steps).run();
  } catch (const SessionEnded& ended) {
    // Every rank fails alike; one message is enough. No rank returns before
    // it is out: under mpirun the first rank to exit non-zero ends the job,
    // rank 0 with it, its line maybe not yet written (issue 43's CI run).
    if (comm.rank() == 0) {
      fmt::print(stderr, "memsweep: error: {}\n", ended.outcome.message);
      std::fflush(stderr);
      steps.ending(ended.outcome.status, std::nullopt);
    }
    comm.all_gather({});
    return ended.outcome.status;
  }
}

}  // namespace memsweep
