#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs the Debian packages,
# checks the formatting, builds, runs every test under ctest, runs the unit,
# module and MPI tests again under ASan+UBSan and the sampler and scheduler
# tests under TSan (MEMSWEEP_SANITIZERS, default "address thread"; empty
# skips them), then fuzzes each input parser for a bounded time
# (MEMSWEEP_FUZZ_SECONDS, 60 s each; 0 skips it) on the corpus kept in
# tests/fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's end, in seconds since the start: what CI's time goes to.
step_done() { echo "ci/test.sh: $1 done at $SECONDS s"; }

bash ci/install-deps.sh
bash ci/check-format.sh
step_done "install and format check"
bash ci/build.sh
step_done build
ctest --test-dir "${MEMSWEEP_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
step_done tests
sanitizers=${MEMSWEEP_SANITIZERS-address thread}
# shellcheck disable=SC2086 # a list of words
[ -z "$sanitizers" ] || bash ci/sanitize.sh $sanitizers
step_done sanitizers
bash ci/fuzz.sh "${MEMSWEEP_FUZZ_SECONDS:-60}"
step_done fuzzing
