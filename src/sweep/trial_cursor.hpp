#pragma once
// Rank 0's walk through the sweep: the next attempt to hand out, made from
// its position when it is handed out. What it keeps grows with what has
// been handed out, not with the sweep (docs/sweep.md, "Large sweeps").

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

struct Job {
  PendingTrial attempt;
  TrialSpec trial;  // a search's probe has its SearchPoint
};

// Where rank 0 takes the attempts it hands out: the sweep's trials in
// order (TrialCursor), or probes made as a search's results come in
// (SearchBoard, search_board.hpp).
class JobSource {
 public:
  virtual ~JobSource() = default;
  // The next attempt to run; nullopt when there is none now.
  virtual std::optional<Job> next() = 0;
  // Whether an attempt may come later although next() has none now: a
  // search waits for its running probes' results.
  virtual bool waits() const { return false; }
  // A handed-out attempt's row, as rank 0 records it.
  virtual void finished(const TrialRow& row) { (void)row; }
  // What is still to hand out (an upper bound): attempts, or searches not ended.
  virtual std::size_t left() const = 0;
  // What was skipped since the last call: how many, and a note on each of
  // the first few.
  struct Skipped {
    std::size_t count = 0;
    std::vector<std::string> notes;
  };
  virtual Skipped take_skipped() { return {}; }
  // Searches that ended since the last call: their rows of /searches.
  virtual std::vector<SearchRow> take_ended() { return {}; }
};

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

// The source's skipped trials onto the progress lines (when there are any).
void report_skipped(JobSource& source, ProgressReporter* progress);

// The sweep's source of attempts: a SearchBoard for a [search]
// (options.search), else a TrialCursor. `workers`: the ranks that train.
std::unique_ptr<JobSource> make_job_source(const SweepTrials& trials, const PendingTrials& pending,
                                           const SweepOptions& options, int workers);

}  // namespace memsweep::sweep::detail
