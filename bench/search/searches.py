"""One line per search of a memsweep results file: what bench/search-figures.sh tabulates.

Usage: /usr/bin/python3 bench/search/searches.py RESULTS.h5 [LABEL]
Prints TSV: label, search, configuration, limit MiB, status, fits, does_not_fit, trials, seconds.
"""
import sys

import h5py


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def main(path, label):
    with h5py.File(path, "r") as f:
        for row in sorted(f["searches"][:], key=lambda r: r["search"]):
            print("\t".join(str(x) for x in (
                label, row["search"], row["configuration"] + 1, round(row["limit"] / 2**20),
                text(row["status"]).rstrip("\0"), row["fits"], row["does_not_fit"], row["trials"],
                round(float(row["seconds"]), 1))))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
