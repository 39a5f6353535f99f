# Every real dependency, found through its own CMake config, CMake's Find
# module or pkg-config. A missing one stops the configure step with the Debian
# packages that provide it (ci/install-deps.sh installs them all).

find_package(PkgConfig QUIET)

function(memsweep_missing what debian_packages)
  message(FATAL_ERROR
    "memsweep needs ${what}, which CMake could not find.\n"
    "Install the Debian package(s): ${debian_packages}\n"
    "(as root: apt-get install ${debian_packages}; or run ci/install-deps.sh, which installs every dependency)")
endfunction()

# MPI: the sweep's ranks (used from the sweep issue on).
find_package(MPI QUIET COMPONENTS C)
if(NOT MPI_C_FOUND)
  memsweep_missing("MPI (Open MPI 4.1)" "libopenmpi-dev openmpi-bin")
endif()

# HDF5 1.10, serial: the results file.
set(HDF5_PREFER_PARALLEL FALSE)
find_package(HDF5 QUIET COMPONENTS C)
if(NOT HDF5_FOUND)
  memsweep_missing("HDF5 1.10 (serial)" "libhdf5-dev hdf5-tools")
endif()
if(HDF5_IS_PARALLEL)
  message(FATAL_ERROR "memsweep writes HDF5 from one rank and needs the serial library; "
                      "CMake found a parallel HDF5 (${HDF5_VERSION}). Install libhdf5-dev.")
endif()
if(HDF5_VERSION VERSION_LESS 1.10)
  message(FATAL_ERROR "memsweep needs HDF5 1.10 or newer (SWMR); found ${HDF5_VERSION}. Install libhdf5-dev.")
endif()

# oneDNN 2.6 (v2 API): the trainer. Debian's libdnnl-dev ships a CMake config,
# and Debian builds oneDNN with the OpenCL GPU runtime, so that config
# requires OpenCL's headers and library although memsweep runs on CPUs only.
find_package(OpenCL QUIET)
if(NOT OpenCL_FOUND)
  memsweep_missing("OpenCL headers and loader (required by Debian's oneDNN CMake config)"
                   "ocl-icd-opencl-dev opencl-c-headers")
endif()
find_package(dnnl 2.6 QUIET CONFIG)
if(NOT dnnl_FOUND)
  memsweep_missing("oneDNN 2.6 (dnnl)" "libdnnl-dev")
endif()
if(dnnl_VERSION VERSION_GREATER_EQUAL 3.0)
  message(FATAL_ERROR "memsweep's trainer uses the oneDNN v2 API; found oneDNN ${dnnl_VERSION}. Install Debian's libdnnl-dev (2.6).")
endif()

# OpenMP: oneDNN's CPU runtime in Debian's build; the trainer sets its thread
# count and runs the optimizer's loops with it.
find_package(OpenMP QUIET COMPONENTS CXX)
if(NOT OpenMP_CXX_FOUND)
  memsweep_missing("OpenMP for C++ (libgomp, part of g++)" "g++ libgomp1")
endif()

# PAPI 7: the sampler's counters (pkg-config only).
if(PkgConfig_FOUND)
  pkg_check_modules(PAPI QUIET IMPORTED_TARGET papi>=7)
endif()
if(NOT PAPI_FOUND)
  memsweep_missing("PAPI 7 (pkg-config module papi)" "libpapi-dev papi-tools pkg-config")
endif()

# libpfm4: encodes PAPI's native events for perf_event, which the sampler
# opens itself to count every thread (docs/sampler.md). Debian's libpfm4-dev
# ships the headers and a static library only; the shared library is the one
# PAPI already loads, so that is the one linked.
find_path(PFM_INCLUDE_DIR perfmon/pfmlib_perf_event.h)
find_library(PFM_LIBRARY NAMES libpfm.so.4 pfm)
if(NOT PFM_INCLUDE_DIR OR NOT PFM_LIBRARY)
  memsweep_missing("libpfm4 (perfmon/pfmlib_perf_event.h)" "libpfm4-dev")
endif()
add_library(memsweep_pfm INTERFACE IMPORTED)
target_include_directories(memsweep_pfm INTERFACE ${PFM_INCLUDE_DIR})
target_link_libraries(memsweep_pfm INTERFACE ${PFM_LIBRARY})

# Threads: the sampler's threads.
find_package(Threads REQUIRED)

find_package(ZLIB QUIET)
if(NOT ZLIB_FOUND)
  memsweep_missing("zlib" "zlib1g-dev")
endif()

find_package(toml11 QUIET CONFIG)
if(NOT toml11_FOUND)
  memsweep_missing("toml11" "libtoml11-dev")
endif()

find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND)
  memsweep_missing("CLI11" "libcli11-dev")
endif()

find_package(fmt QUIET CONFIG)
if(NOT fmt_FOUND)
  memsweep_missing("fmt" "libfmt-dev")
endif()

# nlohmann/json: the CLI's --json output.
find_package(nlohmann_json 3 QUIET CONFIG)
if(NOT nlohmann_json_FOUND)
  memsweep_missing("nlohmann/json" "nlohmann-json3-dev")
endif()

if(MEMSWEEP_BUILD_TESTS)
  find_package(GTest QUIET CONFIG)
  if(NOT GTest_FOUND)
    memsweep_missing("GoogleTest" "libgtest-dev libgmock-dev")
  endif()
endif()

if(MEMSWEEP_BUILD_BENCHMARKS)
  find_package(benchmark QUIET CONFIG)
  if(NOT benchmark_FOUND)
    memsweep_missing("Google Benchmark" "libbenchmark-dev")
  endif()
endif()

message(STATUS "memsweep dependencies: MPI ${MPI_C_VERSION}, HDF5 ${HDF5_VERSION}, oneDNN ${dnnl_VERSION}, "
               "PAPI ${PAPI_VERSION}, zlib ${ZLIB_VERSION_STRING}, toml11 ${toml11_VERSION}, "
               "CLI11 ${CLI11_VERSION}, fmt ${fmt_VERSION}, nlohmann/json ${nlohmann_json_VERSION}")

# ncursesw: the full-screen view of `memsweep watch` (wide characters for its
# charts' block glyphs).
set(CURSES_NEED_NCURSES TRUE)
set(CURSES_NEED_WIDE TRUE)
find_package(Curses QUIET)
if(NOT CURSES_FOUND)
  memsweep_missing("ncursesw (wide-character curses)" "libncurses-dev")
endif()
