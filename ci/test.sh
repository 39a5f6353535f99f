#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs the Debian packages,
# checks the formatting, builds, runs every test under ctest, runs the unit,
# module and MPI tests again under ASan+UBSan and the sampler and scheduler
# tests under TSan (MEMSWEEP_SANITIZERS, default "address thread"; empty
# skips them), then fuzzes each input parser for a bounded time
# (MEMSWEEP_FUZZ_SECONDS, 30 s each; 0 skips it) on the corpus kept in
# tests/fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's end, in seconds since the start: what CI's time goes to.
step_done() { echo "ci/test.sh: $1 done at $SECONDS s"; }

bash ci/install-deps.sh
bash ci/check-format.sh
step_done "install and format check"
bash ci/build.sh --tests
step_done build

sanitizers=${MEMSWEEP_SANITIZERS-address thread}
fuzz_seconds=${MEMSWEEP_FUZZ_SECONDS:-30}
# What the tests do not run (the benchmarks, the header check), then the
# sanitizer and fuzz builds, compile while the tests run, in the idle
# scheduling class (chrt --idle): they get only the CPU time the tests leave
# (the tests that wait on a trial, on mpirun or on Slurm leave much of it),
# and a test's process takes its core back at once when it wakes. Their
# output goes to a log, shown if they fail.
builds_log=${MEMSWEEP_BUILD_DIR:-build}/background-builds.log
setsid chrt --idle 0 bash -c '
  set -e
  start=$SECONDS
  cmake --build "$3" -j "$(nproc)"
  echo "benchmarks and header check: built in $((SECONDS - start)) s"
  # shellcheck disable=SC2086 # a list of words
  [ -z "$1" ] || bash ci/sanitize.sh --build-only $1
  [ "$2" = 0 ] || bash ci/fuzz.sh --build-only
' builds "$sanitizers" "$fuzz_seconds" "${MEMSWEEP_BUILD_DIR:-build}" >"$builds_log" 2>&1 &
builds=$!
# Ended with this script, whatever ends it (a failed test).
trap 'kill -- -$builds 2>/dev/null || true' EXIT

ctest --test-dir "${MEMSWEEP_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
step_done tests
if ! wait "$builds"; then
  cat "$builds_log" >&2
  echo "ci/test.sh: a build begun beside the tests failed (its log above: $builds_log)" >&2
  exit 1
fi
grep -E '^(benchmarks and header check|sanitize|fuzz): .*(build|built) in' "$builds_log" || true
step_done "benchmark, sanitizer and fuzz builds (begun beside the tests)"
# shellcheck disable=SC2086 # a list of words
[ -z "$sanitizers" ] || bash ci/sanitize.sh $sanitizers
step_done sanitizers
bash ci/fuzz.sh "$fuzz_seconds"
step_done fuzzing
