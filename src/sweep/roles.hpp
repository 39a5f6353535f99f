#pragma once
// The three ways a rank takes part in run_sweep (scheduler.cpp picks one):
// alone (one rank trains and writes), as the coordinator (rank 0 of
// several: hands out trials and writes, never trains), or as a worker.

#include "memsweep/sweep.hpp"

#include <chrono>
#include <span>

namespace memsweep::detail {

SweepResult run_alone(Communicator& comm, std::span<const TrialSpec> trials, std::span<const PendingTrial> pending,
                      TrialRunner& runner, ResultSink& sink, const SweepOptions& options);

SweepResult run_coordinator(Communicator& comm, std::span<const TrialSpec> trials,
                            std::span<const PendingTrial> pending, ResultSink& sink, const SweepOptions& options);

SweepResult run_worker(Communicator& comm, std::span<const TrialSpec> trials, TrialRunner& runner,
                       const SweepOptions& options);

// Shared bookkeeping.
inline bool stop_requested(const SweepOptions& options) { return options.stop != nullptr && options.stop->load(); }

inline void count_row(SweepResult& result, const TrialRow& row) {
  ++result.finished;
  ++result.by_status[get_fixed(row.status)];
}

}  // namespace memsweep::detail
