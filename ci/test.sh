#!/usr/bin/env bash
# The test command (README.md, .ci/run): installs the Debian packages,
# checks the formatting, builds, and runs every test under ctest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh
bash ci/check-format.sh
bash ci/build.sh
ctest --test-dir "${MEMSWEEP_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
