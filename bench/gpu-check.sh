#!/usr/bin/env bash
# GPU memory as memsweep measures it, checked against PyTorch's own figures
# and nvidia-smi's, on a machine with an NVIDIA GPU (docs/runner.md, "GPU
# memory"). Builds memsweep if needed, runs jobs/examples/torch_train.py
# --device cuda as a program trial at three batch sizes, and prints per trial:
# NVML's peak (memsweep's gpu_peak and where it came from), PyTorch's
# max_memory_reserved() and max_memory_allocated() (the {"gpu": ...} events
# line), and the largest used_memory nvidia-smi listed for the trial's pid.
# Under 5 minutes. On a machine without an NVIDIA GPU it says so and exits 0.
#
#   bench/gpu-check.sh [BUILD_DIR]      (default: build/)
# Environment: PYTHON (default /usr/bin/python3), GPU_CHECK_BATCHES (default "64 1024 8192"),
# GPU_CHECK_DEVICE=cpu: a dry run of the script itself on a machine without a GPU (NVML columns empty).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build}")  # absolute: the sweep runs in a directory of its own
python=${PYTHON:-/usr/bin/python3}
batches=${GPU_CHECK_BATCHES:-64 1024 8192}
device=${GPU_CHECK_DEVICE:-cuda}

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
