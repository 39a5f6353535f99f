#pragma once
// The trials a sweep file's sections define (SweepTrials' source for a
// parsed file): trial p made from the sections, [defaults] and [programs]
// when asked.

#include "config/expand.hpp"
#include "config/program_fields.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace memsweep::config::detail {

class DefinedTrials final : public SweepTrials::Source {
 public:
  DefinedTrials(std::vector<std::unique_ptr<TrialSection>> sections, TrialDraft defaults, ProgramTables programs,
                std::uint64_t sweep_seed, int repeats);

  // Trials per repeat, as the sections define them (duplicates included).
  std::uint64_t defined() const { return defined_; }
  // Trial `index` (< defined()) of repeat 0, duplicates included: what the
  // parser walks.
  TrialSpec defined_trial(std::uint64_t index) const;
  // Whether [defaults] or trial `index`'s own values set any [params].
  bool sets_params(std::uint64_t index) const;
  // After a walk: the indices to keep (sorted), when some were duplicates.
  void keep_only(std::vector<std::uint64_t> kept);

  std::size_t size() const override;
  TrialSpec at(std::size_t position) const override;
  bool duplicates_known() const override { return walked_; }
  std::optional<SweepTrials::Axis> axis(std::string_view field) const override;
  std::vector<TrialSpec> every_value() const override;
  // Too many trials to make each: every value of every section made once
  // with [defaults], one at a time (an error names the first bad one),
  // and the first and last trials.
  void check_every_value() const;
  void mark_walked() { walked_ = true; }

  const std::vector<std::unique_ptr<TrialSection>>& sections() const { return sections_; }

 private:
  TrialSpec built(const DraftWithOrigin& draft) const;
  DraftWithOrigin draft(std::uint64_t index) const;

  std::vector<std::unique_ptr<TrialSection>> sections_;
  std::vector<std::uint64_t> section_ends_;  // cumulative sizes
  TrialDraft defaults_;
  TrialSpec defaults_applied_;
  ProgramTables programs_;
  int repeats_ = 1;
  std::uint64_t defined_ = 0;
  std::optional<std::vector<std::uint64_t>> kept_;  // the walk's distinct indices, when it found duplicates
  bool walked_ = false;
};

}  // namespace memsweep::config::detail
