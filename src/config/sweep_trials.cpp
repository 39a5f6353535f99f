// SweepTrials: a sweep's trials made one at a time from their positions.

#include "config/defined_trials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace memsweep {
namespace {

class ListedTrials final : public SweepTrials::Source {
 public:
  explicit ListedTrials(std::vector<TrialSpec> trials) : trials_(std::move(trials)) {}
  std::size_t size() const override { return trials_.size(); }
  TrialSpec at(std::size_t position) const override { return trials_[position]; }

 private:
  std::vector<TrialSpec> trials_;
};

class ChosenPositions final : public SweepTrials::Source {
 public:
  ChosenPositions(std::shared_ptr<const SweepTrials::Source> base, std::vector<std::size_t> positions)
      : base_(std::move(base)), positions_(std::move(positions)) {}
  std::size_t size() const override { return positions_.size(); }
  TrialSpec at(std::size_t position) const override { return base_->at(positions_[position]); }
  bool duplicates_known() const override { return base_->duplicates_known(); }

 private:
  std::shared_ptr<const SweepTrials::Source> base_;
  std::vector<std::size_t> positions_;
};

class StridedSubset final : public SweepTrials::Source {
 public:
  StridedSubset(std::shared_ptr<const SweepTrials::Source> base, const StridedPositions& positions)
      : base_(std::move(base)), positions_(positions) {}
  std::size_t size() const override { return positions_.block * positions_.blocks; }
  TrialSpec at(std::size_t position) const override {
    const std::size_t block = position / positions_.block;
    return base_->at(positions_.start + block * positions_.stride + position % positions_.block);
  }
  bool duplicates_known() const override { return base_->duplicates_known(); }

 private:
  std::shared_ptr<const SweepTrials::Source> base_;
  StridedPositions positions_;
};

}  // namespace

SweepTrials::SweepTrials() : SweepTrials(std::vector<TrialSpec>{}) {}
SweepTrials::SweepTrials(std::vector<TrialSpec> listed) : source_(std::make_shared<ListedTrials>(std::move(listed))) {}
SweepTrials::SweepTrials(std::shared_ptr<const Source> source) : source_(std::move(source)) {}

std::size_t SweepTrials::size() const { return source_->size(); }
TrialSpec SweepTrials::operator[](std::size_t position) const { return source_->at(position); }
TrialSpec SweepTrials::at(std::size_t position) const {
  if (position >= size())
    throw std::out_of_range(fmt::format("SweepTrials::at: position {} of {} trials", position, size()));
  return source_->at(position);
}
std::optional<TrialSpec> SweepTrials::made(std::size_t position) const {
  try {
    return source_->at(position);
  } catch (const ConfigError&) {
    return std::nullopt;
  }
}
bool SweepTrials::duplicates_known() const { return source_->duplicates_known(); }
std::optional<SweepTrials::Axis> SweepTrials::axis(std::string_view field) const { return source_->axis(field); }

std::vector<TrialSpec> SweepTrials::every_value() const { return source_->every_value(); }

std::vector<TrialSpec> SweepTrials::Source::every_value() const {
  constexpr std::size_t kSample = 10'000;
  std::vector<TrialSpec> trials;
  const std::size_t step = size() <= kSample ? 1 : size() / kSample;
  for (std::size_t position = 0; position < size(); position += step) trials.push_back(at(position));
  if (size() > 0 && step > 1) trials.push_back(at(size() - 1));
  return trials;
}

SweepTrials SweepTrials::only(std::vector<std::size_t> positions) const {
  return SweepTrials(std::make_shared<ChosenPositions>(source_, std::move(positions)));
}
SweepTrials SweepTrials::only(const StridedPositions& positions) const {
  return SweepTrials(std::make_shared<StridedSubset>(source_, positions));
}

}  // namespace memsweep

