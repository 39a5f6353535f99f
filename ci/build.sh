#!/usr/bin/env bash
# Configures and builds memsweep into build/ (or $MEMSWEEP_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${MEMSWEEP_BUILD_DIR:-build}
# -g1 (line tables and function names: what a backtrace or perf needs)
# instead of -g: full debug information makes GCC take about 40% longer.
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${MEMSWEEP_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
cmake --build "$build_dir" -j "$(nproc)"
