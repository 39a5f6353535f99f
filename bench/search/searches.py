"""Read memsweep results files for bench/search-figures.sh (run with /usr/bin/python3, h5py).

  searches.py searches RESULTS.h5 [LABEL]
      one TSV line per row of /searches: label, search, configuration (from 1),
      what the configuration is, limit (MiB), strategy, status, fits,
      does_not_fit, trials (the row's), trials found in /trials, the sum of
      those trials' wall_seconds, the estimate's answer (-1: none)
  searches.py grid RESULTS.h5 LIMIT_MIB
      a plain grid along batch_size: one line per trial (batch, status, peak
      MiB, fits), then "largest<TAB>B" (the largest batch that ended ok with
      its peak within the limit) and "nonmonotonic<TAB>..." (where the peak
      falls as the batch grows, and fits above a batch that did not fit)
  searches.py trials RESULTS.h5
      the number of /trials rows and the sum of their wall_seconds
"""
import sys

import h5py


def text(value):
    return (value.decode() if isinstance(value, bytes) else str(value)).rstrip("\0")


def what(row):
    model = text(row["model"])
    trainer = text(row["trainer"]) if "trainer" in row.dtype.names else ""
    hidden = "-".join(str(int(h)) for h in row["hidden"] if h > 0)
    channels = "-".join(str(int(c)) for c in row["channels"] if c > 0)
    label = f"{model} {channels}" if channels else f"{model} {hidden}"
    return f"{trainer}:{label}" if trainer and trainer != "memsweep" else label


def searches(path, label):
    with h5py.File(path, "r") as f:
        trials = f["trials"][:]
        for row in sorted(f["searches"][:], key=lambda r: r["search"]):
            own = trials[trials["search"] == row["search"]]
            print("\t".join(str(x) for x in (
                label, row["search"], row["configuration"] + 1, what(row),
                round(row["limit"] / 2**20), text(row["strategy"]), text(row["status"]),
                row["fits"], row["does_not_fit"], row["trials"], len(own),
                round(float(own["wall_seconds"].sum()), 1), row["predicted"])))


def grid(path, limit_mib):
    limit = float(limit_mib) * 2**20
    with h5py.File(path, "r") as f:
        rows = sorted(f["trials"][:], key=lambda r: int(r["batch_size"]))
    points = []
    for r in rows:
        status = text(r["status"])
        peak = int(r["rss_peak"])
        fits = status == "ok" and 0 <= peak <= limit
        points.append((int(r["batch_size"]), status, peak, fits))
        print(f"{int(r['batch_size'])}\t{status}\t{peak / 2**20:.1f}\t{'fits' if fits else 'no'}")
    fit_batches = [b for b, _, _, fits in points if fits]
    print(f"largest\t{max(fit_batches) if fit_batches else -1}")
    odd = []
    ok = [(b, p) for b, s, p, _ in points if s == "ok" and p > 0]
    for (b0, p0), (b1, p1) in zip(ok, ok[1:]):
        if p1 < p0:
            odd.append(f"peak {b0}: {p0 / 2**20:.1f} MiB > {b1}: {p1 / 2**20:.1f} MiB")
    first_no = next((b for b, _, _, fits in points if not fits), None)
    if first_no is not None:
        above = [b for b in fit_batches if b > first_no]
        if above:
            odd.append(f"fits at {above} above {first_no}, which did not fit")
    print("nonmonotonic\t" + ("; ".join(odd) if odd else "none"))


def trials(path):
    with h5py.File(path, "r") as f:
        t = f["trials"][:]
    print(f"{len(t)}\t{float(t['wall_seconds'].sum()):.1f}")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "searches":
        searches(args[0], args[1] if len(args) > 1 else "")
    elif mode == "grid":
        grid(args[0], args[1])
    elif mode == "trials":
        trials(args[0])
    else:
        sys.exit(__doc__)
