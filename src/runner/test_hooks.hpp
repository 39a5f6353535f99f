#pragma once
// Faults the tests inject into a trial process (a hang, a memory burst)
// through one environment variable, read once when the process starts, so
// that a normal trial pays one getenv and nothing else:
//
//   MEMSWEEP_TEST_TRIAL_HOOK="TRIAL_ID:ACTION[;TRIAL_ID:ACTION...]"
//
// TRIAL_ID is a trial's id, or * for every trial. ACTION is `hang` (after
// the go-ahead the process stops making progress: it sleeps and never
// trains) or `allocate=BYTES` (it first allocates and touches BYTES in
// steps of 16 MiB every millisecond, holds them, then trains).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memsweep::runner::detail {

inline constexpr std::string_view kTestHookEnvVar = "MEMSWEEP_TEST_TRIAL_HOOK";

struct TrialHook {
  bool hang = false;
  std::uint64_t allocate_bytes = 0;
};

// The hook for `trial_id` in `spec` (the variable's value); nullopt when
// none applies. Throws std::invalid_argument for a malformed spec, so that
// a typo in a test fails it rather than testing nothing.
std::optional<TrialHook> parse_test_hook(std::string_view spec, std::string_view trial_id);

// From the environment.
std::optional<TrialHook> test_hook_for(std::string_view trial_id);

// Carries the hook out after the go-ahead: never returns for `hang`.
// The allocated memory is kept for the rest of the process.
void run_test_hook(const TrialHook& hook);

}  // namespace memsweep::runner::detail
