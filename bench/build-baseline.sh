#!/usr/bin/env bash
# Builds the memsweep of an earlier commit beside this one, for benchmarks
# that compare against it in the same run: by default the last commit whose
# runner trained every trial inside its rank (before trial processes).
# Prints the path of its memsweep binary on the last line.
# Usage: bench/build-baseline.sh [COMMIT] [FOLDER]
set -euo pipefail
cd "$(dirname "$0")/.."
commit=${1:-d00baa2}
folder=${2:-$PWD/.bench-baseline}
if [ ! -d "$folder/src/.git" ] && [ ! -f "$folder/src/.git" ]; then
  mkdir -p "$folder"
  git worktree add --detach "$folder/src" "$commit" >&2
fi
git -C "$folder/src" checkout --quiet --detach "$commit"
cmake -S "$folder/src" -B "$folder/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DMEMSWEEP_BUILD_TESTS=OFF -DMEMSWEEP_BUILD_BENCHMARKS=OFF \
  >&2
cmake --build "$folder/build" -j "$(nproc)" --target memsweep >&2
echo "$folder/build/memsweep"
