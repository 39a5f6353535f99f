#pragma once
// Turning the sections of a sweep file into trial drafts: a table of fields
// ([defaults], one [[trial]]), the Cartesian product of [grid], and the
// seeded draws of [random].

#include "config/trial_fields.hpp"

#include <cstdint>
#include <vector>

namespace memsweep::config_detail {

inline constexpr std::size_t kMaxGridTrials = 1'000'000;
// All sections together, times [sweep] repeats: each section is bounded, but
// without this a 70-byte file could ask for 10^10 trials.
inline constexpr std::uint64_t kMaxSweepTrials = 1'000'000;

struct DraftWithOrigin {
  TrialDraft draft;
  Place origin;  // the section the trial comes from, for its `origin` and messages
};

// Every key must be a trial field; every value is checked.
TrialDraft table_draft(const TomlTable& table, const Place& table_place);

std::vector<DraftWithOrigin> grid_drafts(const TomlTable& grid, const Place& grid_place);

// Draw i of every field comes from its own stream, seeded by (sweep seed, i,
// field name): raising `count` keeps the earlier draws, and adding a field
// does not change the others.
std::vector<DraftWithOrigin> random_drafts(const TomlTable& random, const Place& random_place,
                                           std::uint64_t sweep_seed);

}  // namespace memsweep::config_detail
