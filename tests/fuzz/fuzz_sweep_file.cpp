// Fuzz target: the sweep file (TOML), as `memsweep run`, `plan` and
// `estimate` read it: parse_sweep, then what they do with every trial (its
// id text, its summary, its [params] and program command line, the sweep's
// hash, splitting into parts).
// ConfigError and the rest of the InputError family are the expected answer
// to bad input; anything else escaping, or a crash, is a finding.

#include "memsweep/config.hpp"
#include "memsweep/program.hpp"
#include "memsweep/results.hpp"
#include "memsweep/sweep_split.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace {

// Splits the sweep by a field the fuzzer picks from the input's size, so
// that each field is tried without costing every input all of them.
constexpr std::string_view kFieldsToSplitBy[] = {"dataset",    "model",  "optimizer", "learning_rate", "epochs",
                                                 "batch_size", "hidden", "channels",  "repeat"};

// A sweep of up to 10^8 trials is read in milliseconds, and made a trial at
// a time: the fuzzer makes every trial of a small one, and of a larger one
// the trials that give each value (what run and plan check).
constexpr std::size_t kTrialsMadeEach = 10'000;

void use(const memsweep::SweepSpec& sweep, std::size_t size) {
  const std::vector<memsweep::TrialSpec> trials =
      sweep.trials.size() <= kTrialsMadeEach ? sweep.trials.list() : sweep.trials.every_value();
  for (const memsweep::TrialSpec& trial : trials) {
    (void)trial.canonical_text();
    (void)trial.summary_text();
    (void)memsweep::trial_row_for(trial, 0);
    (void)trial.params_json();
    // Not check_program: it looks at the fuzzing machine's files.
    if (trial.program) (void)memsweep::program_invocation(trial, memsweep::ProgramRunValues{});
  }
  (void)memsweep::sweep_hash(sweep);
  const std::string_view field = kFieldsToSplitBy[size % std::size(kFieldsToSplitBy)];
  // A split that is not a grid axis looks at every trial.
  if (sweep.trials.size() > kTrialsMadeEach && !sweep.trials.axis(field)) return;
  const auto parts = memsweep::split_sweep(sweep, field);
  if (!parts.empty()) (void)memsweep::select_named_part(sweep, parts.back().name());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    use(memsweep::parse_sweep(text, "fuzz.toml"), size);
  } catch (const memsweep::InputError&) {
    // Bad input, said so: what memsweep must do.
  }
  return 0;
}
