// The search's pure part (docs/search.md): where a search stands, from the
// set of its finished probes, and which values to train next. Nothing here
// depends on the order results came in: the results are sorted first.

#include "memsweep/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace memsweep {
namespace {

using Value = std::int64_t;

constexpr std::array<std::pair<SearchState, std::string_view>, 6> kStates{{
    {SearchState::running, "running"},
    {SearchState::found, search_status::kFound},
    {SearchState::below_range, search_status::kBelowRange},
    {SearchState::above_range, search_status::kAboveRange},
    {SearchState::stopped, search_status::kStopped},
    {SearchState::failed, search_status::kFailed},
}};

// Bracket widths: converged when does_not_fit − fits <= max(1, resolution × fits).
double tolerance(const SearchSettings& settings, Value at) {
  return std::max(1.0, settings.resolution * static_cast<double>(at));
}
bool within_tolerance(const SearchSettings& settings, Value lo, Value hi) {
  return static_cast<double>(hi - lo) <= tolerance(settings, lo);
}
// A step up from `at` that closes a bracket with it: floor, so that the
// step itself is within the tolerance.
Value closing_step(const SearchSettings& settings, Value at) {
  return std::max<Value>(1, static_cast<Value>(std::floor(settings.resolution * static_cast<double>(at))));
}

bool needs_full_runs(const SearchSettings& settings) { return settings.verify && !settings.probes_are_full; }

// What the finished probes say, retries left out.
struct Known {
  std::vector<ProbeResult> results;  // sorted: the same set gives the same facts
  const ProbeResult* failure = nullptr;
  std::optional<Value> no_fit;    // H: the smallest value that did not fit
  std::optional<Value> fit;       // L: the largest fit below H
  bool fit_verified = false;      // L has a verified fit
  std::optional<Value> verified;  // the largest verified fit below H: the answer
  std::set<Value> tried;          // values with any result

  bool tried_full(Value value) const {
    return std::any_of(results.begin(), results.end(),
                       [&](const ProbeResult& r) { return r.value == value && r.full; });
  }
};

Known know(const SearchSettings& settings, std::span<const ProbeResult> finished) {
  Known known;
  for (const ProbeResult& result : finished)
    if (result.outcome != ProbeOutcome::retry) known.results.push_back(result);
  std::sort(known.results.begin(), known.results.end(), [](const ProbeResult& x, const ProbeResult& y) {
    return std::tie(x.value, x.full, x.outcome, x.peak_bytes, x.seconds, x.status, x.message) <
           std::tie(y.value, y.full, y.outcome, y.peak_bytes, y.seconds, y.status, y.message);
  });
  for (const ProbeResult& result : known.results) {
    known.tried.insert(result.value);
    if (result.outcome == ProbeOutcome::failed && known.failure == nullptr) known.failure = &result;
    if (result.outcome == ProbeOutcome::does_not_fit && !known.no_fit) known.no_fit = result.value;
  }
  const bool every_fit_verified = !needs_full_runs(settings);
  for (const ProbeResult& result : known.results) {
    if (result.outcome != ProbeOutcome::fits || (known.no_fit && result.value >= *known.no_fit)) continue;
    const bool verified = result.full || every_fit_verified;
    if (!known.fit || result.value > *known.fit) known.fit_verified = false;
    known.fit = result.value;
    known.fit_verified = known.fit_verified || verified;
    if (verified) known.verified = result.value;
  }
  return known;
}

// Least squares peak = a + b·x on the fits with a known peak (below H:
// fits past a value that did not fit are noise).
std::optional<PeakLine> least_squares(const Known& known) {
  std::vector<std::pair<double, double>> points;
  std::set<Value> values;
  for (const ProbeResult& result : known.results) {
    if (result.outcome != ProbeOutcome::fits || result.peak_bytes < 0) continue;
    if (known.no_fit && result.value >= *known.no_fit) continue;
    points.emplace_back(static_cast<double>(result.value), result.peak_bytes);
    values.insert(result.value);
  }
  if (values.size() < 2) return std::nullopt;
  double mean_x = 0.0;
  double mean_y = 0.0;
  for (const auto& [x, y] : points) {
    mean_x += x;
    mean_y += y;
  }
  mean_x /= static_cast<double>(points.size());
  mean_y /= static_cast<double>(points.size());
  double sxx = 0.0;
  double sxy = 0.0;
  for (const auto& [x, y] : points) {
    sxx += (x - mean_x) * (x - mean_x);
    sxy += (x - mean_x) * (y - mean_y);
  }
  const double b = sxy / sxx;
  return PeakLine{mean_y - b * mean_x, b};
}

// The line model predicts with: the fitted one, or through the one fit
// with the estimate's slope, else through the origin (a slope too steep:
// the prediction lands below the limit, where it tends to fit).
std::optional<PeakLine> prediction_line(const SearchSettings& settings, const Known& known,
                                        const std::optional<PeakLine>& fitted) {
  if (fitted) return fitted;
  for (const ProbeResult& result : known.results) {
    if (result.outcome != ProbeOutcome::fits || result.peak_bytes < 0) continue;
    if (known.no_fit && result.value >= *known.no_fit) continue;
    const auto x0 = static_cast<double>(result.value);
    if (settings.estimated_slope)
      return PeakLine{result.peak_bytes - *settings.estimated_slope * x0, *settings.estimated_slope};
    if (x0 <= 0) return std::nullopt;
    return PeakLine{0.0, result.peak_bytes / x0};
  }
  return std::nullopt;
}

// The values strictly between lo and hi that are neither tried nor running.
struct Candidates {
  const SearchSettings& settings;
  const Known& known;
  std::span<const NextProbe> running;
  std::vector<Value> values;

