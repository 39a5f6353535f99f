#!/usr/bin/env bash
# Builds memsweep with sanitizers and runs tests under them
# (docs/reliability.md, Sanitizers):
#   address: AddressSanitizer + UndefinedBehaviorSanitizer (with LeakSanitizer),
#            the unit and module tests, the scheduler under mpirun, the corpora;
#   thread:  ThreadSanitizer, the sampler and scheduler tests (the scheduler
#            over MPI too).
# Usage: ci/sanitize.sh [--build-only] [address|thread|address-program]...
# (default: address thread; address-program below). Any finding stops the
# process it is in, so its test fails. Build folders: build-asan and
# build-tsan (an existing one is built incrementally). --build-only builds
# and runs nothing (ci/test.sh builds while the normal tests run).
set -euo pipefail
cd "$(dirname "$0")/.."

build_only=false
if [ "${1-}" = --build-only ]; then
  build_only=true
  shift
fi
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
supp=$PWD/tests/sanitizers
# The timed tests (the scheduler's: trial durations, stop deadlines,
# makespans) stretch their times by this factor (tests/support/time_scale.hpp):
# the instrumented scheduler's own work takes several times longer, sleeping
# trials do not, and on a loaded machine the margins at scale 1 are gone.
export MEMSWEEP_TEST_TIME_SCALE=${MEMSWEEP_TEST_TIME_SCALE:-3}

# One sanitizer build: configure, build only the test programs it runs.
build() {
  local dir=$1 sanitizers=$2
  shift 2
  local start=$SECONDS
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    # -O0: GCC takes twice as long at -O1 with the sanitizers (a test file
    # of the CLI: 47 s against 22 s), and the tests' heavy work is in
    # oneDNN and HDF5, which are not instrumented anyway. -g1: line tables,
    # all a report's stack needs.
    cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
      -DMEMSWEEP_SANITIZE="$sanitizers" -DMEMSWEEP_BUILD_BENCHMARKS=OFF >/dev/null
  fi
  cmake --build "$dir" -j "$(nproc)" --target "$@"
  echo "sanitize: $sanitizers build in $((SECONDS - start)) s"
}

# ctest over the labels given, but the tests excluded, in the build given.
run_tests() {
  local dir=$1 labels=$2 excluded=$3 start=$SECONDS
  ! $build_only || return 0
  ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" --timeout 600 -L "$labels" -E "$excluded"
  echo "sanitize: tests ($labels) in $((SECONDS - start)) s"
}

# ctest in build-asan. Leaks: reported at each process's exit; Open MPI's
# and the other libraries' own are suppressed (tests/sanitizers/lsan.supp
# says why). An allocation too large fails (nullptr, std::bad_alloc) as
# with glibc, rather than stopping the process: a runner test makes one.
run_asan_tests() {
  ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1 \
  LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_tests build-asan "$1" "$2"
}

# Not run under either: the tests of what memory measurements mean, which
# assume glibc's allocator and no shadow memory (ASan adds red zones and
# keeps 256 MiB of freed blocks in quarantine, so RSS does not fall after a
# free and a trial's peak is not the estimate's; TSan's shadow doubles the
# RSS and page faults of memory touched), one that counts the sampler's
# reads of /proc in a fixed time, the runner's per-trial start cost (an
# instrumented process starts slower), and a program tree's peak against
# what its (instrumented) processes touched. The normal build runs them.
measurement_tests='EstimateVsMeasured\.|SamplerMemory\.|Sampler\.PssIsReadOnItsOwnSlowerCadence$|TrainingRunnerTest\.AFootprintDoesNotDependOnTheTrialsBefore$|TrainingRunnerTest\.PerTrialOverheadIsSmall$|ProgramTrialTest\.MeasuresTheWholeTreeWithinTwoPercent$'
# Nor the tests whose point is scale or learning rather than code of their
# own: a million grid points, 100,000 explicit trials, 64,000 values on one
# line, a large sweep's cursor, and real datasets trained to an accuracy.
# They run the code paths of the small tests beside them (the parsers, the
# expansion, the cursor, the trainer's loop and every memory plan on
# synthetic data, all run under both sanitizers) thousands of times over; at
# -O0 instrumented they were 290 of the ASan pass's 700 test-seconds and 96
# of TSan's 202 (2026-12-01). The normal build runs them. As GoogleTest
# patterns: the unit and watch programs run as shards there
# (tests/CMakeLists.txt), where ctest cannot leave out one of their tests.
scale_patterns=('SweepScale.GridOfOneMillion*' 'SweepScale.HundredThousand*' 'SweepScale.SixtyFourThousand*'
  'TrialCursor.ALargeSweeps*' 'Learning.Mnist*' 'Learning.FashionMnist*' 'Learning.Cifar*'
  'Plans/LearningUnderPlan.Mnist*' 'Plans/LearningUnderPlan.Cifar*')
