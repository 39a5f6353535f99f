#!/usr/bin/env bash
# How honest the ETA is on a sweep whose slow trials come last (docs/sweep.md,
# "ETA"): 16 MLPs, then 6 CNNs, the same epochs and synthetic data, on 2
# workers (mpirun -np 3; rank 0 only writes). Each progress line's ETA is
# stamped with the time it was printed; at the lines nearest 25 %, 50 % and
# 75 % of the wall time the script prints the ETA the line gave (the cost
# model, eta.hpp) and the one the old formula gives from the same run's
# finished-trial times (their mean × trials not finished / workers), against
# the true time left (the run's end less the line's time).
# Usage: bench/eta-bench.sh [MPIRUN_ARGS…]   (needs build/memsweep and mpirun)
set -euo pipefail
cd "$(dirname "$0")/.."
memsweep=$PWD/build/memsweep
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
workers=2

data='dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 6000, test_size = 1000 }'
{
  printf '[sweep]\nname = "eta-bench"\n[defaults]\nepochs = 10\nbatch_size = 32\nlearning_rate = 0.01\n'
  # Explicit trials run in file order: the cheap ones first.
  for width in $(seq 128 24 488); do printf '[[trial]]\n%s\nhidden = [%d, 128]\n' "$data" "$width"; done
  for first in 16 20 24 28 32 36; do
    printf '[[trial]]\n%s\nmodel = "cnn"\nchannels = [%d, 48]\nhidden = [64]\n' "$data" "$first"
  done
} > "$work/eta.toml"

stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }

start=$(date +%s.%N)
mpirun --allow-run-as-root --oversubscribe -np $((workers + 1)) "$@" \
  "$memsweep" run "$work/eta.toml" -o "$work/eta.h5" --threads 1 2>&1 >/dev/null | stamp > "$work/lines"
end=$(date +%s.%N)
grep -F '] ' "$work/lines" | grep -E '\[ *[0-9]+/[0-9]+\]' > "$work/progress" || true

awk -v start="$start" -v end="$end" -v workers="$workers" '
  # "3m20s", "45s", "1h05m" -> seconds
  function seconds(text,   total, number, unit) {
    total = 0
    while (match(text, /^[0-9]+[hms]/)) {
      number = substr(text, 1, RLENGTH - 1) + 0
      unit = substr(text, RLENGTH, 1)
      total += number * (unit == "h" ? 3600 : unit == "m" ? 60 : 1)
      text = substr(text, RLENGTH + 1)
    }
    return total
  }
  {
    t[NR] = $1 - start
    match($0, /\[ *[0-9]+\/[0-9]+\]/)
    split(substr($0, RSTART + 1, RLENGTH - 2), count, "/")
    done[NR] = count[1] + 0
    total = count[2] + 0
    for (i = 2; i <= NF; ++i) if ($i ~ /^[0-9.]+s$/) { sum += substr($i, 1, length($i) - 1); break }
    old[NR] = sum / done[NR] * (total - done[NR]) / workers
    new[NR] = -1
    for (i = 2; i < NF; ++i) if ($i == "ETA") new[NR] = seconds($(i + 1))
    lines = NR
  }
  END {
    wall = end - start
    printf "eta-bench: %d trials on %d workers, wall %.1f s\n", total, workers, wall
    printf "%-6s %8s %6s %10s %10s %10s %10s %10s\n", "point", "line at", "done", "true left", "new ETA", "new err", "old ETA", "old err"
    split("0.25 0.5 0.75", points, " ")
    for (p = 1; p <= 3; ++p) {
      at = points[p] * wall
      best = 0
      for (k = 1; k <= lines; ++k) if (new[k] >= 0 && (best == 0 || (t[k] - at)^2 < (t[best] - at)^2)) best = k
      if (best == 0) { printf "%-6s no progress line with an ETA\n", points[p] * 100 "%"; continue }
      left = wall - t[best]
      printf "%-6s %7.1fs %3d/%-2d %9.1fs %9.0fs %+9.0f%% %9.0fs %+9.0f%%\n", points[p] * 100 "%", t[best], done[best], total,
             left, new[best], 100 * (new[best] - left) / left, old[best], 100 * (old[best] - left) / left
    }
  }' "$work/progress"
echo "progress lines (seconds since start):"
awk -v start="$start" '{ $1 = sprintf("%7.1f", $1 - start); print }' "$work/progress"
