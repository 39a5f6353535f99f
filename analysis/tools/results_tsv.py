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
(docs/results-file.md, Versions).
"""

import argparse
import sys

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("what", choices=["attributes", "table", "units"])
    parser.add_argument("table", nargs="?", help="trials, samples, epochs or runs")
    parser.add_argument("--swmr", action="store_true",
                        help="open as a SWMR reader: needed while a run writes the file, or after its writer was killed")
    args = parser.parse_args()
    options = {"libver": "latest", "swmr": True} if args.swmr else {}
    with h5py.File(args.results, "r", **options) as results:
        if args.what == "attributes":
            for name, value in results.attrs.items():
                print(f"{name}\t{text(value)}")
            return
        if args.table not in results:
            sys.exit(f"results_tsv.py: {args.results} has no table {args.table!r}")
        dataset = results[args.table]
        names = dataset.dtype.names
        if args.what == "units":
            for name in names:
                print(f"{name}\t{text(dataset.attrs.get('unit:' + name, ''))}")
            return
        print("\t".join(names))
        for row in dataset[()]:
            print("\t".join(text(row[name]) for name in names))


if __name__ == "__main__":
    main()
