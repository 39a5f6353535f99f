#pragma once
// A sweep split into parts by one trial field, so that each task of a Slurm
// array job runs one part into its own results file (docs/sweep-file.md,
// "Splitting a sweep into parts"). Pure: no file is read or written.

#include "memsweep/config.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace memsweep {

// The fields a sweep can be split by, with the sweep file's key names;
// params.NAME is a program trial's parameter NAME (trials without it are
// one part, of value "(none)").
inline constexpr std::string_view kSplitFields =
    "dataset, model, optimizer, learning_rate, epochs, batch_size, hidden, channels, memory_plan, repeat, "
    "params.NAME";

// The trials that share one value of the field.
struct SweepPart {
  std::string field;  // the sweep file's key, e.g. "dataset"
  // The value as text, as `memsweep plan` prints it: "mnist", "synthetic:1x28x28",
  // "128-64" (hidden, channels; "none" when empty or not a CNN), "0.01"
  // (learning_rate, 6 significant digits), "32", a parameter's text as its
  // {NAME} placeholder gives it ("16,32" for a list). Trials whose value
  // prints the same are one part.
  std::string value;
  std::string label;   // "<field>-<value>" with only [A-Za-z0-9._-] (others become _): "dataset-mnist"
  SweepTrials trials;  // in the sweep's order

  // "dataset=mnist": how a results file records the part (its `part` attribute).
  std::string name() const { return field + "=" + value; }
};

// The field's value of one trial, as split_sweep groups it. Throws
// InputError for a field that is not one of kSplitFields.
std::string split_value(const TrialSpec& trial, std::string_view field);

// The parts, in the order of their first trial in the sweep; each part's
// trials keep the sweep's order. Throws InputError naming an unknown field
// and listing kSplitFields.
std::vector<SweepPart> split_sweep(const SweepSpec& sweep, std::string_view field);

// One part, as `memsweep run --split-by FIELD --part K` runs it.
struct SelectedPart {
  SweepSpec sweep;  // the whole sweep's settings and source text, with only the part's trials
  SweepPart part;
  int index = 0;  // K, from 0
  int count = 0;  // how many parts the sweep has by this field
};

// Part `index` (0-based) of split_sweep(sweep, field). Throws InputError:
// "--part K: the sweep has N parts by FIELD (0..N-1)" when out of range.
SelectedPart select_part(const SweepSpec& sweep, std::string_view field, int index);

// The sweep with only the trials of the part named as SweepPart::name()
// gives it ("dataset=mnist"): how `memsweep summary` applies a results
// file's `part` attribute. Throws InputError when the name has no "=", the
// field is unknown, or no trial has that value.
SweepSpec select_named_part(const SweepSpec& sweep, std::string_view name);

}  // namespace memsweep
