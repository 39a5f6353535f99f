#pragma once
// Rank 0's walk through the sweep: the next attempt to hand out, made from
// its position when it is handed out. What it keeps grows with what has
// been handed out, not with the sweep (docs/sweep.md, "Large sweeps").

#include "memsweep/job_source.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memsweep::sweep::detail {

// A set of trial ids (12 hex digits: 48 bits) in 16 bytes each at most:
// open addressing on the id's own bits, which are already a hash.
class TrialIdSet {
 public:
  // False when `id` was already in.
  bool insert(std::uint64_t id);
  bool contains(std::uint64_t id) const;
  std::size_t size() const { return size_; }

 private:
  std::size_t slot_of(std::uint64_t id) const;
  void grow();
  std::vector<std::uint64_t> slots_;  // id + 1; 0 is empty
  std::size_t size_ = 0;
};

// The sweep's trials in order (a [search]'s source is search/board.hpp's).
class TrialCursor final : public JobSource {
 public:
  // Both are kept by reference: they outlive the sweep.
  TrialCursor(const SweepTrials& trials, const PendingTrials& pending);

  // The next attempt to run, or nullopt when there are no more. A trial of
  // a large sweep whose id was handed out before is skipped, and noted:
  // what another place of the sweep defines too, or, since ids are 48-bit
  // hashes, another trial with the same id (docs/sweep.md, "Large sweeps");
  // so is one whose values are wrong only together (its sweep-file error).
  std::optional<Job> next() override;
  // Attempts not handed out yet; an upper bound where a large sweep's
  // duplicates are not known.
  std::size_t left() const override { return left_; }
  // A note on each of the first kNotedDuplicates of the sweep (then one on
  // how many more).
  Skipped take_skipped() override;
  static constexpr std::size_t kNotedDuplicates = 10;

 private:
  std::optional<Job> next_listed();
  // Trial `position`, or nullopt (noted) when its values are wrong together.
  std::optional<TrialSpec> made_trial(std::size_t position);

  const SweepTrials& trials_;
  const PendingTrials& pending_;
  std::size_t position_ = 0;  // the next position of trials_, or of the pending list
  std::size_t left_ = 0;
  bool check_ids_ = false;  // the sweep's duplicates are not known
  TrialIdSet handed_;
  Skipped skipped_;
  std::size_t noted_ = 0;  // skipped trials named so far
};

}  // namespace memsweep::sweep::detail
