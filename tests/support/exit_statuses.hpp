#pragma once
// The exit statuses README.md documents ("Exit statuses"), which the tests
// hold the memsweep program to. Written here from the README, not taken
// from the program's own constants: a change to the program must not move
// the tests' expectation with it.

namespace memsweep::testing {

inline constexpr int kOk = 0;
inline constexpr int kBadInput = 2;    // one line on stderr names the file, line or field
inline constexpr int kStopped = 3;     // stopped by a signal before every trial was final
inline constexpr int kRankSilent = 4;  // a worker rank went silent and the job was ended

}  // namespace memsweep::testing
