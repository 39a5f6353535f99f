#!/usr/bin/env bash
# What a process per trial costs (docs/runner.md, Figures): a sweep of 200
# tiny trials, one rank training, run by this memsweep (a process per trial)
# and by the baseline's in-process runner (bench/build-baseline.sh), rounds
# interleaved, medians compared; and each trial process's start (spawn to
# ready, the dataset already shared), median and p95, from the file's
# start_seconds column.
# Usage: bench/run-runner-bench.sh [ROUNDS] [BASELINE_MEMSWEEP]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
new=$PWD/build/memsweep
old=${2:-$(bash bench/build-baseline.sh | tail -1)}
python=/usr/bin/python3
work=$(mktemp -d)
# The shared datasets where a node keeps them: memory (tmpfs), not a disk's page cache.
shm=$(mktemp -d /dev/shm/memsweep-bench-XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT
export OMP_NUM_THREADS=1 MEMSWEEP_SHM=$shm

# 200 distinct tiny trials: a hidden width each, one short epoch.
{
  printf '[sweep]\nname = "tiny"\n[defaults]\ndataset = "synthetic"\n'
  printf 'synthetic = { shape = [1, 8, 8], classes = 4, train_size = 64, test_size = 16 }\n'
  printf 'epochs = 1\nbatch_size = 16\n[grid]\nhidden = ['
  for width in $(seq 8 207); do printf '[%d], ' "$width"; done
  printf ']\n'
} > "$work/tiny.toml"

declare -a new_seconds old_seconds
for round in $(seq 1 "$rounds"); do
  for which in new old; do
    binary=$new
    [ "$which" = old ] && binary=$old
    start=$EPOCHREALTIME
    "$binary" run "$work/tiny.toml" -o "$work/$which-$round.h5" -q > /dev/null 2>&1
    seconds=$(awk "BEGIN { print $EPOCHREALTIME - $start }")
    if [ "$which" = new ]; then new_seconds+=("$seconds"); else old_seconds+=("$seconds"); fi
    echo "round $round, $which: $seconds s" >&2
  done
done

"$python" - "$work" "$rounds" "${new_seconds[*]}" "${old_seconds[*]}" <<'EOF'
import statistics, sys
import h5py, numpy as np
work, rounds = sys.argv[1], int(sys.argv[2])
new = [float(x) for x in sys.argv[3].split()]
old = [float(x) for x in sys.argv[4].split()]
starts = []
for r in range(1, rounds + 1):
    with h5py.File(f"{work}/new-{r}.h5", "r") as f:
        trials = f["trials"][:]
        assert (trials["status"] == b"ok").all(), "every trial ok"
        starts.extend(trials["start_seconds"])
starts = np.array(starts) * 1e3
n, o = statistics.median(new), statistics.median(old)
print(f"sweep of 200 tiny trials, one rank, {rounds} rounds interleaved (medians):")
print(f"  process per trial (this build): {n:7.2f} s  = {n / 200 * 1e3:6.1f} ms per trial")
print(f"  in-process runner (baseline):   {o:7.2f} s  = {o / 200 * 1e3:6.1f} ms per trial")
print(f"  ratio: {n / o:.2f}x; a process per trial adds {(n - o) / 200 * 1e3:.1f} ms per trial")
print(f"trial process start (spawn to ready), {len(starts)} starts: median {np.median(starts):.1f} ms, "
      f"p95 {np.percentile(starts, 95):.1f} ms, max {starts.max():.1f} ms")
EOF