namespace memsweep::config::detail {

DefinedTrials::DefinedTrials(std::vector<std::unique_ptr<TrialSection>> sections, TrialDraft defaults,
                             ProgramTables programs, std::uint64_t sweep_seed, int repeats)
    : sections_(std::move(sections)),
      defaults_(std::move(defaults)),
      defaults_applied_(apply_defaults(defaults_, sweep_seed)),
      programs_(std::move(programs)),
      repeats_(repeats) {
  for (const auto& section : sections_) {
    defined_ += section->size();
    section_ends_.push_back(defined_);
  }
}

TrialSpec DefinedTrials::built(const DraftWithOrigin& draft) const {
  return build_trial(defaults_, defaults_applied_, draft.draft, draft.origin, programs_);
}

DraftWithOrigin DefinedTrials::draft(std::uint64_t index) const {
  const auto section = std::upper_bound(section_ends_.begin(), section_ends_.end(), index) - section_ends_.begin();
  const std::uint64_t first = section == 0 ? 0 : section_ends_[static_cast<std::size_t>(section) - 1];
  return sections_[static_cast<std::size_t>(section)]->draft(index - first);
}

TrialSpec DefinedTrials::defined_trial(std::uint64_t index) const { return built(draft(index)); }

bool DefinedTrials::sets_params(std::uint64_t index) const {
  const auto has_params = [](const TrialDraft& draft) {
    return std::any_of(draft.begin(), draft.end(),
                       [](const auto& entry) { return entry.first.starts_with("params."); });
  };
  return has_params(defaults_) || has_params(draft(index).draft);
}

void DefinedTrials::keep_only(std::vector<std::uint64_t> kept) { kept_ = std::move(kept); }

std::size_t DefinedTrials::size() const {
  const std::uint64_t distinct = kept_ ? kept_->size() : defined_;
  return static_cast<std::size_t>(distinct * static_cast<std::uint64_t>(repeats_));
}

std::optional<SweepTrials::Axis> DefinedTrials::axis(std::string_view field) const {
  const std::uint64_t distinct = kept_ ? kept_->size() : defined_;
  if (field == "repeat")
    return SweepTrials::Axis{static_cast<std::size_t>(repeats_), static_cast<std::size_t>(distinct)};
  if (kept_ || sections_.size() != 1) return std::nullopt;
  const auto layout = sections_.front()->axis_layout(field);
  if (!layout) return std::nullopt;
  return SweepTrials::Axis{static_cast<std::size_t>(layout->values), static_cast<std::size_t>(layout->inner)};
}

std::vector<TrialSpec> DefinedTrials::every_value() const {
  // Up to this many, every trial: a check per trial costs little next to
  // the sweep. Beyond, each section's cover of kinds (expand.hpp: a field
  // of many numbers gives a few of them; check_every_value() checked each).
  constexpr std::uint64_t kListedTrials = 10'000;
  std::vector<TrialSpec> trials;
  const std::uint64_t distinct = kept_ ? kept_->size() : defined_;
  if (walked_ && distinct <= kListedTrials) {
    for (std::uint64_t position = 0; position < distinct; ++position)
      trials.push_back(at(static_cast<std::size_t>(position)));
    return trials;
  }
  for (const auto& section : sections_)
    section->cover(Cover::kinds, [&](const DraftWithOrigin& draft) { trials.push_back(built(draft)); });
  trials.push_back(defined_trial(0));
  trials.push_back(defined_trial(defined_ - 1));
  return trials;
}

void DefinedTrials::check_every_value() const {
  for (const auto& section : sections_)
    section->cover(Cover::every_value, [&](const DraftWithOrigin& draft) { (void)built(draft); });
  (void)defined_trial(0);
  (void)defined_trial(defined_ - 1);
}

TrialSpec DefinedTrials::at(std::size_t position) const {
  const std::uint64_t distinct = kept_ ? kept_->size() : defined_;
  const std::uint64_t repeat = position / distinct;
  const std::uint64_t within = position % distinct;
  TrialSpec trial = defined_trial(kept_ ? (*kept_)[within] : within);
  if (repeat > 0) {
    trial.repeat = static_cast<int>(repeat);
    trial.id = trial_id(trial);
  }
  trial.plan_index = static_cast<int>(position);
  return trial;
}

}  // namespace memsweep::config::detail
