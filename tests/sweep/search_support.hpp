#pragma once
// What the scheduler's search tests share (threads as ranks, and MPI):
// trials whose memory follows a known line, so that every search's true
// answer is known, and the checks an ended search must pass.

#include "memsweep/sweep.hpp"

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace memsweep::testing {

inline constexpr std::int64_t kMiB = 1 << 20;

// Peak = base + per_example × batch (+ 10 % for a full run, when `full_costs_more`).
struct Curve {
  std::int64_t base = 40 * kMiB;
  std::int64_t per_example = 64 * 1024;
  bool full_costs_more = false;
  std::int64_t peak(const TrialSpec& trial) const;
};

// Trains nothing: each trial's row says what the curve says it would use,
// `over_budget` past its memory budget (the search's limit); interrupted
// when its stop flag is set while it sleeps.
class CurveRunner final : public TrialRunner {
 public:
  explicit CurveRunner(Curve curve, std::chrono::milliseconds duration = std::chrono::milliseconds(5))
      : curve_(curve), duration_(duration) {}
  TrialRecord run(const TrialSpec& trial, const TrialContext& context, TrialSink& sink) override;
  // The trial ids it ran to their end, in order.
  std::vector<std::string> ran() const;

 private:
  Curve curve_;
  std::chrono::milliseconds duration_;
  mutable std::mutex mutex_;
  std::vector<std::string> ran_;
};

// A sweep file's configurations (a [grid] over `grid`) with `search` as its [search].
SweepSpec search_sweep(std::string_view search, std::string_view grid = "learning_rate = [0.01, 0.02, 0.05]");

// The largest batch whose (full-run) peak is within `limit`.
std::int64_t true_answer(const Curve& curve, std::int64_t limit, std::int64_t low, std::int64_t high);

// Every search of `sweep` has one row, found, verified within the
// resolution below the truth, its answer a trial that trained in full
// within the limit and its does_not_fit one that did not; no trial id in
// `ran` twice.
void expect_found_answers(const std::vector<SearchRow>& searches, const std::vector<TrialRow>& trials,
                          const std::vector<std::string>& ran, const SweepSpec& sweep, const Curve& curve);

}  // namespace memsweep::testing
