#include "trainer/arena_planner.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

namespace memsweep::trainer::detail {
namespace {

bool overlap_in_time(const ArenaBuffer& a, const ArenaBuffer& b) { return a.first <= b.last && b.first <= a.last; }

}  // namespace

ArenaPlan plan_arena(const std::vector<ArenaBuffer>& buffers) {
  for (const ArenaBuffer& b : buffers)
    if (b.first > b.last) throw std::invalid_argument("an arena buffer's first step comes after its last");
  // Largest first: the big buffers shape the arena, the small ones fill its
  // gaps. Ties by first use, then by index, so the plan is deterministic.
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const std::size_t sa = arena_rounded(buffers[a].bytes), sb = arena_rounded(buffers[b].bytes);
    if (sa != sb) return sa > sb;
    return buffers[a].first < buffers[b].first;
  });

  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::size_t, std::size_t>> taken;  // [begin, end) of the overlapping placed buffers
  for (const std::size_t i : order) {
    const std::size_t size = arena_rounded(buffers[i].bytes);
    if (size == 0) continue;
    taken.clear();
    for (const std::size_t j : placed)
      if (overlap_in_time(buffers[i], buffers[j]))
        taken.emplace_back(plan.offsets[j], plan.offsets[j] + arena_rounded(buffers[j].bytes));
    std::sort(taken.begin(), taken.end());
    // The gaps between the taken ranges; the smallest that fits wins.
    std::size_t best = std::numeric_limits<std::size_t>::max(), best_waste = best;
    std::size_t cursor = 0;
    for (const auto& [begin, end] : taken) {
      if (begin > cursor && begin - cursor >= size && begin - cursor - size < best_waste) {
        best = cursor;
        best_waste = begin - cursor - size;
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[i] = best != std::numeric_limits<std::size_t>::max() ? best : cursor;
    plan.bytes = std::max(plan.bytes, plan.offsets[i] + size);
    placed.push_back(i);
  }
  return plan;
}

std::size_t peak_live_bytes(const std::vector<ArenaBuffer>& buffers) {
  // +bytes at the first step, -bytes after the last: the running sum's
  // maximum, visited in step order.
  std::map<std::size_t, std::ptrdiff_t> change;
  for (const ArenaBuffer& b : buffers) {
    const auto size = static_cast<std::ptrdiff_t>(arena_rounded(b.bytes));
    change[b.first] += size;
    change[b.last + 1] -= size;
  }
  std::ptrdiff_t live = 0, peak = 0;
  for (const auto& [step, delta] : change) {
    live += delta;
    peak = std::max(peak, live);
  }
  return static_cast<std::size_t>(peak);
}

}  // namespace memsweep::trainer::detail
