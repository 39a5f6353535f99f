// The rows a sweep records: statuses, building a trial's row from its spec
// and a sample's row from the sampler's sample, and the sweep's identity.

#include "memsweep/random.hpp"
#include "memsweep/results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

constexpr std::array<std::pair<TrialStatus, std::string_view>, 7> kStatuses{{
    {TrialStatus::ok, "ok"},
    {TrialStatus::failed, "failed"},
    {TrialStatus::diverged, "diverged"},
    {TrialStatus::over_budget, "over_budget"},
    {TrialStatus::timeout, "timeout"},
    {TrialStatus::interrupted, "interrupted"},
    {TrialStatus::killed, "killed"},
}};

constexpr int kSweepHashHexDigits = 16;

bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U; }

}  // namespace

namespace results::detail {

std::size_t utf8_cut(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  // Back up to the start of the character that would be split: a cut never
  // leaves half a character for a reader to choke on.
  std::size_t length = max_bytes;
  while (length > 0 && is_utf8_continuation(text[length])) --length;
  return length;
}

}  // namespace results::detail

std::string_view status_name(TrialStatus status) {
  for (const auto& [value, name] : kStatuses)
    if (value == status) return name;
  return "unknown";
}

std::optional<TrialStatus> parse_status(std::string_view name) {
  for (const auto& [value, known] : kStatuses)
    if (known == name) return value;
  return std::nullopt;
}

bool is_final(TrialStatus status) {
  return status == TrialStatus::ok || status == TrialStatus::failed || status == TrialStatus::diverged ||
         status == TrialStatus::over_budget || status == TrialStatus::timeout;
}

std::vector<std::string> final_status_names() {
  std::vector<std::string> names;
  for (const auto& [status, name] : kStatuses)
    if (is_final(status)) names.emplace_back(name);
  return names;
}

void record_estimate_part(TrialRow& row, std::string_view part, std::uint64_t bytes) {
  const std::optional<std::size_t> slot = estimate_part_slot(part);
  if (!slot) throw std::invalid_argument(fmt::format("estimate part \"{}\" has no /trials column", part));
  row.estimate_parts[*slot] =
      static_cast<std::int64_t>(std::min<std::uint64_t>(bytes, std::numeric_limits<std::int64_t>::max()));
}

bool stands_for_trial(const TrialRow& later, const TrialRow& standing) {
  const auto final_row = [](const TrialRow& row) {
    const std::optional<TrialStatus> status = parse_status(get_fixed(row.status));
    return status && is_final(*status);
  };
  const bool later_final = final_row(later);
  const bool standing_final = final_row(standing);
  if (later_final != standing_final) return later_final;
  return later.attempt >= standing.attempt;
}

void StandingRows::add(std::span<const TrialRow> rows, std::size_t index) {
  const TrialRow& row = rows[index];
  const std::string id = get_fixed(row.trial_id);
  const auto [found, first] = trials_.try_emplace(id, Trial{index, 0});
  Trial& trial = found->second;
  ++trial.attempts;
  if (first)
    order_.push_back(id);
  else if (stands_for_trial(row, rows[trial.row]))
    trial.row = index;
}

const StandingRows::Trial* StandingRows::find(const std::string& trial_id) const {
  const auto found = trials_.find(trial_id);
  return found == trials_.end() ? nullptr : &found->second;
}

StandingRows standing_rows(std::span<const TrialRow> rows) {
  StandingRows standing;
  for (std::size_t i = 0; i < rows.size(); ++i) standing.add(rows, i);
  return standing;
}

std::optional<std::set<TrialStatus>> parse_retry_statuses(std::string_view list) {
  std::set<TrialStatus> statuses;
  while (true) {
    const std::size_t comma = list.find(',');
    const std::optional<TrialStatus> status = parse_status(list.substr(0, comma));
    if (!status || *status == TrialStatus::ok || *status == TrialStatus::interrupted) return std::nullopt;
    statuses.insert(*status);
    if (comma == std::string_view::npos) return statuses;
    list.remove_prefix(comma + 1);
  }
}

TrialRow trial_row_for(const TrialSpec& trial, int attempt) {
  TrialRow row;
  set_fixed(row.trial_id, trial.id);
  row.attempt = attempt;
  row.repeat = trial.repeat;
  row.plan_index = trial.plan_index;
  // A program's built-in fields that its file neither sets nor names are
  // blank (docs/results.md): "" for names, NaN for the learning rate, 0 for
  // epochs and batch size, a depth of -1 for hidden widths.
  if (trial.shows_field("dataset")) set_fixed(row.dataset, dataset_name(trial.dataset.kind));
  if (trial.shows_field("model")) set_fixed(row.model, model_name(trial.model));
  if (trial.shows_field("optimizer")) set_fixed(row.optimizer, optimizer_name(trial.optimizer.kind));
  row.learning_rate =
      trial.shows_field("learning_rate") ? trial.learning_rate : std::numeric_limits<double>::quiet_NaN();
  row.epochs = trial.shows_field("epochs") ? trial.epochs : 0;
  row.batch_size = trial.shows_field("batch_size") ? trial.batch_size : 0;
  // The sweep file's checks bound both lists; the min() keeps a hand-built
  // spec from writing past the fixed columns.
  row.depth = trial.shows_field("hidden") ? static_cast<std::int32_t>(trial.hidden.size()) : kBlankDepth;
  const std::size_t hidden = std::min(trial.hidden.size(), row.hidden.size());
  for (std::size_t i = 0; i < hidden && row.depth > 0; ++i) row.hidden[i] = trial.hidden[i];
  if (trial.model == ModelKind::cnn && trial.shows_field("channels")) {
    const std::size_t channels = std::min(trial.channels.size(), row.channels.size());
    for (std::size_t i = 0; i < channels; ++i) row.channels[i] = trial.channels[i];
  }
  set_fixed(row.memory_plan, trial.shows_field("memory_plan") ? memory_plan_name(trial.memory_plan) : "");
  row.recompute_every = trial.effective_recompute_every();
  row.seed = trial.seed;
  set_fixed(row.definition, trial.canonical_text());
  set_fixed(row.trainer, trial.trainer());
  set_fixed(row.params, trial.params_json());
  if (trial.search) {
    row.search = trial.search->search;
    row.probe = trial.search->probe;
    row.axis_value = trial.search->value;
    row.search_limit = static_cast<std::int64_t>(trial.search->limit_bytes);
    row.full_run = trial.search->full ? 1 : 0;
    set_fixed(row.search_device, trial.search->gpu ? "gpu" : "host");
  }
  return row;
}

