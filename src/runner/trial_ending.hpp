#pragma once
// How a trial's process ended, turned into the row's status, message and
// end columns: pure, so that every way a trial can end is tested on values.
// The table is in docs/runner.md ("How a trial ends").

#include "memsweep/results.hpp"
#include "runner/child_process.hpp"
#include "runner/trial_messages.hpp"
#include "runner/trial_protocol.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace memsweep::runner::detail {

// Why the rank itself killed the process (SIGKILL), if it did.
enum class RankKill { none, budget, gpu_limit, timeout, stop_unanswered };

// What the rank saw of the process, from the go-ahead to its end.
struct ProcessOutcome {
  std::optional<ResultReport> result;
  std::optional<FailureReport> failure;
  ProcessEnd end;
  RankKill kill = RankKill::none;
  std::string kill_message;  // the rank's words for its own kill
  // The kernel said its OOM killer struck while the trial ran, and where it
  // said so ("the trial's cgroup", ...); empty: it did not.
  std::string oom_seen_in;
  // The trial's cgroup limit is its budget, so an OOM kill there is the
  // budget at work.
  bool cgroup_limit_is_budget = false;
  double seconds = 0.0;  // since the go-ahead
  int epoch = 0;         // the last phase reported
  bool evaluating = false;
  // A user's program: its exit status is its result (0: ok), it reports
  // no result of its own, and the rank's stop request is SIGTERM.
  bool program = false;
  bool stop_requested = false;  // the rank asked it to stop
  std::string output_tail;      // the last lines of its stderr, for a failure's message
};

struct TrialEnding {
  TrialStatus status = TrialStatus::ok;
  std::string message;
  std::string_view cause;  // an end_cause name (results.hpp)
  int signal = 0;
  bool oom_killed = false;
};

// Which status wins, in this order (the cases: docs/runner.md, "How a
// trial ends"): the rank's own kill, a program the sweep asked to stop, a
// signal before any report (the OOM killer, a crash, someone else), a
// program's exit status, a reported failure, a reported result, an exit
// without either.
TrialEnding decide_ending(const ProcessOutcome& outcome);

// Whether the kernel's OOM counters can explain the end: a SIGKILL the rank
// did not send.
bool needs_oom_evidence(const ProcessOutcome& outcome);

// "SIGSEGV (Segmentation fault)".
std::string signal_text(int signal_number);

// Signals that mean the process itself went wrong, not that someone ended it.
bool is_crash_signal(int signal_number);

}  // namespace memsweep::runner::detail
