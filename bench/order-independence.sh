#!/usr/bin/env bash
# Does a trial's footprint (peak - baseline) depend on what ran before it?
# (docs/runner.md, Figures.) Each probe trial is run (a) first in its rank,
# (b) right after a trial of about 1 GiB, (c) after 20 small ones, and (d)
# five more times first, by this memsweep (a process per trial) and by the
# baseline's in-process runner (bench/build-baseline.sh); one rank, one
# thread, synthetic data of MNIST's and CIFAR-10's shapes. The target: every
# footprint of a probe within 1 % or 256 KiB (whichever is larger) of its
# first.
# Usage: bench/order-independence.sh [BASELINE_MEMSWEEP]
set -euo pipefail
cd "$(dirname "$0")/.."
new=$PWD/build/memsweep
old=${1:-$(bash bench/build-baseline.sh | tail -1)}
python=/usr/bin/python3
work=$(mktemp -d)
# The shared datasets where a node keeps them: memory (tmpfs), not a disk's page cache.
shm=$(mktemp -d /dev/shm/memsweep-bench-XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT
export OMP_NUM_THREADS=1 MEMSWEEP_SHM=$shm

mnist='dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 2048, test_size = 256 }'
cifar='dataset = "synthetic"
synthetic = { shape = [3, 32, 32], classes = 10, train_size = 512, test_size = 128 }'

# name | dataset block | the trial's fields
probes=(
  "mlp-small|$mnist|hidden = [128]
batch_size = 32"
  "mlp-wide|$mnist|hidden = [1024, 512]
batch_size = 64
optimizer = \"adam\""
  "cnn|$mnist|model = \"cnn\"
channels = [16, 32]
hidden = [64]
batch_size = 32"
  "alexnet|$cifar|model = \"alexnet\"
hidden = [256]
batch_size = 32"
)
# About 1.1 GiB of parameters, gradients and Adam's moments; few examples,
# so that its epoch is short.
big='dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = 256, test_size = 64 }'"
hidden = [8192, 8192]
optimizer = \"adam\"
batch_size = 64
learning_rate = 0.001"

# A sweep of explicit trials in file order: each argument one [[trial]].
sweep() {
  local file=$1
  shift
  printf '[sweep]\nname = "order"\n[defaults]\nepochs = 1\nlearning_rate = 0.01\n' > "$file"
  for trial in "$@"; do printf '[[trial]]\n%s\n' "$trial" >> "$file"; done
}

run() {  # binary, sweep, output
  "$1" run "$2" -o "$3" -q > /dev/null 2>&1 || { echo "order-independence: $1 run $2 failed" >&2; exit 1; }
}

for probe in "${probes[@]}"; do
  name=${probe%%|*}
  rest=${probe#*|}
  data=${rest%%|*}
  fields=${rest#*|}
  trial="$data
$fields"
  small=()
  for width in $(seq 16 8 168); do small+=("$mnist
hidden = [$width]
batch_size = 16"); done
  sweep "$work/$name-first.toml" "$trial"
  sweep "$work/$name-big.toml" "$big" "$trial"
  sweep "$work/$name-small.toml" "${small[@]}" "$trial"
  for which in new old; do
    binary=$new
    [ "$which" = old ] && binary=$old
    run "$binary" "$work/$name-first.toml" "$work/$which-$name-first.h5"
    run "$binary" "$work/$name-big.toml" "$work/$which-$name-big.h5"
    run "$binary" "$work/$name-small.toml" "$work/$which-$name-small.h5"
    for repeat in 1 2 3 4 5; do run "$binary" "$work/$name-first.toml" "$work/$which-$name-repeat$repeat.h5"; done
  done
  echo "order-independence: $name done" >&2
done

"$python" - "$work" "${probes[@]%%|*}" <<'EOF'
import sys
import h5py
work, names = sys.argv[1], sys.argv[2:]
MiB = 2**20

def footprint(path):
    with h5py.File(path, "r") as f:
        last = f["trials"][-1]  # the probe is the sweep's last trial
        assert last["status"] == b"ok", (path, last["status"], last["message"])
        return int(last["rss_footprint"]), int(last["rss_peak"])

for which, title in (("new", "a process per trial (this build)"), ("old", "in-process runner (baseline)")):
    print(f"\n{title}: footprint (peak - baseline) of the probe, MiB")
    print(f"{'trial':<10} {'first':>9} {'after 1 GiB':>12} {'after 20':>9} {'5 repeats':>19} {'worst':>9} {'limit':>8}  ok")
    for name in names:
        first, _ = footprint(f"{work}/{which}-{name}-first.h5")
        big, _ = footprint(f"{work}/{which}-{name}-big.h5")
        small, _ = footprint(f"{work}/{which}-{name}-small.h5")
        repeats = [footprint(f"{work}/{which}-{name}-repeat{r}.h5")[0] for r in range(1, 6)]
        limit = max(first / 100, 256 * 1024)
        worst = max(abs(x - first) for x in [big, small] + repeats)
        print(f"{name:<10} {first / MiB:9.2f} {big / MiB:12.2f} {small / MiB:9.2f} "
              f"{min(repeats) / MiB:8.2f} to {max(repeats) / MiB:7.2f} {worst / MiB:9.3f} {limit / MiB:8.3f}  "
              f"{'yes' if worst <= limit else 'NO'}")
EOF
