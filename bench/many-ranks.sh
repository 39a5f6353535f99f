#!/usr/bin/env bash
# Many ranks on one machine (issue 29): `mpirun --oversubscribe -np N` of a
# sweep of short program trials (`sleep`, 10 per worker), for this memsweep
# and, with BASELINE, an earlier one in the same run. Per run: the wall
# time, the scheduling efficiency (the trials' summed wall time over the
# workers' time: workers x the sweep's time), rank 0's CPU seconds (user +
# system, read from /proc until it exits) and whether every trial has
# exactly one `ok` row in the file. Usage:
#   bench/many-ranks.sh [MEMSWEEP] [RANKS...]      (RANKS default: 16 64)
set -euo pipefail
memsweep=$(realpath "${1:-build/memsweep}")
shift || true
ranks_list=("${@:-16 64}")
# shellcheck disable=SC2206 # a list of words
ranks_list=(${ranks_list[*]})
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python=/usr/bin/python3
ticks=$(getconf CLK_TCK)

sweep_for() {  # N ranks: 10 trials per worker of 0.5 s each
  local trials=$((10 * ($1 - 1)))
  {
    echo '[sweep]'
    echo 'name = "many"'
    echo '[sampler]'
    echo 'interval_ms = 10'
    echo '[programs.nap]'
    echo 'command = ["sleep", "0.5"]'
    echo '[defaults]'
    echo 'program = "nap"'
    echo '[grid]'
    echo "seed = [$(seq -s ', ' 1 "$trials")]"
  } >"$dir/many-$1.toml"
  echo "$trials"
}

rank0_of() {
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then echo "$pid"; fi
  done
}

one_run() {  # BINARY RANKS TRIALS -> "wall efficiency rank0_cpu ok_rows/trials"
  local binary=$1 ranks=$2 trials=$3 out="$dir/out-$RANDOM.h5"
  local start end rank0="" cpu=0
  start=$(date +%s.%N)
  mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$binary" run "$dir/many-$ranks.toml" -o "$out" -q \
    >/dev/null 2>"$dir/err" &
  local job=$!
  while kill -0 "$job" 2>/dev/null; do
    [ -z "$rank0" ] && rank0=$(rank0_of "$job")
    if [ -n "$rank0" ] && [ -r "/proc/$rank0/stat" ]; then
      cpu=$(awk '{print $14 + $15}' "/proc/$rank0/stat" 2>/dev/null || echo "$cpu")
    fi
    sleep 0.2
  done
  wait "$job" || { echo "run failed: $(tail -3 "$dir/err")"; return; }
  end=$(date +%s.%N)
  "$python" - "$out" "$start" "$end" "$ranks" "$trials" "$cpu" "$ticks" <<'PY'
import sys, h5py, collections
path, start, end, ranks, trials, cpu, ticks = sys.argv[1:]
wall = float(end) - float(start)
with h5py.File(path, "r") as f:
    rows = f["trials"][:]
ok = collections.Counter(r["trial_id"] for r in rows if r["status"] == b"ok")
busy = sum(float(r["wall_seconds"]) for r in rows)
workers = int(ranks) - 1
once = sum(1 for c in ok.values() if c == 1)
print(f"{wall:8.1f} {busy / (workers * wall):10.2f} {int(cpu) / int(ticks):12.2f} {once:>6}/{trials}")
PY
  rm -f "$out"
}

printf '%-9s %6s %8s %10s %12s %13s\n' binary ranks "wall (s)" efficiency "rank0 cpu s" "ok once"
for ranks in "${ranks_list[@]}"; do
  trials=$(sweep_for "$ranks")
  printf '%-9s %6s %s\n' this "$ranks" "$(one_run "$memsweep" "$ranks" "$trials")"
  [ -n "${BASELINE:-}" ] && printf '%-9s %6s %s\n' baseline "$ranks" "$(one_run "$(realpath "$BASELINE")" "$ranks" "$trials")"
done
