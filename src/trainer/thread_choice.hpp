#pragma once
// How many threads one batch size's steps run with: as many as the work of a
// step keeps busy, never more than the trial was given.
//
// Why not always all of them: a step at a small batch is a few dozen
// primitives of microseconds each, and every one of them forks and joins an
// OpenMP team. On the 2-vCPU AMD EPYC (Zen 5) VM of the benchmarks that cost
// more than the second thread saved: batch 8 of the 784-285-389-423-173-61-10
// MLP ran at 0.49x the speed of one thread. The choice is a pure function of
// the model, the batch and the threads given, so a trial computes the same
// arithmetic every time it runs (the thread count changes oneDNN's reduction
// order), and the memory estimate, which builds the same primitive
// descriptors, sees the same per-thread scratchpads.

#include "memsweep/model_spec.hpp"
#include "memsweep/trainer.hpp"

#include <cstddef>

namespace memsweep::trainer_detail {

// Floating-point operations of one step of `rows` rows: forward, and with
// `with_backward` backward data (all but the first layer) and backward
// weights, of every convolution and inner product (a multiply-add is 2).
double step_flops(const ModelSpec& model, std::size_t rows, bool with_backward);

// The work below which one more thread does not pay for itself: a thread is
// added only while every thread still gets at least this much of a step.
// On the 2-vCPU AMD EPYC VM, steps of 24 and 63 MFLOP ran slower on 2 threads
// than on 1 and a step of 160 MFLOP (MNIST trial 4, batch 98) ran even
// (docs/trainer.md, "Threads"), so 2 threads start at 160 MFLOP. On the Intel
// Xeon of earlier measurements 2 threads were faster at every size; there
// this rule forgoes their gains below 160 MFLOP (up to 1.37x, the CIFAR-10
// MLP at batch 8) but never makes a step slower.
inline constexpr double kMinFlopsPerThread = 80e6;

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

}  // namespace memsweep::trainer_detail
