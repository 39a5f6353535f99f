#!/usr/bin/env bash
# GPU memory as memsweep measures it, checked against PyTorch's own figures
# and nvidia-smi's, on a machine with an NVIDIA GPU (docs/runner.md, "GPU
# memory"). Builds memsweep if needed, runs jobs/examples/torch_train.py
# --device cuda as a program trial at three batch sizes, and prints per trial:
# NVML's peak (memsweep's gpu_peak and where it came from), PyTorch's
# max_memory_reserved() and max_memory_allocated() (the {"gpu": ...} events
# line), and the largest used_memory nvidia-smi listed for the trial's pid.
# Then the GPU limit (docs/runner.md, "A GPU limit"; docs/search.md, "GPU
# limits"): (a) a [search] for torch_train.py's largest batch within 8 GiB
# and on the whole device; (b) each answer checked again: it trains within
# its limit, and the next batch is a real CUDA out-of-memory under the
# reserve; (c) what PyTorch's mem_get_info() says inside a trial, against
# the limit; (d) two ranks on two devices, where there are two. It exits 1
# when a check fails. Under 10 minutes. On a machine without an NVIDIA GPU
# it says so and exits 0.
#
#   bench/gpu-check.sh [BUILD_DIR]      (default: build/)
# Environment: PYTHON (default /usr/bin/python3), GPU_CHECK_BATCHES (default "64 1024 8192"),
# GPU_CHECK_DEVICE=cpu: a dry run of the first part on a machine without a GPU (NVML columns empty);
# GPU_CHECK_FAKE=1: the whole script on the test NVML and CUDA libraries of BUILD_DIR/tests (four
# 8 GiB devices; a program that allocates through the test driver stands in for PyTorch): how CI runs it.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")  # absolute: the sweep runs in a directory of its own
python=${PYTHON:-/usr/bin/python3}
batches=${GPU_CHECK_BATCHES:-64 1024 8192}
device=${GPU_CHECK_DEVICE:-cuda}

fake=${GPU_CHECK_FAKE:-0}
if [[ $fake == 1 ]]; then
  device=fake
  export MEMSWEEP_TEST_NVML_LIBRARY=$build/tests/libmemsweep_fake_nvml.so
  export MEMSWEEP_TEST_CUDA_LIBRARY=$build/tests/libmemsweep_fake_cuda.so
  export MEMSWEEP_TEST_GPUS=4 MEMSWEEP_TEST_GPU_MEMORY=$((8 << 30))
fi
if [[ $device == cuda ]] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; }; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none): nothing to check"
  exit 0
fi
if [[ $device == cuda ]] && ! "$python" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "gpu-check: an NVIDIA GPU, but $python's torch sees no CUDA device: nothing to check"
  exit 0
fi
[[ $device == cuda ]] && nvidia-smi -L

if [[ ! -x $build/memsweep ]]; then
  echo "gpu-check: building memsweep in $build"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target memsweep >/dev/null
fi

work=$(mktemp -d)
trap 'kill "${smi_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
[[ $fake == 1 ]] && export MEMSWEEP_TEST_GPU_BOOKS=$work/books && mkdir -p "$work/books"
if [[ $fake != 1 ]]; then
batch_list=$(echo "$batches" | sed 's/ \+/, /g')
# A GPU's sizes; the dry run's are small enough for a shared CPU.
train_size=16384 hidden="2048, 2048"
[[ $device == cpu ]] && train_size=512 hidden="64"
cat >"$work/gpu.toml" <<TOML
[sweep]
name = "gpu-check"
seed = 1

[programs.pytorch]
command = [
  "$python", "$root/jobs/examples/torch_train.py", "--device", "$device",
  "--hidden", "{hidden}", "--batch-size", "{batch_size}", "--epochs", "{epochs}",
  "--synthetic-shape", "{synthetic.shape}", "--synthetic-train-size", "{synthetic.train_size}",
  "--synthetic-test-size", "{synthetic.test_size}",
]

[defaults]
program = "pytorch"
dataset = "synthetic"
synthetic = { shape = [3, 64, 64], classes = 10, train_size = $train_size, test_size = 256 }
hidden = [$hidden]
epochs = 1

[grid]
batch_size = [$batch_list]
TOML

