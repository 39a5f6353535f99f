#pragma once
// The sections of a sweep file that define trials ([[trial]], [grid],
// [random]), each able to make the draft of its trial number i without
// making the others: a grid point is its mixed-radix index over the axes, a
// random trial its own seeded draws, an explicit trial its table. A sweep of
// 10^7 trials then costs what its file costs (docs/sweep.md, "Large sweeps").

#include "config/trial_fields.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace memsweep::config::detail {

// Runs (trials x repeats) a sweep may define. Ids are 48-bit hashes: at 10^8
// distinct trials about 18 pairs would share one (docs/sweep.md, "Large
// sweeps"), and /trials' plan_index is a 32-bit integer.
inline constexpr std::uint64_t kMaxSweepTrials = 100'000'000;
inline constexpr std::uint64_t kMaxGridTrials = kMaxSweepTrials;

struct DraftWithOrigin {
  TrialDraft draft;
  Place origin;  // the section the trial comes from, for its `origin` and messages
};

// Every key must be a trial field; every value is checked.
TrialDraft table_draft(const TomlTable& table, const Place& table_place);

// One field as `memsweep plan` describes a section: "batch_size: 100 values
// (16 … 65536)", "learning_rate: log_uniform [1e-05, 0.1]".
struct FieldSummary {
  std::string field;
  std::string values;
};

// What a section's cover holds: every value of every field (what checks
// each value once), or each kind of trial (what the checks of datasets and
// programs and `memsweep plan`'s columns read: none of them looks at a
// number beyond whether it is set). A grid axis of 262,144 batch sizes made
// 262,144 trials of 1.6 KB each, three times over, to say which datasets
// and programs the sweep needs (issue 43).
enum class Cover { every_value, kinds };

class TrialSection {
 public:
  virtual ~TrialSection() = default;
  virtual std::uint64_t size() const = 0;
  // Trial `index` (< size()) of the section, with its origin.
  virtual DraftWithOrigin draft(std::uint64_t index) const = 0;
  // Drafts that between them give each field every value the section gives
  // it (each of a grid's values and each of a random choice's, with the
  // first trial's other values): what checks a large sweep's values in
  // combination with [defaults] without making every trial. Not all of
  // them are trials of the sweep. With Cover::kinds, a field whose values
  // are all numbers (a batch size, widths) gives at most kCoveredNumbers of
  // them, spread from its first to its last.
  // Given one at a time: a large cover is never held whole.
  using EachDraft = std::function<void(const DraftWithOrigin&)>;
  virtual void cover(Cover which, const EachDraft& each) const = 0;
  virtual std::string name() const = 0;  // "[grid]"
  virtual std::vector<FieldSummary> fields() const = 0;
  // When trial i of the section has `field` set to the k-th of
  // `values`, where field is varied on its own (a grid axis): the number
  // of values, and for each index the value's number. Otherwise nullopt.
  struct AxisLayout {
    std::uint64_t values = 0;  // how many
    std::uint64_t inner = 0;   // trials between two values' changes: the product of the later axes
  };
  virtual std::optional<AxisLayout> axis_layout(std::string_view field) const {
    (void)field;
    return std::nullopt;
  }
};

// The [[trial]] tables, each checked.
std::unique_ptr<TrialSection> table_section(const TomlArray& tables);

// How many trials [grid] expands to, counted without expanding it (the
// section's keys and lists checked); fails, saying how many, past
// kMaxGridTrials, even when the count does not fit in 64 bits.
std::uint64_t grid_size(const TomlTable& grid, const Place& grid_place);

// Every value checked; trial i is the point with the first axis written
// varying slowest.
std::unique_ptr<TrialSection> grid_section(const TomlTable& grid, const Place& grid_place);

// Draw i of every field comes from its own stream, seeded by (sweep seed, i,
// field name): raising `count` keeps the earlier draws, adding a field does
// not change the others, and draw i needs none of the draws before it.
std::unique_ptr<TrialSection> random_section(const TomlTable& random, const Place& random_place,
                                             std::uint64_t sweep_seed);

}  // namespace memsweep::config::detail
