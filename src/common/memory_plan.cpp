#include "memsweep/memory_plan.hpp"

namespace memsweep {

std::string_view memory_plan_name(MemoryPlan plan) {
  switch (plan) {
    case MemoryPlan::keep: return "keep";
    case MemoryPlan::reuse: return "reuse";
    case MemoryPlan::recompute: return "recompute";
  }
  return "keep";
}

std::optional<MemoryPlan> parse_memory_plan(std::string_view name) {
  for (const MemoryPlan plan : {MemoryPlan::keep, MemoryPlan::reuse, MemoryPlan::recompute})
    if (memory_plan_name(plan) == name) return plan;
  return std::nullopt;
}

}  // namespace memsweep