scale_tests=$(printf '%s\n' "${scale_patterns[@]}" | sed 's/\./\\./g; s/\*/.*/g' | paste -sd '|')
# And the MPI scheduler's tests on one rank (sweep_mpi_np1): one rank runs
# the one-process sweep, which memsweep_sweep_tests checks under both, and
# the MPI code around it runs in np2 and np4 (20 s each, instrumented).
scale_tests+='|sweep_mpi_np1$'
# Read by the shards; a test run alone is named on its command line, which wins.
GTEST_FILTER=-$(printf '%s\n' "${scale_patterns[@]}" | paste -sd ':')
export GTEST_FILTER
# address-program, not run by CI for its time: the memsweep program and
# the tests that run it (labels cli, e2e) under ASan; in CI's runs they took
# about 5 of the ASan step's 14 minutes and found nothing (the program's
# commands are thin over the modules `address` tests). Not even there: the
# three end-to-end tests whose sweeps are made slow on purpose (for a
# signal, a kill or a watcher to land during a trial) take about two
# minutes each in this -O0 build.
slow_sweep_tests='RunCommand\.SignalStopsTheSweepAndResumeCompletesIt$|RunCommand\.AKilledRankLeavesAKilledTrialThatResumeRecords$|WatchCommand\.SnapshotsDuringABackgroundSweep'

for kind in "${kinds[@]}"; do
  case $kind in
    address)
      build build-asan address,undefined memsweep_unit_tests memsweep_sampler_tests memsweep_trainer_tests \
        memsweep_estimate_tests memsweep_store_tests memsweep_watch_tests memsweep_sweep_tests \
        memsweep_sweep_mpi_tests memsweep_runner_tests memsweep_runner_parts_tests memsweep_program_trial_tests \
        memsweep_shared_dataset_tests \
        memsweep_cgroup_tests fuzz_sweep_file_replay fuzz_idx_replay fuzz_cifar_replay fuzz_results_file_replay
      run_asan_tests '^(unit|sampler|trainer|estimate|store|watch|sweep|runner|dataset|fuzz)$' \
        "^($measurement_tests|$scale_tests)"
      ;;
    address-program)
      build build-asan address,undefined memsweep memsweep_cli_tests memsweep_run_tests
      run_asan_tests '^(cli|e2e)$' "^($slow_sweep_tests)"
      ;;
    thread)
      build build-tsan thread memsweep_sampler_tests memsweep_sweep_tests memsweep_sweep_mpi_tests
      TSAN_OPTIONS=suppressions=$supp/tsan.supp:halt_on_error=1:second_deadlock_stack=1:print_suppressions=0 \
        run_tests build-tsan '^(sampler|sweep)$' "^($measurement_tests|$scale_tests)"
      ;;
    *)
      echo "ci/sanitize.sh: unknown sanitizer '$kind'; expected address, thread or address-program" >&2
      exit 2
      ;;
  esac
done
