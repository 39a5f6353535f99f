#pragma once
// Turning the sections of a sweep file into trial drafts: a table of fields
// ([defaults], one [[trial]]), the Cartesian product of [grid], and the
// seeded draws of [random].

#include "config/trial_fields.hpp"

#include <cstdint>
#include <functional>
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

// Drafts are handed over one at a time: 10^6 of them at once would hold
// more memory than the trials they become.
using DraftSink = std::function<void(DraftWithOrigin&&)>;

// How many trials [grid] expands to, counted without expanding it (the
// section's keys and lists checked); fails, saying how many, past
// kMaxGridTrials, even when the count does not fit in 64 bits.
std::uint64_t grid_size(const TomlTable& grid, const Place& grid_place);

// Every value checked, then each point of the grid, first axis written
// varying slowest.
void grid_drafts(const TomlTable& grid, const Place& grid_place, const DraftSink& sink);

// Draw i of every field comes from its own stream, seeded by (sweep seed, i,
// field name): raising `count` keeps the earlier draws, and adding a field
// does not change the others.
void random_drafts(const TomlTable& random, const Place& random_place, std::uint64_t sweep_seed, const DraftSink& sink);

}  // namespace memsweep::config_detail