  bool is_running(Value value) const {
    return std::any_of(running.begin(), running.end(), [&](const NextProbe& p) { return p.value == value; });
  }
  bool is_new(Value value) const {
    return value >= settings.low && value <= settings.high && !known.tried.contains(value) && !is_running(value) &&
           std::find(values.begin(), values.end(), value) == values.end();
  }
  bool add(Value value) {
    if (!is_new(value)) return false;
    values.push_back(value);
    return true;
  }
};

// A point between a and b at fraction t of the way on a log scale (linear
// where a <= 0), rounded.
Value between(Value a, Value b, double t) {
  const auto da = static_cast<double>(a);
  const auto db = static_cast<double>(b);
  if (a <= 0) return static_cast<Value>(std::llround(da + (db - da) * t));
  return static_cast<Value>(std::llround(da * std::pow(db / da, t)));
}

// Up to `count` points strictly inside (lo, hi): the k-section of the
// bracket on a log scale, the running values inside it taken as points
// already placed (each new point goes to the widest gap left).
void add_sections(Candidates& out, Value lo, Value hi, int count) {
  std::vector<Value> edges{lo, hi};
  for (const NextProbe& probe : out.running)
    if (probe.value > lo && probe.value < hi) edges.push_back(probe.value);
  for (Value value : out.values)
    if (value > lo && value < hi) edges.push_back(value);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  struct Gap {
    Value a, b;
    int points = 0;
  };
  std::vector<Gap> gaps;
  for (std::size_t i = 0; i + 1 < edges.size(); ++i)
    if (edges[i + 1] - edges[i] >= 2 && !within_tolerance(out.settings, edges[i], edges[i + 1]))
      gaps.push_back({edges[i], edges[i + 1]});
  if (gaps.empty()) return;
  const auto width = [](const Gap& gap) {
    const double span = gap.a > 0 ? std::log(static_cast<double>(gap.b) / static_cast<double>(gap.a))
                                  : static_cast<double>(gap.b - gap.a);
    return span / (gap.points + 1);
  };
  for (int i = 0; i < count; ++i) {
    auto widest =
        std::max_element(gaps.begin(), gaps.end(), [&](const Gap& x, const Gap& y) { return width(x) < width(y); });
    ++widest->points;
  }
  for (const Gap& gap : gaps)
    for (int i = 1; i <= gap.points; ++i)
      out.add(std::clamp(between(gap.a, gap.b, static_cast<double>(i) / (gap.points + 1)), gap.a + 1, gap.b - 1));
}

// doubling: from the low end (or the largest fit) up by factors of 2
// until something does not fit; then the bracket's sections.
void add_doubling(Candidates& out, Value lo, Value hi, int count) {
  if (out.known.no_fit) return add_sections(out, lo, hi, count);
  Value value = out.known.fit.value_or(out.settings.low);
  if (!out.known.fit && out.add(value)) --count;
  while (count > 0 && value < out.settings.high) {
    value = std::min(out.settings.high, std::max<Value>(value * 2, value + 1));
    if (out.add(value)) --count;
  }
}

// The value just below `no_fit` that closes the bracket with it.
Value closing_below(const SearchSettings& settings, Value no_fit) {
  const auto below = static_cast<Value>(std::ceil(static_cast<double>(no_fit) / (1.0 + settings.resolution)));
  return std::min(no_fit - 1, below);
}

// Where the line meets the limit, a hair below (floor; the epsilon keeps
// an exact crossing's rounding error from costing a value).
std::optional<double> crossing(const SearchSettings& settings, const PeakLine& line) {
  constexpr double kEpsilon = 1e-6;
  if (line.b <= 0) return std::nullopt;
  return std::floor((settings.limit_bytes - line.a) / line.b + kEpsilon);
}

bool crept_up(const SearchSettings& settings, const Known& known) {
  if (!known.fit) return false;
  return std::any_of(known.results.begin(), known.results.end(), [&](const ProbeResult& result) {
    return result.outcome == ProbeOutcome::fits && result.value < *known.fit &&
           *known.fit - result.value <= closing_step(settings, result.value);
  });
}

// model: where the line meets the limit.
void add_model(Candidates& out, Value lo, Value hi, int count) {
  const SearchSettings& settings = out.settings;
  const Known& known = out.known;
  if (known.results.empty() && out.running.empty()) {
    out.add(settings.low);
    return add_sections(out, settings.low, settings.high, count - 1);
  }
  // Two fits within a step of each other below the bracket's top: the line
  // crept up instead of jumping, so memory is not linear here (a trainer's
  // last partial batch makes it rise and fall along the batch size). The
  // bracket's midpoint then, as bisect would.
  if (crept_up(settings, known)) return add_sections(out, lo, hi, count);
  const std::optional<PeakLine> line = prediction_line(settings, known, least_squares(known));
  const std::optional<double> x = line ? crossing(settings, *line) : std::nullopt;
  if (!x) return add_sections(out, lo, hi, count);
  const std::size_t before = out.values.size();
  if (*x >= static_cast<double>(hi)) {
    // The line says everything fits: see if the high end does.
    if (!known.no_fit) out.add(settings.high);
  } else if (known.fit && *x <= static_cast<double>(*known.fit)) {
    // The prediction repeats the last fit: just above it, to close the bracket.
    const Value above = *known.fit + closing_step(settings, *known.fit);
    if (above < hi) out.add(above);
  } else if (*x > static_cast<double>(lo)) {
    const auto at = static_cast<Value>(*x);
    if (out.add(at) && count > 1) {
      const Value above = at + closing_step(settings, at);
      if (above < hi) out.add(above);
    }
  }
  const int added = static_cast<int>(out.values.size() - before);
  add_sections(out, lo, hi, count - added);
}

}  // namespace

