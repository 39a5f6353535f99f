#pragma once
// How memsweep's trainer holds a step's transient buffers (activations,
// their gradients, layout copies, the batch): a trial field, shared by the
// sweep file, the trainer and the memory estimate.
//
//   keep       every buffer for the trial's life (each has bytes of its own);
//   reuse      one arena, a buffer's bytes reused once its last reader ran;
//   recompute  activation checkpointing: the outputs of every k-th layer
//              kept, each segment's activations recomputed during the
//              backward pass, over reuse's arena.

#include <optional>
#include <string_view>

namespace memsweep {

enum class MemoryPlan { keep, reuse, recompute };

std::string_view memory_plan_name(MemoryPlan plan);
// "keep", "reuse" or "recompute"; nullopt for anything else.
std::optional<MemoryPlan> parse_memory_plan(std::string_view name);

// recompute_every = 0 asks for the default segment length: ceil(sqrt(L))
// for a network of L layers.
inline constexpr int kRecomputeEveryDefault = 0;

}  // namespace memsweep