# nvidia-smi's own view, every 100 ms, of every compute process.
touch "$work/smi.csv"
if [[ $device == cuda ]]; then
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits -lms 100 >"$work/smi.csv" 2>/dev/null &
  smi_pid=$!
fi

start=$(date +%s)
status=0
(cd "$work" && timeout 240 "$build/memsweep" run gpu.toml -o gpu.h5) || status=$?
[[ $status == 0 ]] || echo "gpu-check: memsweep run exited $status; the trials it recorded follow"
if [[ -n ${smi_pid:-} ]]; then
  kill "$smi_pid" 2>/dev/null || true
  wait "$smi_pid" 2>/dev/null || true
fi
echo "gpu-check: the sweep took $(($(date +%s) - start)) s"

"$python" - "$work/gpu.h5" "$work/smi.csv" <<'PY'
import collections
import sys

import h5py

MIB = 1 << 20
smi = collections.defaultdict(int)  # pid -> the largest used_memory nvidia-smi listed, MiB
for line in open(sys.argv[2]):
    fields = [f.strip() for f in line.split(",")]
    if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit():
        smi[int(fields[0])] = max(smi[int(fields[0])], int(fields[1]))

def mib(value):
    return "-" if value < 0 else f"{value / MIB:.1f}"

with h5py.File(sys.argv[1], "r") as f:
    trials = f["trials"][:]
    print(f"{'batch':>6} {'status':>8} {'NVML peak':>10} {'source':>13} {'devices':>8} "
          f"{'torch reserved':>15} {'torch allocated':>16} {'nvidia-smi':>11}   (MiB)")
    for t in trials:
        print(f"{t['batch_size']:>6} {t['status'].decode():>8} {mib(t['gpu_peak']):>10} "
              f"{t['gpu_peak_source'].decode() or '-':>13} {t['gpu_devices'].decode() or '-':>8} "
              f"{mib(t['torch_reserved_peak']):>15} {mib(t['torch_allocated_peak']):>16} "
              f"{smi.get(int(t['pid']), -1) if smi.get(int(t['pid'])) else '-':>11}")
print("NVML's per-process figure includes the CUDA context (a few hundred MiB) on top of PyTorch's reserved pool;"
      " nvidia-smi reads the same NVML call.")
PY
fi  # the first part

[[ $device == cpu ]] && exit 0

# ---- the GPU limit ----
# The program: torch_train.py on one batch of {batch_size} examples (the
# dataset is the batch), or, on the test libraries, a program that
# allocates {batch_size} MiB through the test CUDA driver.
if [[ $fake == 1 ]]; then
  program="command = [\"$build/tests/memsweep_test_fake_cuda_program\", \"{batch_size}\", \"0.3\"]"
  range="[1, 16384]" limits='["1GiB", "device"]' small=1GiB
else
  program="command = [
  \"$python\", \"$root/jobs/examples/torch_train.py\", \"--device\", \"cuda\", \"--hidden\", \"16384,16384\",
  \"--batch-size\", \"{batch_size}\", \"--epochs\", \"1\", \"--synthetic-shape\", \"1,28,28\",
  \"--synthetic-train-size\", \"{batch_size}\", \"--synthetic-test-size\", \"256\",
]"
  range="[256, 1048576]" limits='["8GiB", "device"]' small=8GiB
fi
cat >"$work/search.toml" <<TOML
[sweep]
name = "gpu-limit-check"
seed = 1

[programs.trainer]
$program

[[trial]]
program = "trainer"

[search]
axis = "batch_size"
range = $range
limit = $limits
device = "gpu"
strategy = "bisect"
resolution = 0
max_trials = 24
TOML
start=$(date +%s)
status=0
(cd "$work" && timeout 360 "$build/memsweep" run search.toml -o search.h5 -q) || status=$?
echo "gpu-check: the GPU search took $(($(date +%s) - start)) s (exit $status)"
[[ $status == 0 ]] || exit 1
"$build/memsweep" summary "$work/search.h5" | sed -n '/^capacity/,/^fits:/p'

# (b) The answer at the smaller limit once more, and the next batch.
answer=$("$python" - "$work/search.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    rows = sorted(f["searches"][:], key=lambda r: r["limit"])
    print(rows[0]["fits"])
PY
)
cat >"$work/verify.toml" <<TOML
[sweep]
name = "gpu-limit-verify"
seed = 1

