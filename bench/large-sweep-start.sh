#!/usr/bin/env bash
# Large sweeps under mpirun (issue 29): for a [grid] and a [random] of 10^4
# to 10^7 tiny trials on RANKS ranks (4 by default), the seconds from
# `mpirun` to the first trial handed out (rank 0's "start" line, -v) and
# each rank's RSS 3 s after the first trial, minus the same rank's RSS for a
# 100-trial sweep in the same run: the sweep state each rank holds.
# With BASELINE (a memsweep binary of an earlier commit, e.g. from
# bench/build-baseline.sh 7c5d06c), the same for it, up to the 10^6 trials
# it accepted. Usage:
#   bench/large-sweep-start.sh [MEMSWEEP] [RANKS] [SIZES...]
set -euo pipefail
memsweep=$(realpath "${1:-build/memsweep}")
ranks=${2:-4}
shift $(($# > 2 ? 2 : $#))
sizes=("${@:-10000 100000 1000000 10000000}")
# shellcheck disable=SC2206 # a list of words
sizes=(${sizes[*]})
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mpi=(mpirun --allow-run-as-root --oversubscribe -np "$ranks")

python3 - "$dir" "${sizes[@]}" <<'PY'
import sys
head = ('[defaults]\ndataset = "synthetic"\nsynthetic = { shape = [1, 4, 4], classes = 2, train_size = 8, '
        'test_size = 4, noise = 0.5, seed = 1 }\nhidden = [4]\nbatch_size = 4\n')
def nums(n): return ", ".join(str(k) for k in range(1, n + 1))
# The base: 100 trials slow enough (a larger train split) to be running
# still when its ranks are measured.
with open(f"{sys.argv[1]}/grid-100.toml", "w") as f:
    f.write(head.replace("train_size = 8", "train_size = 40000") + "[grid]\nseed = [" + nums(100) + "]\n")
with open(f"{sys.argv[1]}/random-100.toml", "w") as f:
    f.write(head.replace("train_size = 8", "train_size = 40000") +
            "[random]\ncount = 100\nlearning_rate = { log_uniform = [1e-5, 1e-1] }\n")
for n in [int(s) for s in sys.argv[2:]]:
    # learning_rate x seed x epochs (the last axis varies fastest)
    rates = min(n, 100); seeds = min(max(n // 100, 1), 100); epochs = max(n // 10000, 1)
    with open(f"{sys.argv[1]}/grid-{n}.toml", "w") as f:
        f.write(head + "[grid]\nepochs = [" + nums(epochs) + "]\nlearning_rate = [" +
                ", ".join(f"{k}e-4" for k in range(1, rates + 1)) + "]\nseed = [" + nums(seeds) + "]\n")
    with open(f"{sys.argv[1]}/random-{n}.toml", "w") as f:
        f.write(head + f"[random]\ncount = {n}\nlearning_rate = {{ log_uniform = [1e-5, 1e-1] }}\n"
                "batch_size = { int_uniform = [1, 8] }\n")
PY

# The pids of the job's ranks (children of mpirun with a rank variable).
rank_pids() {
  for pid in $(pgrep -P "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK='; then echo "$pid"; fi
  done
}
rank_of() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

# One run: "SECONDS_TO_FIRST_TRIAL RSS_RANK0 RSS_RANK1 ..." (KiB), or "- ..."
# when no trial started within the limit.
measure() {
  local binary=$1 sweep=$2 out="$dir/out-$RANDOM.h5" err="$dir/err-$RANDOM"
  local start first="-"
  start=$(date +%s.%N)
  "${mpi[@]}" "$binary" run "$sweep" -o "$out" -v 2>"$err" >/dev/null &
  local job=$!
  for _ in $(seq 1 1200); do
    if grep -q '^start ' "$err" 2>/dev/null; then
      first=$(echo "$(date +%s.%N) - $start" | bc)
      break
    fi
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  sleep 3  # a few trials in: what each rank holds while the sweep runs
  local -A rss=()
  for pid in $(rank_pids "$job"); do rss[$(rank_of "$pid")]=$(rss_kib "$pid"); done
  kill -TERM "$job" 2>/dev/null || true
  wait "$job" 2>/dev/null || true
  local line="$first"
  for ((r = 0; r < ranks; ++r)); do line+=" ${rss[$r]:-0}"; done
  echo "$line"
  rm -f "$out" "$err"
}

report() {
  local name=$1 binary=$2 kind=$3 n=$4 base=$5
  local result
  result=$(measure "$binary" "$dir/$kind-$n.toml")
  read -r -a fields <<<"$result"
  read -r -a zero <<<"$base"
  local state=()
  for ((r = 1; r <= ranks; ++r)); do state+=("$(((fields[r] - zero[r]) / 1024))"); done
  printf '%-9s %-7s %9s %10s %10s %14s\n' "$name" "$kind" "$n" "${fields[0]}" "${state[0]}" \
    "$(printf '%s ' "${state[@]:1}")"
}

printf '%-9s %-7s %9s %10s %10s %14s\n' binary sweep trials "first (s)" "rank0 MiB" "workers MiB"
for kind in grid random; do
  base_new=$(measure "$memsweep" "$dir/$kind-100.toml")
  [ -n "${BASELINE:-}" ] && base_old=$(measure "$(realpath "$BASELINE")" "$dir/$kind-100.toml")
  for n in "${sizes[@]}"; do
    report this "$memsweep" "$kind" "$n" "$base_new"
    if [ -n "${BASELINE:-}" ] && [ "$n" -le 1000000 ]; then report baseline "$BASELINE" "$kind" "$n" "$base_old"; fi
  done
done
echo "MiB: each rank's RSS 3 s after the first trial, minus its RSS for a 100-trial sweep in the same run"
