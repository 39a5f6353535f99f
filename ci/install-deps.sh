#!/usr/bin/env bash
# Installs the Debian packages memsweep needs. `--run`: only what building
# and running memsweep needs (the run command, ci/run-default.sh); without
# it, everything the tests, sanitizers, fuzzers, analysis and job-script
# tests use as well (the test command).
# Idempotent and non-interactive: packages already present are not touched,
# and `apt-get update` runs once, only when something is missing.
set -euo pipefail

run_packages=(
  # toolchain
  build-essential cmake pkg-config
  ninja-build                         # the builds' generator where a folder is configured anew (ci/build.sh)
  # C++ libraries the modules link
  libopenmpi-dev openmpi-bin          # MPI: the sweep's ranks
  libhdf5-dev                         # HDF5 1.10 serial: the results file
  libdnnl-dev                         # oneDNN 2.6: the trainer
  ocl-icd-opencl-dev opencl-c-headers # Debian builds oneDNN with OpenCL: its CMake config looks for it
  libpapi-dev                         # PAPI 7: the sampler's counters
  libpfm4-dev                         # libpfm4: encodes PAPI's events for perf_event (the sampler)
  zlib1g-dev                          # .gz datasets
  libncurses-dev                      # ncursesw: memsweep watch's full-screen view
  libtoml11-dev libcli11-dev libfmt-dev
  nlohmann-json3-dev                  # memsweep events --json
)
test_packages=(
  git
  hdf5-tools                          # h5dump: the tests read the results file with it
  papi-tools                          # papi_avail, which the counters' messages point to (docs/sampler.md)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format                        # the style check of ci/test.sh
  clang libclang-rt-14-dev            # libFuzzer with ASan and UBSan: ci/fuzz.sh
  # analysis (Debian's /usr/bin/python3)
  python3 python3-numpy python3-h5py python3-pandas python3-matplotlib
  python3-scipy python3-pytest python3-statsmodels
  python3-torch                       # jobs/examples/torch_train.py: the PyTorch reference program
  # cluster scheduler for the job-script tests
  slurm-wlm munge
  # the virtual cluster's nodes: namespaces, links, host names (tests/cluster)
  iproute2 util-linux hostname
  # a terminal for the full-screen watch test
  tmux
)

case "${1-}" in
  --run) packages=("${run_packages[@]}") ;;
  "") packages=("${run_packages[@]}" "${test_packages[@]}") ;;
  *) echo "install-deps: unknown argument '$1' (expected --run or nothing)" >&2; exit 2 ;;
esac

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} Debian packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (it calls apt-get), or install them yourself" >&2
  exit 1
fi

echo "install-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
