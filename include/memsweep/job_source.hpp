#pragma once
// Where rank 0 takes the attempts it hands out: the sweep's trials in
// order (sweep's TrialCursor), or probes made as a search's results come
// in (search's SearchBoard). Declared here, below both, so that the search
// module implements it without depending on the sweep that drives it.

#include "memsweep/config.hpp"
#include "memsweep/results.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace memsweep {

struct Job {
  PendingTrial attempt;
  TrialSpec trial;  // a search's probe has its SearchPoint
};

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

}  // namespace memsweep
