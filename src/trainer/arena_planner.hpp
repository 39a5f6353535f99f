#pragma once
// Where each of a step's transient buffers lives in one arena, from the
// steps that use it: a static memory plan, as TVM, TFLite and XLA compute
// one. A pure function of the buffers' sizes and lifetimes; no oneDNN.

#include <cstddef>
#include <vector>

namespace memsweep::trainer::detail {

inline constexpr std::size_t kArenaAlignment = 64;  // a cache line; what oneDNN's own buffers get

// A buffer used from step `first` to step `last`, both included: its bytes
// may hold another buffer only outside that interval.
struct ArenaBuffer {
  std::size_t bytes = 0;
  std::size_t first = 0;
  std::size_t last = 0;
};

struct ArenaPlan {
  std::vector<std::size_t> offsets;  // one per buffer, in the input's order, multiples of kArenaAlignment
  std::size_t bytes = 0;             // the arena's size
};

// Greedy by size: the largest buffer first, each put in the lowest-waste gap
// (best fit) left by the buffers already placed whose lifetimes overlap its
// own, else above them all. Sizes are rounded up to kArenaAlignment. The
// arena is never larger than the sum of the rounded sizes and never smaller
// than the most rounded bytes live at one step.
ArenaPlan plan_arena(const std::vector<ArenaBuffer>& buffers);

// The most rounded bytes live at any one step: the least any arena can be.
std::size_t peak_live_bytes(const std::vector<ArenaBuffer>& buffers);

inline std::size_t arena_rounded(std::size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

}  // namespace memsweep::trainer::detail
