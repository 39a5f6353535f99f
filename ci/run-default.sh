#!/usr/bin/env bash
# The run command (README.md): installs the Debian packages that building and
# running memsweep needs, builds the memsweep executable alone, runs the
# default sweep (jobs/examples/quickstart.toml: small MLPs on a synthetic
# dataset) as an MPI job of three ranks — rank 0 writes, two train — and
# prints its summary. The results go to results/quickstart.h5, replacing the
# previous run's (this is a demonstration; `memsweep run` itself never
# replaces a file without --force). The test command (ci/test.sh) installs
# and builds everything else.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-deps.sh --run
bash ci/build.sh --run

memsweep="${MEMSWEEP_BUILD_DIR:-build}/memsweep"
# A first run on a machine measures what a trial process takes here (about
# a second; kept in ~/.cache/memsweep), so that the summary's predictions
# are this machine's, not the built-in coefficients' (docs/estimate.md).
"$memsweep" estimate --calibrate --if-uncalibrated
mkdir -p results
# --allow-run-as-root: Open MPI refuses root otherwise; --oversubscribe: three
# ranks on machines with fewer cores. One OpenMP thread per training rank.
OMP_NUM_THREADS=1 mpirun --allow-run-as-root --oversubscribe -np 3 \
  "$memsweep" run jobs/examples/quickstart.toml -o results/quickstart.h5 --force
"$memsweep" summary results/quickstart.h5
