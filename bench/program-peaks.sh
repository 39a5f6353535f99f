#!/usr/bin/env bash
# A program trial's peak against /usr/bin/time -v and the program's own
# VmHWM (issue 31; figures in docs/runner.md): /bin/sleep 0.5 and
# hwm_program (touches 2 MiB, holds it 300 ms, writes its VmHWM), each as a
# one-trial sweep alone and under mpirun -np 3. Prints memsweep's rss_peak,
# process_peak_max and rss_mean (MiB), zero-RSS samples and samples.
# Usage: bench/program-peaks.sh [REPEATS]   (needs build/memsweep and
#   build/tests/memsweep_test_hwm_program: cmake --build build --target memsweep memsweep_test_hwm_program)
set -euo pipefail
cd "$(dirname "$0")/.."
memsweep=$PWD/build/memsweep
hwm=$PWD/build/tests/memsweep_test_hwm_program
repeats=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '[sweep]\nname = "sleep"\n[[trial]]\ndataset = "synthetic"\nprogram = ["/bin/sleep", "0.5"]\n' > "$work/sleep.toml"
printf '[sweep]\nname = "touch"\n[[trial]]\ndataset = "synthetic"\nprogram = ["%s", "2", "300", "%s/own.txt"]\n' \
  "$hwm" "$work" > "$work/touch.toml"

read_row() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    r = f["trials"][0]
    rss = f["samples"]["rss"][()]
    print("peak %.3f max %.3f mean %.3f zeros %d samples %d" % (
        r["rss_peak"] / 2**20, r["process_peak_max"] / 2**20, r["rss_mean"] / 2**20, int((rss == 0).sum()), len(rss)))
PY
}
own() { awk '{printf "%.3f", $1 / 1048576}' "$work/own.txt"; }

export OMP_NUM_THREADS=1
for program in sleep touch; do
  for _ in $(seq "$repeats"); do
    if [ "$program" = sleep ]; then command=(/bin/sleep 0.5); else command=("$hwm" 2 300 "$work/own-time.txt"); fi
    time_v=$(/usr/bin/time -v "${command[@]}" 2>&1 | awk '/Maximum resident/ {printf "%.3f", $6 / 1024}')
    rm -f "$work/a.h5" "$work/m.h5" "$work/own.txt"
    "$memsweep" run "$work/$program.toml" -o "$work/a.h5" > /dev/null 2>&1
    alone="$(read_row "$work/a.h5") own $( [ "$program" = touch ] && own || echo -)"
    mpirun -np 3 --allow-run-as-root --oversubscribe "$memsweep" run "$work/$program.toml" -o "$work/m.h5" > /dev/null 2>&1
    under="$(read_row "$work/m.h5") own $( [ "$program" = touch ] && own || echo -)"
    echo "$program  time-v $time_v MiB | alone: $alone | mpirun -np 3: $under"
  done
done