[programs.trainer]
$program

[defaults]
program = "trainer"
gpu_limit = "$small"

[grid]
batch_size = [$answer, $((answer + 1))]
TOML
(cd "$work" && timeout 180 "$build/memsweep" run verify.toml -o verify.h5 -q) || true

# (c) what each trial's program saw of the device, and (b)'s outcome.
"$python" - "$work" "$answer" "$small" <<'PY'
import pathlib
import re
import sys

import h5py

work, answer = pathlib.Path(sys.argv[1]), int(sys.argv[2])
MIB = 1 << 20
failures = []
print(f"\n(c) what the program saw under its limit: {'limit':>10} {'free seen':>10} {'limit-free':>10}  (MiB)")
for name in ("search", "verify"):
    with h5py.File(work / f"{name}.h5", "r") as f:
        trials = f["trials"][:]
    for t in trials:
        log = work / f"{name}.logs" / f"{t['trial_id'].decode()}-0.out"
        seen = re.search(r"free (\d+) total (\d+)", log.read_text()) if log.exists() else None
        if seen and t["gpu_limit"] > 0 and t["gpu_limit_mechanism"].decode() == "reserve":
            free = int(seen.group(1))
            print(f"    batch {t['batch_size']:>8}: {t['gpu_limit'] / MIB:>10.0f} {free / MIB:>10.0f} "
                  f"{(t['gpu_limit'] - free) / MIB:>10.0f}")
            if free > t["gpu_limit"]:
                failures.append(f"batch {t['batch_size']} saw {free} bytes free, more than its limit")
with h5py.File(work / "verify.h5", "r") as f:
    rows = {int(t["batch_size"]): t for t in f["trials"][:]}
print(f"\n(b) {sys.argv[3]}: the answer {answer} and the next batch, again")
for batch in (answer, answer + 1):
    t = rows.get(batch)
    if t is None:
        failures.append(f"batch {batch} did not run")
        continue
    print(f"    batch {batch:>8}: {t['status'].decode():>12}  GPU peak {t['gpu_peak'] / MIB:>9.1f} MiB  "
          f"limit {t['gpu_limit'] / MIB:.0f} MiB ({t['gpu_limit_mechanism'].decode()})  "
          f"CUDA out of memory: {'yes' if t['reported_oom'] else 'no'}")
fits, next_one = rows.get(answer), rows.get(answer + 1)
if fits is not None and not (fits["status"] == b"ok" and 0 <= fits["gpu_peak"] <= fits["gpu_limit"]):
    failures.append(f"the answer {answer} did not train within its limit again")
if next_one is not None and next_one["reported_oom"] != 1:
    failures.append(f"the batch after the answer, {answer + 1}, was no CUDA out-of-memory")
for failure in failures:
    print("gpu-check: FAILED:", failure)
sys.exit(1 if failures else 0)
PY

# (d) two ranks on two devices.
devices=$MEMSWEEP_TEST_GPUS
[[ $fake == 1 ]] || devices=$(nvidia-smi -L | grep -c '^GPU' || true)
if ((${devices:-0} < 2)); then
  echo "(d) one GPU here: two ranks on two devices needs two (not checked)"
  exit 0
fi
sed -e 's/^name = .*/name = "gpu-two-ranks"/' -e 's/^batch_size = .*/batch_size = [1, 2, 3, 4]/' \
  -e '/^gpu_limit/d' "$work/verify.toml" >"$work/ranks.toml"
(cd "$work" && timeout 180 mpirun --allow-run-as-root --oversubscribe -np 3 "$build/memsweep" run ranks.toml -o ranks.h5 -q)
"$python" - "$work/ranks.h5" <<'PY'
import sys
import h5py
with h5py.File(sys.argv[1], "r") as f:
    trials = f["trials"][:]
by_rank = {}
for t in trials:
    by_rank.setdefault(int(t["rank"]), set()).add(t["gpu_uuids"].decode())
print("\n(d) two ranks:", {rank: sorted(uuids) for rank, uuids in sorted(by_rank.items())})
ok = len(by_rank) == 2 and all(len(u) == 1 for u in by_rank.values()) and len(set.union(*by_rank.values())) == 2
print("    each rank on a device of its own" if ok else "gpu-check: FAILED: the ranks shared a device")
sys.exit(0 if ok else 1)
PY
