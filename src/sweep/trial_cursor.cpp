#include "sweep/trial_cursor.hpp"

#include <fmt/format.h>

#include <optional>
#include <stdexcept>
#include <utility>

namespace memsweep::sweep::detail {
namespace {

// A trial id's 48 bits; an id trial_id() did not make (a test's) hashed.
std::uint64_t id_bits(const std::string& id) { return trial_id_number(id).value_or(std::hash<std::string>{}(id)); }

// Fibonacci hashing spreads ids that a test made alike (1, 2, 3…).
constexpr std::uint64_t kSpread = 0x9E3779B97F4A7C15ULL;

}  // namespace

std::size_t TrialIdSet::slot_of(std::uint64_t id) const {
  const std::size_t mask = slots_.size() - 1;
  std::size_t slot = static_cast<std::size_t>((id * kSpread) >> 20) & mask;
  while (slots_[slot] != 0 && slots_[slot] != id + 1) slot = (slot + 1) & mask;
  return slot;
}

void TrialIdSet::grow() {
  std::vector<std::uint64_t> old = std::move(slots_);
  slots_.assign(old.empty() ? 1024 : old.size() * 2, 0);
  for (const std::uint64_t stored : old)
    if (stored != 0) slots_[slot_of(stored - 1)] = stored;
}

bool TrialIdSet::insert(std::uint64_t id) {
  if ((size_ + 1) * 2 > slots_.size()) grow();  // at most half full: short probes
  const std::size_t slot = slot_of(id);
  if (slots_[slot] != 0) return false;
  slots_[slot] = id + 1;
  ++size_;
  return true;
}

bool TrialIdSet::contains(std::uint64_t id) const { return !slots_.empty() && slots_[slot_of(id)] != 0; }

TrialCursor::TrialCursor(const SweepTrials& trials, const PendingTrials& pending)
    : trials_(trials),
      pending_(pending),
      left_(pending.count(trials.size())),
      check_ids_(!pending.listed() && !trials.duplicates_known()) {}

std::optional<Job> TrialCursor::next_listed() {
  const std::vector<PendingTrial>& listed = *pending_.listed();
  if (position_ >= listed.size()) return std::nullopt;
  const PendingTrial attempt = listed[position_++];
  // The list comes from run_sweep's caller: a bad index is the caller's bug.
  if (attempt.index >= trials_.size())
    throw std::out_of_range("run_sweep: pending trial index " + std::to_string(attempt.index) + " is past the " +
                            std::to_string(trials_.size()) + " trials");
  --left_;
  return Job{attempt, trials_[attempt.index]};
}

std::optional<Job> TrialCursor::next() {
  if (pending_.listed()) return next_listed();
  while (position_ < trials_.size()) {
    const std::size_t position = position_++;
    std::optional<TrialSpec> made = made_trial(position);
    if (!made) continue;
    TrialSpec trial = std::move(*made);
    if (!pending_.runs(trial.id)) continue;
    if (check_ids_ && !handed_.insert(id_bits(trial.id))) {
      if (++noted_ <= kNotedDuplicates)
        skipped_.notes.push_back(fmt::format(
            "{} has the id {} of a trial handed out before (the same trial defined twice, or, rarely, a different "
            "one whose 48-bit id is the same); it does not run again{}",
            trial.origin, trial.id, noted_ == kNotedDuplicates ? "; further ones are counted, not named" : ""));
      ++skipped_.count;
      if (left_ > 0) --left_;
      continue;
    }
    if (left_ > 0) --left_;
    const std::int32_t attempt = pending_.attempt(trial.id);
    return Job{PendingTrial{position, attempt}, std::move(trial)};
  }
  left_ = 0;
  return std::nullopt;
}

std::optional<TrialSpec> TrialCursor::made_trial(std::size_t position) {
  try {
    return trials_[position];
  } catch (const ConfigError& error) {
    // A sweep too large to make every trial when it was read: values wrong
    // only together (an MLP's empty hidden list from two grid axes) are
    // found here. That trial does not run; the sweep goes on.
    if (++noted_ <= kNotedDuplicates)
      skipped_.notes.push_back(fmt::format("trial {} of the sweep cannot be made, and does not run: {}{}", position + 1,
                                           error.what(),
                                           noted_ == kNotedDuplicates ? "; further ones are counted, not named" : ""));
    ++skipped_.count;
    if (left_ > 0) --left_;
    return std::nullopt;
  }
}

JobSource::Skipped TrialCursor::take_skipped() { return std::exchange(skipped_, {}); }

}  // namespace memsweep::sweep::detail
