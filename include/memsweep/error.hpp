#pragma once
// Error types shared by every module, so that the CLI maps them to exit
// statuses in one place.

#include <stdexcept>
#include <string>

namespace memsweep {

// Bad input from the user: a sweep file, a dataset file, an argument.
// The message names the file (and line or field) and what was expected.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Exit statuses of the memsweep command, documented in README.md.
namespace exit_status {
inline constexpr int kOk = 0;
inline constexpr int kFailure = 1;   // an internal or system error
inline constexpr int kBadInput = 2;  // bad arguments, sweep file or dataset
// `memsweep run` stopped by a signal (SIGTERM, SIGUSR1, SIGINT) before every
// trial had a final status: continue with --resume (job scripts requeue).
inline constexpr int kStopped = 3;
// `memsweep run` under MPI gave up a worker rank that went silent (stopped or
// hung) and ended the job once the other workers had run every trial they
// could; the results file says whether any trial is left for --resume.
inline constexpr int kRankSilent = 4;
}  // namespace exit_status

}  // namespace memsweep