std::string_view search_state_name(SearchState state) {
  for (const auto& [value, name] : kStates)
    if (value == state) return name;
  return "unknown";
}

SearchSettings search_settings(const SearchSpec& spec, std::size_t limit_index, bool probes_are_full) {
  SearchSettings settings;
  settings.low = spec.low;
  settings.high = spec.high;
  settings.limit_bytes = static_cast<double>(spec.limits.at(limit_index));
  settings.resolution = spec.resolution;
  settings.max_trials = spec.max_trials;
  settings.verify = spec.verify;
  settings.probes_are_full = probes_are_full;
  settings.strategy = spec.strategy;
  return settings;
}

SearchStep next_probes(const SearchSettings& settings, std::span<const ProbeResult> finished,
                       std::span<const NextProbe> running, int wanted) {
  const Known known = know(settings, finished);
  SearchStep step;
  SearchStanding& standing = step.standing;
  standing.trials = static_cast<int>(known.results.size());
  standing.fits = known.verified;
  standing.fits_verified = known.verified.has_value();
  standing.does_not_fit = known.no_fit;
  standing.fitted = least_squares(known);
  const bool idle = running.empty();
  const auto answer_text = [&] {
    const std::string fits = known.verified ? fmt::format("{} (verified)", *known.verified) : "none verified";
    const std::string no_fit = known.no_fit ? fmt::format("{}", *known.no_fit) : "none";
    return fmt::format("largest that fits {}, smallest that does not {}", fits, no_fit);
  };
  const auto finish = [&](SearchState state, std::string message) {
    standing.message = std::move(message);
    if (idle) standing.state = state;
    return step;
  };

  if (known.failure != nullptr)
    return finish(SearchState::failed,
                  fmt::format("{}: {}", known.failure->status ? status_name(*known.failure->status) : "unknown status",
                              known.failure->message));
  if (known.no_fit && *known.no_fit == settings.low)
    return finish(SearchState::below_range, fmt::format("even the low end {} does not fit", settings.low));
  const bool converged = known.fit && known.no_fit && within_tolerance(settings, *known.fit, *known.no_fit);
  const bool at_high = known.fit && *known.fit == settings.high;
  if (at_high && known.fit_verified)
    return finish(SearchState::above_range, fmt::format("the high end {} fits (verified)", settings.high));
  if (converged && known.fit_verified) return finish(SearchState::found, answer_text());

  const int budget = settings.max_trials - standing.trials - static_cast<int>(running.size());
  const std::string stopped_text = fmt::format("stopped after max_trials ({}): {}", settings.max_trials, answer_text());
  if (budget <= 0) return finish(SearchState::stopped, stopped_text);
  const bool unverified = known.fit && !known.fit_verified;
  const NextProbe verification{known.fit.value_or(0), true};
  const bool verifying = std::find(running.begin(), running.end(), verification) != running.end();
  // The bracket has closed on an unverified fit, or the last trial is left:
  // it goes to the answer's full run.
  if (unverified && (converged || at_high || budget == 1)) {
    if (!verifying) step.next.push_back(verification);
    return step;
  }
  if (verifying) return step;
  // Keep one trial for the verification of whatever fits next.
  const int count = std::min(wanted, budget - (needs_full_runs(settings) && !known.fit_verified ? 1 : 0));
  if (count <= 0) return idle ? finish(SearchState::stopped, stopped_text) : step;

  Candidates out{settings, known, running, {}};
  const Value lo = known.fit.value_or(settings.low);
  const Value hi = known.no_fit.value_or(settings.high);
  const bool low_open = !known.tried.contains(settings.low) && !known.fit;
  const bool high_open = !known.tried.contains(settings.high) && !known.no_fit;
  // The bracket has collapsed onto an untested end of the range.
  if (low_open && (hi - settings.low <= 1 || (known.no_fit && within_tolerance(settings, settings.low, hi))))
    out.add(settings.low);
  if (high_open && (settings.high - lo <= 1 || (known.fit && within_tolerance(settings, lo, settings.high))))
    out.add(settings.high);
  // The answer's full run did not fit where its probe had: the probes'
  // curve runs below the full one, so the next value is trained in full,
  // just below, until one fits.
  std::vector<NextProbe> full_runs;
  if (known.no_fit && needs_full_runs(settings) && known.tried_full(*known.no_fit)) {
    const Value below = closing_below(settings, *known.no_fit);
    if (below > lo && out.is_new(below)) full_runs.push_back({below, true});
  }
  if (!full_runs.empty()) {
    step.next = full_runs;
    return step;
  }
  const int left = count - static_cast<int>(out.values.size());
  if (left > 0) {
    switch (settings.strategy) {
      case SearchStrategy::bisect: add_sections(out, lo, hi, left); break;
      case SearchStrategy::doubling: add_doubling(out, lo, hi, left); break;
      case SearchStrategy::model: add_model(out, lo, hi, left); break;
    }
  }
  if (static_cast<int>(out.values.size()) > count) out.values.resize(static_cast<std::size_t>(count));
  std::sort(out.values.begin(), out.values.end());
  for (Value value : out.values) step.next.push_back({value, false});
  if (step.next.empty() && idle)
    return finish(SearchState::stopped, "no untried value left in the bracket: " + answer_text());
  standing.message = answer_text();
  return step;
}

}  // namespace memsweep
