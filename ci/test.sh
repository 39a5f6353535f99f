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
watchdog=
# Ended with this script, whatever ends it (a failed test): the background
# builds, and the ctest watchdog below (left sleeping after a failed ctest,
# it once ended another checkout's ctest 45 min later).
trap 'kill -- -$builds 2>/dev/null || true; [ -z "$watchdog" ] || { pkill -P "$watchdog" 2>/dev/null; kill "$watchdog" 2>/dev/null; } || true' EXIT

# --timeout: the limit of a test that sets none (the sweeps under mpirun,
# the runner's): a test that hangs fails after 10 min and names itself,
# instead of holding its lane, and the RUN_SERIAL tests that wait for every
# other, until CI's own limit ends the run with no word of which test hung.
# The watchdog: ctest past MEMSWEEP_CTEST_LIMIT seconds (45 min; it takes
# 12 to 25) is ended, and the tests it was running are named last, where a
# CI log's tail shows them (a test killed at its timeout whose children hold
# its output pipe open keeps ctest waiting with no word).
ctest_limit=${MEMSWEEP_CTEST_LIMIT:-2700}
(
  sleep "$ctest_limit"
  # This script's own ctest ($$ is the script's PID in a subshell too), never another's.
  ctest_pid=$(pgrep -o -x -P $$ ctest) || exit 0
  echo "ci/test.sh: ctest still running after $ctest_limit s; the tests it runs:" >&2
  for test_pid in $(pgrep -P "$ctest_pid"); do
    echo "  $(ps -o etimes= -p "$test_pid") s: $(tr '\0' ' ' <"/proc/$test_pid/cmdline" 2>/dev/null)" >&2
  done
  kill -TERM "$ctest_pid"
) &
watchdog=$!
ctest --test-dir "${MEMSWEEP_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)" --timeout 600
pkill -P "$watchdog" 2>/dev/null || true; kill "$watchdog" 2>/dev/null || true
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
