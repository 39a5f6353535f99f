#pragma once
// The three ways a rank takes part in run_sweep (scheduler.cpp picks one):
// alone (one rank trains and writes), as the coordinator (rank 0 of
// several: hands out trials and writes, never trains), or as a worker.

#include "memsweep/sweep.hpp"

#include <chrono>
#include <span>
#include <stdexcept>
#include <string>

namespace memsweep::sweep::detail {

SweepResult run_alone(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending, TrialRunner& runner,
                      ResultSink& sink, const SweepOptions& options);

SweepResult run_coordinator(Communicator& comm, const SweepTrials& trials, const PendingTrials& pending,
                            ResultSink& sink, const SweepOptions& options);

SweepResult run_worker(Communicator& comm, const SweepTrials& trials, TrialRunner& runner, const SweepOptions& options);

// Shared bookkeeping.
inline bool stop_requested(const SweepOptions& options) { return options.stop != nullptr && options.stop->load(); }

// What a trial's row says about where and when it ran: attempt `attempt` on
// this rank of `host`, in this run, under this run's memory budget.
inline TrialContext trial_context(const Communicator& comm, const std::string& host, std::int32_t attempt,
                                  const SweepOptions& options) {
  TrialContext context;
  context.attempt = attempt;
  context.run = options.run;
  context.rank = comm.rank();
  context.host = host;
  context.mem_budget_bytes = options.mem_budget_bytes;
  return context;
}

inline void count_row(SweepResult& result, const TrialRow& row) {
  ++result.finished;
  ++result.by_status[get_fixed(row.status)];
}

}  // namespace memsweep::sweep::detail
