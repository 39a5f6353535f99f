#!/usr/bin/env bash
# The node's memory with 8 training ranks on MNIST (docs/runner.md,
# Figures): each rank holding its own decoded copy (the baseline's
# in-process runner, bench/build-baseline.sh) against one copy per node
# shared by every trial process (this build). 9 ranks (rank 0 writes), one
# MLP trial per worker, one thread each; /proc/meminfo read every 20 ms
# during each run; the figure is the node's used memory (MemTotal -
# MemAvailable) at its highest, above what it was just before the run.
# Usage: bench/shared-dataset-memory.sh DATA_DIR [BASELINE_MEMSWEEP] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:?give the folder holding mnist/ (e.g. ../shared/datasets)}
old=${2:-$(bash bench/build-baseline.sh | tail -1)}
rounds=${3:-3}
new=$PWD/build/memsweep
python=/usr/bin/python3
work=$(mktemp -d)
# The shared datasets where a node keeps them: memory (tmpfs), not a disk's page cache.
shm=$(mktemp -d /dev/shm/memsweep-bench-XXXXXX)
trap 'rm -rf "$work" "$shm"' EXIT
export OMP_NUM_THREADS=1 MEMSWEEP_SHM=$shm

{
  printf '[sweep]\nname = "node-memory"\n[defaults]\ndataset = "mnist"\nepochs = 1\nbatch_size = 64\n'
  printf 'learning_rate = 0.05\n[grid]\nhidden = [[64], [72], [80], [88], [96], [104], [112], [120]]\n'
} > "$work/sweep.toml"

# Runs `binary` on 9 ranks while sampling the node's used memory; prints
# the peak above the level just before, in bytes.
measure() {
  local binary=$1 out=$2
  "$python" - "$binary" "$out" "$data" "$work/sweep.toml" <<'EOF'
import subprocess, sys, time
binary, out, data, sweep = sys.argv[1:]
def used():
    fields = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, value = line.split(":")
            fields[key] = int(value.split()[0]) * 1024
    return fields["MemTotal"] - fields["MemAvailable"], fields["Shmem"]
time.sleep(1.0)
before, shmem_before = used()
command = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "9", binary, "run", sweep, "-o", out,
           "--data-dir", data, "-q"]
process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak, shmem_peak = before, shmem_before
while process.poll() is None:
    now, shmem = used()
    peak, shmem_peak = max(peak, now), max(shmem_peak, shmem)
    time.sleep(0.02)
assert process.returncode == 0, f"{binary} exited {process.returncode}"
print(peak - before, shmem_peak - shmem_before)
EOF
}

declare -a new_used old_used new_shmem old_shmem
for round in $(seq 1 "$rounds"); do
  read -r used shmem < <(measure "$new" "$work/new-$round.h5")
  new_used+=("$used")
  new_shmem+=("$shmem")
  read -r used shmem < <(measure "$old" "$work/old-$round.h5")
  old_used+=("$used")
  old_shmem+=("$shmem")
  echo "round $round done" >&2
done

"$python" - "${new_used[*]}" "${old_used[*]}" "${new_shmem[*]}" "${old_shmem[*]}" <<'EOF'
import statistics, sys
new, old, new_shmem, old_shmem = ([int(x) for x in arg.split()] for arg in sys.argv[1:5])
MiB = 2**20
n, o = statistics.median(new), statistics.median(old)
print("node memory, 8 training ranks on MNIST (9 ranks), peak used above the level before the run (medians of "
      f"{len(new)}):")
print(f"  a copy per rank (baseline):       {o / MiB:8.0f} MiB   (Shmem +{statistics.median(old_shmem) / MiB:.0f} MiB)")
print(f"  one shared copy (this build):     {n / MiB:8.0f} MiB   (Shmem +{statistics.median(new_shmem) / MiB:.0f} MiB)")
print(f"  saved: {(o - n) / MiB:.0f} MiB ({(1 - n / o) * 100:.0f} %)")
EOF
