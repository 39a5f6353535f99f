#pragma once
// The default of `memsweep run --flush-interval`: how often a worker sends
// what a running trial streamed. One constant, so that the option's default,
// what /runs records and what a resume compares with stay the same number.

namespace memsweep {

inline constexpr double kDefaultFlushSeconds = 2.0;

}  // namespace memsweep
