#!/usr/bin/env bash
# Configures and builds memsweep into build/ (or $MEMSWEEP_BUILD_DIR): every
# target; with `--tests` what ctest runs (the test command, ci/test.sh, which
# builds the benchmarks and the header check while the tests run); or with
# `--run` the memsweep executable alone (the run command, ci/run-default.sh:
# no tests or benchmarks, so none of their packages).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${MEMSWEEP_BUILD_DIR:-build}
case "${1-}" in
  --run) with_tests=OFF targets=(--target memsweep) ;;
  --tests) with_tests=ON targets=(--target memsweep_tests) ;;
  "") with_tests=ON targets=() ;;
  *) echo "build: unknown argument '$1' (expected --run, --tests or nothing)" >&2; exit 2 ;;
esac
# Said on every configure: the cache keeps the last value, and the test
# command must get its tests back after a run command turned them off.
# -g1 (line tables and function names: what a backtrace or perf needs)
# instead of -g: full debug information makes GCC take about 40% longer.
# Ninja for a folder configured anew (its scheduling keeps both cores busy to
# the last target); a folder made with another generator keeps it. Unity
# builds of the modules and the executable (MEMSWEEP_UNITY_BUILD=OFF for
# none): a fresh build in about 40% of the time.
generator=()
[ -f "$build_dir/CMakeCache.txt" ] || ! command -v ninja >/dev/null || generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${MEMSWEEP_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DMEMSWEEP_BUILD_TESTS="$with_tests" -DMEMSWEEP_BUILD_BENCHMARKS="$with_tests" \
  -DMEMSWEEP_UNITY_BUILD="${MEMSWEEP_UNITY_BUILD:-ON}"
cmake --build "$build_dir" -j "$(nproc)" "${targets[@]}"
