#!/usr/bin/env bash
# Builds the fuzz targets of tests/fuzz with clang (libFuzzer, ASan, UBSan)
# and runs each for a bounded time over a scratch copy of its seed corpus
# (docs/reliability.md, Fuzzing). Usage: ci/fuzz.sh [SECONDS_PER_TARGET]
# (default 60), or ci/fuzz.sh --build-only (ci/test.sh builds the targets
# while the normal tests run). Targets run $MEMSWEEP_FUZZ_JOBS at a time (default: the
# CPUs). Exits non-zero if any target crashed, printing the saved input.
# Build and scratch folders: $MEMSWEEP_FUZZ_BUILD_DIR (default build-fuzz);
# an existing one is built incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=false
if [ "${1-}" = --build-only ]; then
  build_only=true
  seconds=
else
  seconds=${1:-60}
fi
# 0 skips fuzzing, as ci/test.sh says: libFuzzer would read
# -max_total_time=0 as "no limit" and never end.
if [ "$seconds" = 0 ]; then
  echo "fuzz: skipped (0 s per target)"
  exit 0
fi
build_dir=${MEMSWEEP_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${MEMSWEEP_FUZZ_JOBS:-$(nproc)}
# A hung input is a finding, and so is one that needs more memory than this.
timeout_seconds=10
rss_limit_mb=2048
# libFuzzer's exit status for a hang (its default, stated so that the check
# below cannot drift from it).
timeout_exit_code=70

# Inputs as long as each format's seeds need, and not much more: a sweep
# file, an IDX pair of two 28x28 images, a few CIFAR-10 records (3,073
# bytes each), a results file of one trial (88 KB as memsweep writes it).
declare -A max_len=(
  [fuzz_sweep_file]=8192
  [fuzz_idx]=4096
  [fuzz_cifar]=16384
  [fuzz_results_file]=131072
)
# libFuzzer's default (entropic) scheduler spent more than half of the sweep
# parser's time weighing toml11's many features; without it that target ran
# four times the inputs and reached more coverage in the same time.
# Two targets fuzz in a child process restarted after a hang (-fork=1
# -ignore_timeouts=1): HDF5 1.10 loops forever on some damaged files, which
# memsweep cannot check for first, and a sweep near the trial limit takes
# longer than the timeout under ASan (docs/reliability.md; tests/fuzz/hdf5-faults/).
# Their hangs are listed with their inputs and do not fail the run. A hang
# in any other target fails.
# The results target also goes on after a crash (-ignore_crashes=1): HDF5
# 1.10 reads out of its own buffers on some damaged files. Every crash is
# replayed afterwards and fails the run unless it happened inside HDF5, on
# memory HDF5 allocated (hdf5_fault below).
declare -A options=(
  [fuzz_sweep_file]="-entropic=0 -fork=1 -ignore_timeouts=1"
  [fuzz_idx]=
  [fuzz_cifar]=
  [fuzz_results_file]="-entropic=0 -fork=1 -ignore_timeouts=1 -ignore_crashes=1"
)
# Dictionaries (libFuzzer's -dict=): the sweep file's TOML punctuation, runs
# of brackets, and memsweep's section and field names. With it the fuzzer
# nested 173 deep in 10 minutes (72 without it), past the limit of 64; the
# stack overflow toml11 had (600+ levels under ASan) it never reached in
# 10 minutes, and it is kept by the corpus's deep-*.toml (docs/reliability.md).
declare -A dictionary=(
  [fuzz_sweep_file]=tests/fuzz/fuzz_sweep_file.dict
)
targets=(fuzz_sweep_file fuzz_idx fuzz_cifar fuzz_results_file)
# HDF5 leaks inside itself on some damaged files (tests/sanitizers/lsan.supp).
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizers/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
build_start=$SECONDS
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S tests/fuzz -B "$build_dir" "${generator[@]}" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build_dir" -j "$(nproc)"
echo "fuzz: built in $((SECONDS - build_start)) s"
! $build_only || exit 0

run_dir=$build_dir/fuzz-run
rm -rf "$run_dir"
# fuzz_results_file's input files, and libFuzzer's own in fork mode: a run
# killed by a timeout leaves them here rather than in /dev/shm.
mkdir -p "$run_dir/tmp"
TMPDIR=$(realpath "$run_dir/tmp")
export TMPDIR

# One target: its log, its grown corpus, and what it saved (crash-*, leak-*,
# timeout-*, oom-*) in artifacts/.
run_target() {
  local target=$1 dir=$run_dir/$1
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp tests/fuzz/corpus/"$target"/* "$dir/corpus/"
  ls "$dir/corpus" | wc -l >"$dir/seeds"
  local start=$SECONDS status=0 dictionary_option=()
  [ -z "${dictionary[$target]:-}" ] || dictionary_option=(-dict="${dictionary[$target]}")
  "$build_dir/$target" -max_total_time="$seconds" -timeout="$timeout_seconds" -timeout_exitcode="$timeout_exit_code" -rss_limit_mb="$rss_limit_mb" \
    -max_len="${max_len[$target]}" ${options[$target]} "${dictionary_option[@]}" -print_final_stats=1 \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$dir/log" 2>&1 || status=$?
  echo "$((SECONDS - start)) $status" >"$dir/result"
}

# Whether a sanitizer report (on stdin) is a fault inside HDF5: its first
# frame past the sanitizer's own (interceptors, libc's mem* functions) is in
# libhdf5, and every block the report names was allocated by libhdf5. A bad
# buffer memsweep hands to HDF5 was allocated by memsweep, so it still fails.
hdf5_fault() {
  awk '
    /ERROR: AddressSanitizer|ERROR: UndefinedBehaviorSanitizer|runtime error/ { report = 1 }
    report && /^ *#[0-9]+ / {
      if (!first_seen && $0 !~ /__interceptor_|__asan_|__sanitizer|__ubsan|libc\.so|string\/\.\.\/sysdeps/) {
        first_seen = 1; inside = ($0 ~ /libhdf5/)
      }
      if (allocation && $1 == "#1") { if ($0 !~ /libhdf5/) outside_block = 1; allocation = 0 }
    }
    /allocated by thread/ { allocation = 1 }
    END { exit !(report && first_seen && inside && !outside_block) }
  '
}

fuzz_start=$SECONDS
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_target "$target" &
done
wait

failed=0
printf '%-20s %12s %9s %7s %9s %8s %6s\n' target executions exec/s time new_units crashes hangs
for target in "${targets[@]}"; do
  dir=$run_dir/$target
  read -r elapsed status <"$dir/result"
  # Final stats, or in fork mode the last status line ("#N: cov: ... exec/s M ...").
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  exec_rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
  if [ -z "$executions" ]; then
    executions=$(sed -n 's/^#\([0-9]*\): cov:.*/\1/p' "$dir/log" | tail -1)
    exec_rate=$(sed -n 's/^#[0-9]*: cov:.* exec\/s \([0-9]*\) .*/\1/p' "$dir/log" | tail -1)
  fi
  new_units=$(($(ls "$dir/corpus" | wc -l) - $(cat "$dir/seeds")))
  # Each saved crash replayed alone, its report kept beside it.
  crashes=0 in_hdf5=0
  while IFS= read -r input; do
    crashes=$((crashes + 1))
    timeout 120 "$build_dir/$target" "$input" >"$input.report" 2>&1 || true
    if hdf5_fault <"$input.report"; then
      in_hdf5=$((in_hdf5 + 1))
      echo "  $target: a fault inside HDF5 (see docs/reliability.md, Known); not a failure: $input" >&2
    else
      echo "  $target: crash: $input (report: $input.report)" >&2
    fi
    grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|terminate called|==ERROR' \
      "$input.report" | sed 's/^/    /' >&2 || true
  done < <(find "$dir/artifacts" -type f ! -name 'timeout-*' ! -name '*.report' | sort)
  hangs=$(find "$dir/artifacts" -type f -name 'timeout-*' | wc -l)
  crash_column=$crashes
  [ "$in_hdf5" -eq 0 ] || crash_column="$crashes ($in_hdf5 HDF5)"
  printf '%-20s %12s %9s %6ss %9s %8s %6s\n' "$target" "${executions:-?}" "${exec_rate:-?}" "$elapsed" \
    "$new_units" "$crash_column" "$hangs"
  # A target that stopped on its own (not -ignore_crashes) exits non-zero
  # on a crash, HDF5's or not. In fork mode libFuzzer exits with the status
  # of its last job, so a target that ignores hangs exits with the hang
  # status when that job happened to hang: a listed hang, not a failure.
  if [[ "${options[$target]}" == *-ignore_timeouts=1* && "$status" -eq "$timeout_exit_code" && "$hangs" -gt 0 ]]; then
    status=0
  fi
  if [ "$crashes" -gt "$in_hdf5" ] || { [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; }; then
    failed=1
    echo "  $target failed (exit status $status); log: $dir/log" >&2
  elif [ "$hangs" -ne 0 ]; then
    echo "  $target: $hangs inputs hung (see docs/reliability.md, Known); not a failure:" >&2
    find "$dir/artifacts" -type f -name 'timeout-*' -printf '  input: %p\n' >&2
  fi
done
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, $jobs at a time: $((SECONDS - fuzz_start)) s;" \
  "in all $((SECONDS - build_start)) s"
if [ "$failed" -ne 0 ]; then
  echo "fuzz: crashes found. Reproduce: $build_dir/TARGET INPUT; fix, then add the input to" \
    "tests/fuzz/corpus/TARGET/ (ctest -L fuzz replays it)" >&2
  exit 1
fi
