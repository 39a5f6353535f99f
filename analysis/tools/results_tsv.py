#!/usr/bin/python3
r"""Print parts of a memsweep results file as tab-separated text, with h5py alone.

It needs nothing of memsweep, which makes it the proof that the file is
self-describing: the tests run it on files the real binary wrote and compare
with what the binary printed. Usage (with /usr/bin/python3 on Debian):

    results_tsv.py results.h5 attributes        # name<TAB>value per root attribute
    results_tsv.py results.h5 table trials      # a header line, then one line per row
    results_tsv.py results.h5 units samples     # column<TAB>unit
    results_tsv.py --swmr results.h5 table trials   # a file a run is writing, or a killed run left

Arrays print joined by "-" (hidden widths), lists of strings by ","; a
backslash, tab or newline inside a value prints as \\, \t or \n. Any schema
version (1, 2, 3): a table prints the columns the file has, by name
(docs/results-file.md, Versions). A row with an empty trial id was never
written whole and is left out (docs/results-file.md, Rows never written).
A file h5py cannot read (damaged, cut, not HDF5) is one line on stderr
naming it, and exit status 2.
"""

import argparse
import ctypes
import os
import sys
import traceback

try:
    import h5py
    import numpy
except ImportError as error:  # name the Debian package that is missing
    sys.exit(f"results_tsv.py: the Python module {error.name} is missing: apt-get install python3-{error.name}, "
             f"or use a python3 that has it")


def escaped(value):
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def text(value):
    if isinstance(value, bytes):
        return escaped(value.decode("utf-8", errors="replace"))
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, numpy.ndarray):
        if value.dtype.kind in "SOU":
            return ",".join(text(v) for v in value.tolist())
        return "-".join(text(v) for v in value.tolist())
    if isinstance(value, numpy.generic):
        return text(value.item())
    if isinstance(value, float):
        return repr(value)
    return str(value)


# h5py's errors that mean the file's bytes are not what HDF5 expects (a damaged or cut file, not HDF5 at all):
# one line naming the file and exit status 2, like memsweep's own bad input. The same types raised outside h5py
# are this script's bugs and keep their traceback.
BAD_FILE = 2
H5PY_READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError)


def raised_by_h5py(error):
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    where = frames[-1].filename
    if os.path.isabs(where):
        folder = os.path.dirname(os.path.abspath(h5py.__file__))
        return os.path.commonpath([folder, os.path.abspath(where)]) == folder
    return where.split(os.sep)[0] == "h5py"  # Cython's frames name their .pyx relative to the package


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("what", choices=["attributes", "table", "units"])
    parser.add_argument("table", nargs="?", help="trials, samples, epochs or runs")
    parser.add_argument("--swmr", action="store_true",
                        help="open as a SWMR reader: needed while a run writes the file, or after its writer was killed")
    args = parser.parse_args()
    try:
        return print_results(args)
    except H5PY_READ_ERRORS as error:
        if not raised_by_h5py(error):
            raise
        text = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"results_tsv.py: error: {args.results}: cannot read it (HDF5: {' '.join(str(text).split())})",
              file=sys.stderr)
        return BAD_FILE


def swmr_file(path, attempts=25):
    """The file opened as a SWMR reader that gives up on a failing checksum after `attempts` reads: HDF5 1.10's
    default (100, each sleep doubled from 1 ns) would hold this script for ever on a damaged file. h5py does not
    expose the setting; it is set through the HDF5 library h5py loaded, where that can be found."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    fapl.set_fclose_degree(h5py.h5f.CLOSE_STRONG)
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        libraries = sorted({line.split()[-1] for line in maps if "/libhdf5" in line and "_hl" not in line})
    if libraries:
        limit = ctypes.CDLL(libraries[0]).H5Pset_metadata_read_attempts
        limit.argtypes = [ctypes.c_int64, ctypes.c_uint]
        limit(fapl.id, attempts)
    return h5py.File(h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ, fapl=fapl))


def written(rows):
    """The rows that were written whole: a row with an empty trial id never was (docs/results-file.md, "Rows never
    written"); a table without trial ids (/runs) keeps every row."""
    if "trial_id" not in (rows.dtype.names or ()):
        return rows
    return rows[rows["trial_id"] != b""]


def print_results(args):
    with (swmr_file(args.results) if args.swmr else h5py.File(args.results, "r")) as results:
        if args.what == "attributes":
            for name, value in results.attrs.items():
                print(f"{name}\t{text(value)}")
            return 0
        if args.table not in results:
            print(f"results_tsv.py: error: {args.results} has no table {args.table!r}", file=sys.stderr)
            return BAD_FILE
        dataset = results[args.table]
        names = dataset.dtype.names
        if args.what == "units":
            for name in names:
                print(f"{name}\t{text(dataset.attrs.get('unit:' + name, ''))}")
            return 0
        print("\t".join(names))
        for row in written(dataset[()]):
            print("\t".join(text(row[name]) for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
