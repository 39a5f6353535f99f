#pragma once
// How many threads one batch size's steps run with: as many as the work of a
// step keeps busy, never more than the trial was given.
//
// Why not always all of them: a step at a small batch is a few dozen
// primitives of microseconds each, and every one of them forks and joins an
// OpenMP team. On the 2-vCPU AMD EPYC (Zen 5) VM of the benchmarks that cost
// more than the second thread saved: batch 8 of the 784-285-389-423-173-61-10
// MLP ran at 0.49x the speed of one thread (measured with other work on
// the cores; quiet, 2 threads are faster there, and only much smaller steps
// lose: see kMinFlopsPerThread). The choice is a pure function of
// the model, the batch and the threads given, so a trial computes the same
// arithmetic every time it runs (the thread count changes oneDNN's reduction
// order), and the memory estimate, which builds the same primitive
// descriptors, sees the same per-thread scratchpads.

#include "memsweep/model_spec.hpp"
#include "memsweep/trainer.hpp"

#include <cstddef>

namespace memsweep::trainer::detail {

// Floating-point operations of one step of `rows` rows: forward, and with
// `with_backward` backward data (all but the first layer) and backward
// weights, of every convolution and inner product (a multiply-add is 2).
double step_flops(const ModelSpec& model, std::size_t rows, bool with_backward);

// The work below which one more thread does not pay for itself: a thread is
// added only while every thread still gets at least this much of a step.
// On the 2-vCPU AMD EPYC VM, quiet (docs/trainer.md, "Threads"): a step of
// 0.8 MFLOP (784-32-10, batch 8) ran 0.82x as fast on 2 threads as on 1,
// 3.3 MFLOP (784-128-10, batch 8) 1.00x, 6.5 MFLOP 1.21x, and every larger
// step measured (19 MFLOP up) 1.13x to 1.82x; so 2 threads start at 4 MFLOP.
// On the Intel Xeon of earlier measurements 2 threads were faster from the
// smallest step measured (24 MFLOP) up.
inline constexpr double kMinFlopsPerThread = 2e6;

// The threads for a step of `flops`, given `available` (at least 1): the
// most, up to `available`, that each get `kMinFlopsPerThread`; at least 1.
int threads_for_work(double flops, int available);

// The threads for the plan of `rows` rows of a trainer built from `config`
// with `given` threads (OpenMP's count when it was built), as its
// `step_threads` says.
int plan_threads(const TrainerConfig& config, std::size_t rows, bool with_backward, int given);

// OpenMP's thread count now: what a trainer built now is given.
int threads_given();

// Sets OpenMP's thread count for this thread while it lives and puts back
// what was there, so that a trainer's choice does not leak to its caller (a
// second trainer built afterwards must see the same threads as the first).
class ScopedThreadCount {
 public:
  explicit ScopedThreadCount(int threads);
  ~ScopedThreadCount();
  ScopedThreadCount(const ScopedThreadCount&) = delete;
  ScopedThreadCount& operator=(const ScopedThreadCount&) = delete;

 private:
  int previous_;
};

}  // namespace memsweep::trainer::detail
