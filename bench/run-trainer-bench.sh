#!/usr/bin/env bash
# Trainer benchmark: memsweep vs PyTorch 1.13 (Debian python3-torch) on the CPU,
# same networks, batches, threads and synthetic data, measured in the same run.
#
#   bench/install-bench-deps.sh            # once, as root: python3-torch + unpacked OpenBLAS
#   bench/run-trainer-bench.sh [out.jsonl] # default build/bench/trainer-bench.jsonl
#
# For every shape and thread count (1, 2) it runs, back to back:
#   torch + OpenBLAS   (the baseline we compare against; LD_LIBRARY_PATH over
#                       the unpacked libopenblas0-openmp, this process only)
#   memsweep           (build/bench/memsweep_bench_trainer, same flags; skipped
#                       with a message if the binary is not built yet): the
#                       trainer as a trial runs it, each step on the threads
#                       its work keeps busy, at most the count given
#   memsweep, all      (threads > 1 only: --step-threads all, every thread at
#                       every step, as before the choice: its baseline)
#   ... ROUNDS times (default 1), then once
#   torch + default BLAS (whatever libblas.so.3 the system resolves: on a stock
#                       Debian the netlib reference BLAS - shown for context only)
# Each run prints one JSON line; they are collected into the output file and
# summarised by bench/trainer_table.py at the end.
#
# Environment knobs:
#   THREADS="1 2"   thread counts          ROUNDS=1     torch/memsweep alternations
#   REPEATS=5       timed repeats per run  SCALE=1      multiplies every step count
#   OPTIMIZER=sgd   sgd|momentum|adam      SKIP_DEFAULT_BLAS=0  1 skips torch+default BLAS
#   MEMSWEEP_BENCH_TRAINER=path            overrides build/bench/memsweep_bench_trainer
#   SKIP_ALL_THREADS=0  1 skips memsweep's every-thread baseline
#   SKIP_TORCH=0        1 measures memsweep only (the thread table needs no torch)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo_root/build/bench/trainer-bench.jsonl}"
py=/usr/bin/python3 # Debian's interpreter: the first python3 on PATH may not see python3-torch
torch_bench="$repo_root/bench/torch_trainer_bench.py"
deps_dir="${MEMSWEEP_BENCH_DEPS:-$repo_root/build/bench-deps}"
triplet="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
openblas_dir="$deps_dir/openblas-openmp/usr/lib/$triplet/openblas-openmp"
memsweep_bin="${MEMSWEEP_BENCH_TRAINER:-$repo_root/build/bench/memsweep_bench_trainer}"

THREADS="${THREADS:-1 2}"
ROUNDS="${ROUNDS:-1}"
REPEATS="${REPEATS:-5}"
SCALE="${SCALE:-1}"
OPTIMIZER="${OPTIMIZER:-sgd}"
SKIP_DEFAULT_BLAS="${SKIP_DEFAULT_BLAS:-0}"
SKIP_ALL_THREADS="${SKIP_ALL_THREADS:-0}"
SKIP_TORCH="${SKIP_TORCH:-0}"
if [[ $SKIP_TORCH -eq 1 ]]; then SKIP_DEFAULT_BLAS=1; fi

if [[ $SKIP_TORCH -ne 1 ]] && ! "$py" -c 'import torch' 2>/dev/null; then
    echo "run-trainer-bench.sh: $py cannot import torch; run bench/install-bench-deps.sh as root" >&2
    exit 1
fi
if [[ $SKIP_TORCH -ne 1 && ! -e "$openblas_dir/libblas.so.3" ]]; then
    echo "run-trainer-bench.sh: no unpacked OpenBLAS in $openblas_dir; run bench/install-bench-deps.sh as root" >&2
    exit 1
fi

# Shapes: name | model flags | batch | steps per repeat with OpenBLAS/memsweep
# (about 0.6 s per repeat on a 2.5 GHz Xeon, 1 thread) | steps per repeat with
# the default (reference) BLAS, 5-35x slower (about 0.5 s per repeat).
shapes=(
    "mnist-trial1|--arch mlp --input 784 --hidden 285,389,423,173,61|8|150|25"
    "mnist-trial4|--arch mlp --input 784 --hidden 149,310,180,265,163|98|150|5"
    "cifar10-mlp|--arch mlp --input 3072 --hidden 484,195,394,163,322,126|8|80|12"
    "mlp-512-256|--arch mlp --input 784 --hidden 512,256|64|200|5"
    "mlp-512-256|--arch mlp --input 784 --hidden 512,256|256|40|1"
    "cnn|--arch cnn --input 3,32,32 --channels 32,64 --hidden 128|64|6|2"
)