std::vector<int> counter_slots(std::span<const std::string> sampler_counters, std::span<const std::string> columns) {
  std::vector<int> sources(std::min(columns.size(), kMaxCounters), -1);
  for (std::size_t column = 0; column < sources.size(); ++column)
    for (std::size_t source = 0; source < sampler_counters.size() && source < kMaxCounters; ++source)
      if (sampler_counters[source] == columns[column]) {
        sources[column] = static_cast<int>(source);
        break;
      }
  return sources;
}

SampleRow sample_row(const Sample& sample, std::span<const int> sources) {
  SampleRow row;
  row.epoch = sample.epoch;
  row.phase = sample.phase;
  row.t = sample.t_seconds();
  row.rss = sample.rss_bytes;
  row.anon_rss = sample.anon_rss_bytes;
  row.pss = sample.pss_bytes;
  row.sys_used = sample.sys_used_bytes;
  row.sys_total = sample.sys_total_bytes;
  row.sys_available = sample.sys_available_bytes;
  row.sys_active = sample.sys_active_bytes;
  row.gpu_used = sample.gpu_used_bytes;
  row.gpu_tree_used = sample.gpu_tree_used_bytes;
  const std::size_t column_count = std::min(sources.size(), row.counters.size());
  for (std::size_t column = 0; column < column_count; ++column)
    row.counters[column] = sources[column] < 0 ? -1 : sample.counters[static_cast<std::size_t>(sources[column])];
  return row;
}

SampleRow sample_row(const Sample& sample, std::span<const std::string> sampler_counters,
                     std::span<const std::string> columns) {
  return sample_row(sample, counter_slots(sampler_counters, columns));
}

std::optional<std::uint64_t> trial_id_number(std::string_view id) {
  constexpr std::size_t kIdDigits = 12;
  if (id.size() != kIdDigits) return std::nullopt;
  std::uint64_t number = 0;
  for (const char c : id) {
    if (c >= '0' && c <= '9')
      number = number * 16 + static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      number = number * 16 + static_cast<std::uint64_t>(c - 'a' + 10);
    else
      return std::nullopt;
  }
  return number;
}

namespace {

// The ids sorted, joined by commas. As numbers when they all are trial_id()'s:
// every rank hashes 10^6 of them before a sweep starts, and sorting strings
// took most of that.
std::string sorted_ids_text(const SweepTrials& trials) {
  std::vector<std::uint64_t> numbers;
  numbers.reserve(trials.size());
  for (const TrialSpec& trial : trials) {
    const std::optional<std::uint64_t> number = trial_id_number(trial.id);
    if (!number) {
      std::vector<std::string> ids;
      for (const TrialSpec& t : trials) ids.push_back(t.id);
      std::sort(ids.begin(), ids.end());
      return fmt::format("{}", fmt::join(ids, ","));
    }
    numbers.push_back(*number);
  }
  std::sort(numbers.begin(), numbers.end());
  std::string text;
  text.reserve(numbers.size() * 13);
  for (std::size_t k = 0; k < numbers.size(); ++k) {
    if (k > 0) text += ',';
    fmt::format_to(std::back_inserter(text), "{:012x}", numbers[k]);
  }
  return text;
}

}  // namespace

std::string legacy_sweep_hash(const SweepSpec& sweep) {
  // Events keep their order: it is the samples table's column order.
  const std::string text = fmt::format("trials={}\ninterval_ms={}\nevents={}\n", sorted_ids_text(sweep.trials),
                                       sweep.sampler.interval_ms, fmt::join(sweep.sampler.events, ","));
  return fmt::format("{:0{}x}", stable_hash(text), kSweepHashHexDigits);
}

std::string sweep_hash(const SweepSpec& sweep) {
  if (sweep.definition.empty()) return legacy_sweep_hash(sweep);
  const std::string text = fmt::format("definition={}\npart={}\ninterval_ms={}\nevents={}\n", sweep.definition,
                                       sweep.part, sweep.sampler.interval_ms, fmt::join(sweep.sampler.events, ","));
  return fmt::format("{:0{}x}", stable_hash(text), kSweepHashHexDigits);
}

}  // namespace memsweep
