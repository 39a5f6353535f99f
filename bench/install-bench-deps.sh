#!/usr/bin/env bash
# Installs what the trainer benchmark (bench/run-trainer-bench.sh) needs, as root:
#   * Debian's PyTorch (python3-torch, 1.13 on bookworm) for /usr/bin/python3;
#   * an unpacked copy of OpenBLAS (OpenMP variant, libopenblas0-openmp) under
#     build/bench-deps/openblas-openmp/, used FOR THE BENCHMARK ONLY.
#
# Why the unpacked copy: Debian's libtorch_cpu.so links "libblas.so.3" (the
# generic SONAME), which the system resolves through the libblas.so.3
# alternative, by default the reference BLAS (libblas3) - 5 to 22 times slower
# on the MLP linear layers. The OpenBLAS package ships a drop-in
# libblas.so.3 / liblapack.so.3 in /usr/lib/<triplet>/openblas-openmp/; putting
# that directory first in LD_LIBRARY_PATH makes the dynamic loader pick it for
# the benchmark process only. The system's alternatives are not touched.
#
# Idempotent: runs apt-get update (once) and apt-get install only when
# something is missing, and re-unpacks OpenBLAS only when it is absent.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deps_dir="${MEMSWEEP_BENCH_DEPS:-$repo_root/build/bench-deps}"
openblas_pkg=libopenblas0-openmp
triplet="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"

if [[ $EUID -ne 0 ]]; then
    echo "install-bench-deps.sh: must run as root (apt-get install)" >&2
    exit 1
fi

updated=0
apt_update_once() {
    if [[ $updated -eq 0 ]]; then
        apt-get update -qq
        updated=1
    fi
}

# --- 1. Debian's PyTorch ---------------------------------------------------
if ! /usr/bin/python3 -c 'import torch' >/dev/null 2>&1; then
    apt_update_once
    # No recommends: libtorch-dev, build-essential, ninja, pybind11 are not needed.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-torch
fi
/usr/bin/python3 -c 'import torch; print("torch", torch.__version__, "for /usr/bin/python3")'

# --- 2. OpenBLAS (OpenMP) unpacked for the benchmark only ----------------------
ob_root="$deps_dir/openblas-openmp"
ob_libdir="$ob_root/usr/lib/$triplet/openblas-openmp"
if [[ ! -e "$ob_libdir/libblas.so.3" ]]; then
    mkdir -p "$deps_dir/debs"
    if ! compgen -G "$deps_dir/debs/${openblas_pkg}_*.deb" >/dev/null; then
        if ! apt-cache show "$openblas_pkg" >/dev/null 2>&1; then
            apt_update_once
        fi
        # apt-get download writes into the current directory; as root it warns
        # that _apt cannot drop privileges into it, which is harmless.
        (
            cd "$deps_dir/debs"
            apt-get download -qq "$openblas_pkg" 2>&1 \
                | { grep -v "couldn't be accessed by user '_apt'" || true; }
        )
    fi
    deb="$(compgen -G "$deps_dir/debs/${openblas_pkg}_*.deb" | sort | tail -n1)"
    if [[ -z "$deb" ]]; then
        echo "install-bench-deps.sh: failed to download $openblas_pkg" >&2
        exit 1
    fi
    rm -rf "$ob_root"
    mkdir -p "$ob_root"
    dpkg -x "$deb" "$ob_root"
fi
# OpenBLAS itself needs only libc, libgomp, libgfortran - check nothing is missing.
if LD_LIBRARY_PATH="$ob_libdir" ldd "$ob_libdir/libblas.so.3" | grep -q 'not found'; then
    LD_LIBRARY_PATH="$ob_libdir" ldd "$ob_libdir/libblas.so.3" >&2
    echo "install-bench-deps.sh: OpenBLAS has unresolved dependencies" >&2
    exit 1
fi
echo "OpenBLAS for the benchmark: LD_LIBRARY_PATH=$ob_libdir"