scaled() { # scaled <steps> -> max(1, round(steps * SCALE))
    awk -v s="$1" -v f="$SCALE" 'BEGIN { v = int(s * f + 0.5); print (v < 1 ? 1 : v) }'
}

mkdir -p "$(dirname "$out")"
: >"$out"

if [[ -x "$memsweep_bin" ]]; then
    have_memsweep=1
else
    have_memsweep=0
    echo "NOTE: $memsweep_bin not found (not built yet): measuring PyTorch only." >&2
fi

# Runs one benchmark command; appends its JSON line (the last line of stdout
# starting with '{') to $out and echoes it. Failures are reported, not fatal.
record() {
    local label="$1"
    shift
    local stdout rc=0
    stdout="$("$@")" || rc=$?
    local line
    line="$(printf '%s\n' "$stdout" | grep '^{' | tail -n1 || true)"
    if [[ $rc -ne 0 || -z "$line" ]]; then
        echo "  $label: FAILED (exit $rc): $*" >&2
        return 0
    fi
    printf '%s\n' "$line" >>"$out"
    printf '  %-16s %s\n' "$label" "$("$py" -c 'import json,sys; r=json.loads(sys.argv[1]); print("%10.1f samples/s %9.3f ms/step  blas=%s threads_used=%s" % (r["samples_per_sec"], r["ms_per_step"], r.get("blas_kind", "-"), r.get("threads_used", "-")))' "$line" 2>/dev/null || echo "$line")"
}

start=$SECONDS
for spec in "${shapes[@]}"; do
    IFS='|' read -r name model batch steps steps_ref <<<"$spec"
    steps="$(scaled "$steps")"
    steps_ref="$(scaled "$steps_ref")"
    warm=$(( steps / 10 > 3 ? steps / 10 : 3 ))
    warm_ref=$(( steps_ref / 5 > 1 ? steps_ref / 5 : 1 ))
    for t in $THREADS; do
        # shellcheck disable=SC2206
        common=($model --classes 10 --batch "$batch" --optimizer "$OPTIMIZER" --threads "$t")
        echo "== $name batch $batch threads $t" >&2
        for ((round = 1; round <= ROUNDS; round++)); do
            [[ $SKIP_TORCH -eq 1 ]] || record "torch+openblas" env OMP_NUM_THREADS="$t" OPENBLAS_NUM_THREADS="$t" \
                LD_LIBRARY_PATH="$openblas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
                "$py" "$torch_bench" "${common[@]}" --warmup-steps "$warm" --steps "$steps" \
                --repeats "$REPEATS" --tag openblas

            # ------------------------------------------------------------------
            # HOOK: memsweep trainer, same flags, same JSON line ("framework":
            # "memsweep"), interleaved with torch so machine noise hits both.
            # ------------------------------------------------------------------
            if [[ $have_memsweep -eq 1 ]]; then
                record "memsweep" env OMP_NUM_THREADS="$t" \
                    "$memsweep_bin" "${common[@]}" --warmup-steps "$warm" --steps "$steps" \
                    --repeats "$REPEATS"
                if [[ $t -gt 1 && $SKIP_ALL_THREADS -ne 1 ]]; then
                    record "memsweep, all" env OMP_NUM_THREADS="$t" \
                        "$memsweep_bin" "${common[@]}" --warmup-steps "$warm" --steps "$steps" \
                        --repeats "$REPEATS" --step-threads all
                fi
            fi
        done
        if [[ $SKIP_DEFAULT_BLAS -ne 1 ]]; then
            record "torch+default" env -u LD_LIBRARY_PATH -u LD_PRELOAD OMP_NUM_THREADS="$t" \
                "$py" "$torch_bench" "${common[@]}" --warmup-steps "$warm_ref" --steps "$steps_ref" \
                --repeats 3 --tag default-blas
        fi
    done
done

echo "== $(wc -l <"$out") results in $out ($((SECONDS - start)) s)" >&2
"$py" "$repo_root/bench/trainer_table.py" "$out"
