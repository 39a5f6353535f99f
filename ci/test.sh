#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs the Debian packages,
# checks the formatting, builds, runs every test under ctest, then fuzzes
# each input parser for a bounded time (MEMSWEEP_FUZZ_SECONDS, 60 s each;
# 0 skips it) on the corpus kept in tests/fuzz/corpus.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
bash ci/check-format.sh
bash ci/build.sh
ctest --test-dir "${MEMSWEEP_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
bash ci/fuzz.sh "${MEMSWEEP_FUZZ_SECONDS:-60}"
