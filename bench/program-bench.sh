#!/usr/bin/env bash
# What measuring a program costs, and how well its peak agrees with an
# independent measurement (docs/runner.md, "Programs", Figures):
#  1. overhead: the same torch_train.py trial run bare (its wall time) and
#     as a one-trial memsweep sweep at 10 ms sampling (the trial row's
#     wall_seconds: spawn to end), rounds interleaved, medians compared;
#  2. peak agreement: three trials (MLP, CNN, AlexNet-like) under
#     `/usr/bin/time -v` alone ("Maximum resident set size": wait4's
#     ru_maxrss) against memsweep's rss_peak (the tree's sampled sum, never
#     below the largest process's peak) and process_peak_max.
# Usage: bench/program-bench.sh [ROUNDS]   (needs build/memsweep and python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
memsweep=$PWD/build/memsweep
python=/usr/bin/python3
script=$PWD/jobs/examples/torch_train.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1

# The script's flags for a synthetic MNIST-shaped trial: model, hidden, channels, batch.
flags() {
  echo --dataset synthetic --data-dir . --model "$1" --hidden "$2" --channels "$3" --optimizer sgd \
    --learning-rate 0.01 --batch-size "$4" --epochs 1 --seed 5 --threads 1 --max-train-examples 0 \
    --max-test-examples 0 --synthetic-shape 1,28,28 --synthetic-classes 10 --synthetic-train-size "$5" \
    --synthetic-test-size 500 --synthetic-noise 0.5
}

# A one-trial sweep running the script with the same flags (the sweep's
# synthetic fields are what {synthetic.*} fills, so they are given twice).
sweep_file() {
  local name=$1 model=$2 hidden=$3 channels=$4 batch=$5 train=$6
  cat > "$work/$name.toml" <<TOML
[sweep]
name = "$name"
[sampler]
interval_ms = 10
[defaults]
dataset = "synthetic"
synthetic = { shape = [1, 28, 28], classes = 10, train_size = $train, test_size = 500, noise = 0.5 }
model = "$model"
hidden = [$hidden]
channels = [$channels]
learning_rate = 0.01
batch_size = $batch
epochs = 1
seed = 5
program = ["$python", "$script", $(for f in $(flags "$model" "$hidden" "$channels" "$batch" "$train"); do printf '"%s", ' "$f"; done | sed 's/, $//')]
[[trial]]
TOML
}

row_figure() {  # FILE COLUMN: the first trial row's value
  "$python" -c "import h5py,sys; r=h5py.File(sys.argv[1],'r')['trials'][0]; print(r[sys.argv[2]])" "$1" "$2"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== overhead: MLP 784-512-256-10, batch 64, 6000 examples, one epoch; $rounds rounds"
sweep_file overhead mlp 512,256 16 64 6000
bare=() measured=()
for round in $(seq 1 "$rounds"); do
  start=$EPOCHREALTIME
  # shellcheck disable=SC2046
  "$python" "$script" $(flags mlp 512,256 16 64 6000) > /dev/null
  bare+=("$(awk "BEGIN { print $EPOCHREALTIME - $start }")")
  "$memsweep" run "$work/overhead.toml" -o "$work/overhead-$round.h5" -q --force > /dev/null
  measured+=("$(row_figure "$work/overhead-$round.h5" wall_seconds)")
  echo "round $round: bare ${bare[-1]} s, under memsweep ${measured[-1]} s" >&2
done
bare_median=$(printf '%s\n' "${bare[@]}" | median)
measured_median=$(printf '%s\n' "${measured[@]}" | median)
awk -v b="$bare_median" -v m="$measured_median" \
  'BEGIN { printf "median bare %.3f s, under memsweep %.3f s: %+.2f %%\n", b, m, 100 * (m - b) / b }'

echo "== peak agreement: /usr/bin/time -v against memsweep"
# Two comparisons per trial. Alone: /usr/bin/time -v of the same command in
# a run of its own; PyTorch's peak itself varies from run to run (its
# allocator: up to tens of MiB between repeats in the CNN study), so this
# mixes that in. Same run: memsweep runs `/usr/bin/time -v -o FILE` + the
# command as the program, so both watch one execution: memsweep's sampled
# peak of the tree, less time's own peak (the tree's sum of peaks less its
# largest), against time's figure for the command.
printf '%-20s %11s %11s %9s %11s %11s %9s\n' trial "alone MiB" "memsweep" "diff %" "time -v" "memsweep" "diff %"
for trial in "mlp 512,256 16 256 4000" "cnn 64 16,32 128 4000" "alexnet 64 16 64 2000"; do
  read -r model hidden channels batch train <<<"$trial"
  name="peak-$model"
  sweep_file "$name" "$model" "$hidden" "$channels" "$batch" "$train"
  # shellcheck disable=SC2046
  kib=$(/usr/bin/time -v "$python" "$script" $(flags "$model" "$hidden" "$channels" "$batch" "$train") 2>&1 \
    > /dev/null | awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }')
  "$memsweep" run "$work/$name.toml" -o "$work/$name.h5" -q --force > /dev/null
  alone_peak=$(row_figure "$work/$name.h5" rss_peak)
  sed -i "s|^program = \[|program = [\"/usr/bin/time\", \"-v\", \"-o\", \"$work/$name.time\", |" "$work/$name.toml"
  "$memsweep" run "$work/$name.toml" -o "$work/$name-timed.h5" -q --force > /dev/null
  tree_peak=$(row_figure "$work/$name-timed.h5" rss_peak)
  hwm_sum=$(row_figure "$work/$name-timed.h5" rss_peak_hwm_sum)
  largest=$(row_figure "$work/$name-timed.h5" process_peak_max)
  timed_kib=$(awk -F: '/Maximum resident set size/ { gsub(/ /, "", $2); print $2 }' "$work/$name.time")
  awk -v n="$model batch $batch" -v k="$kib" -v p="$alone_peak" -v tk="$timed_kib" -v tp="$tree_peak" \
    -v s="$hwm_sum" -v l="$largest" 'BEGIN {
      t = k * 1024; u = tk * 1024; own = tp - (s - l)
      printf "%-20s %11.1f %11.1f %+9.2f %11.1f %11.1f %+9.2f\n", n, t / 2^20, p / 2^20, 100 * (p - t) / t,
        u / 2^20, own / 2^20, 100 * (own - u) / u }'
done
