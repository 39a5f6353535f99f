#pragma once
// Rank 0's searches ([search], docs/search.md): one per configuration and
// limit, each a chain of probes made as results come in. The strategy
// (search.hpp's next_probes) says what to try next from a search's finished
// probes; the board hands the values out, one worker at a time, and splits
// a bracket among the workers when there are fewer searches than workers
// (a k-section). A resume starts it from the file's probe rows, which is
// all a search's state is.

#include "memsweep/estimate.hpp"
#include "memsweep/job_source.hpp"
#include "memsweep/search.hpp"

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace memsweep::search {

class SearchBoard final : public JobSource {
 public:
  // Each configuration is made once, here; `history` may be null (a new file).
  SearchBoard(const SweepTrials& configurations, const SearchSpec& spec, const SearchHistory* history, std::int32_t run,
              int workers);

  std::optional<Job> next() override;
  bool waits() const override;
  void finished(const TrialRow& row) override;
  std::size_t left() const override;
  std::vector<SearchRow> take_ended() override;

  // The searches, in their order: configuration × limits + limit.
  std::size_t searches() const { return searches_.size(); }

 private:
  struct Search {
    std::size_t configuration = 0;
    std::size_t limit_index = 0;
    SearchSettings settings;
    std::vector<ProbeResult> finished;
    std::vector<NextProbe> running;
    std::deque<NextProbe> queued;  // a k-section's points not handed out yet
    std::int32_t probes = 0;       // probe numbers handed out
    std::string isolation;         // of its last row: how the limit held
    std::string gpu_mechanism;     // a GPU search's: its last row's gpu_limit_mechanism
    std::string gpu_name;          // and the device the probes ran on
    std::int64_t gpu_total = -1;
    bool ended = false;
  };

  std::optional<Job> job_for(std::size_t index, const NextProbe& probe);
  void end_if_done(std::size_t index);
  void end(std::size_t index, const SearchStanding& standing);
  void add_result(Search& search, const TrialRow& row);
  SearchRow row_of(std::size_t index, const SearchStanding& standing) const;

  const SearchSpec& spec_;
  std::int32_t run_ = 0;
  int workers_ = 1;
  std::vector<TrialSpec> made_;                         // by configuration
  std::vector<std::optional<AxisEstimate>> estimates_;  // by configuration
  std::vector<Search> searches_;
  std::size_t turn_ = 0;                              // the search the next request looks at first
  std::map<std::string, std::int32_t> next_attempt_;  // by probe trial id
  std::map<std::string, int> lost_;                   // by probe trial id: attempts that were no result
  std::set<std::int32_t> written_;
  std::vector<SearchRow> ended_;
  std::size_t left_ = 0;
};

// A progress line for an ended search: "search 3 (mnist mlp …, limit 2
// GiB): found batch_size 1234 (verified); 1260 does not fit; 5 trials".
std::string search_note(const SearchRow& row);

}  // namespace memsweep::search
