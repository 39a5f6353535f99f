"""Per host: where the trials ran, and how much of each node's memory was in use over time.

For results whose trials ran on more than one host (a cluster's ranks on several nodes):

- `trial_hosts(trials, runs=None)`: each trial row's host: its own `host`, or, where that is empty (the row a
  resume writes for an attempt cut short), the host of its rank in its run's /runs row (`hosts`, comma-separated,
  rank 0 first).
- `hosts_table(trials, samples=None, runs=None)`: one row per host: trial attempts and how many ended ok, the
  ranks that ran them, the mean of their `sys_used_mean` and the largest `rss_peak` (MiB), and the node's
  MemTotal (MiB) from the samples' `sys_total` where known.
- `node_samples(results, max_points=MAX_POINTS_PER_HOST)`: the node's used memory over wall-clock time, per
  host, from /samples read block by block and only in the columns it needs, each host's samples thinned to at
  most `max_points` (the lowest and the highest sample of each of max_points / 2 equal spans of time, so that
  every peak and trough stays): for `figures.node_memory_by_host` and the table's node totals.

A sample's wall-clock time is its attempt's `start_time` (the trial row's) plus its `t`; its node's used memory is
`sys_used`, or `sys_total` - `sys_available` where `sys_used` was not measured. Samples of an attempt without a
trial row, or whose row has no start time (0: a resume's row for an attempt cut short), cannot be placed in time
and are left out (`attrs["unplaced_attempts"]` counts those attempts).
"""

import importlib
import math

from ._deps import require

require("numpy", "pandas", "h5py")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# the module (the package's `load` is the function of that name); BLOCK_ROWS read from it when used
_load = importlib.import_module(".load", __package__)

MIB = float(2 ** 20)
# The points of a host's line at most: a figure 800 pixels wide shows no more, and a sweep's millions of samples
# would make matplotlib slow and the PNG no better.
MAX_POINTS_PER_HOST = 4000
# How a host that could not be found is named in the table (a row without host whose run's /runs row does not
# name its rank).
UNKNOWN_HOST = "(unknown)"
HOSTS_COLUMNS = ["host", "trials", "ok", "ranks", "sys_used_mean_mib", "rss_peak_max_mib", "node_total_mib"]
NODE_SAMPLE_COLUMNS = ["host", "time", "seconds", "used", "sys_total"]
# /samples' columns node_samples reads (those a file has: a schema 1 file has no sys_total).
_READ = ("trial_id", "attempt", "t", "sys_used", "sys_total", "sys_available")


def _text(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _column(frame, name, default):
    return frame[name] if name in frame.columns else pd.Series(default, index=frame.index)


def run_hosts(runs):
    """{(file, run): [host of rank 0, rank 1, ...]} from /runs' `hosts` (comma-separated, by rank)."""
    if runs is None or len(runs) == 0 or "hosts" not in runs.columns:
        return {}
    files = _column(runs, "file", "")
    return {(_text(f), int(r)): [h.strip() for h in _text(hosts).split(",")] if _text(hosts) else []
            for f, r, hosts in zip(files, runs["run"], runs["hosts"])}


def trial_hosts(trials, runs=None):
    """Each trial row's host (a str Series on the trials' index): the row's `host`, else the host /runs names
    for the row's rank in its run (`runs`: load's runs; a `Results` may be given for `trials`, its runs then
    taken unless given); "" where neither says."""
    if hasattr(trials, "trials"):
        runs = trials.runs if runs is None else runs
        trials = trials.trials
    by_run = run_hosts(runs)
    files = _column(trials, "file", "").map(_text)
    named = _column(trials, "host", "").map(_text)
    runs_of = _column(trials, "run", 0)
    ranks = _column(trials, "rank", -1)
    hosts = []
    for host, path, run, rank in zip(named, files, runs_of, ranks):
        if not host and not pd.isna(run) and not pd.isna(rank):
            listed = by_run.get((path, int(run)), [])
            host = listed[int(rank)] if 0 <= int(rank) < len(listed) else ""
        hosts.append(host)
    return pd.Series(hosts, index=trials.index, dtype=object)


def host_count(trials, runs=None):
    """How many hosts (known by name, trial_hosts) the trial rows ran on."""
    return len(set(trial_hosts(trials, runs)) - {""})


def _sample_hosts(samples, trials, hosts):
    """Each sample row's host: its own `host` column, else its attempt's trial row's (file, trial_id, attempt)."""
    if "host" in samples.columns:
        return samples["host"].map(_text)
    keys = pd.DataFrame({"file": _column(trials, "file", "").map(_text).to_numpy(),
                         "trial_id": trials["trial_id"].astype(str).to_numpy(),
                         "attempt": trials["attempt"].astype(int).to_numpy(), "host": hosts.to_numpy()})
    keys = keys.drop_duplicates(["file", "trial_id", "attempt"], keep="last")
    wanted = pd.DataFrame({"file": _column(samples, "file", "").map(_text).to_numpy(),
                           "trial_id": samples["trial_id"].astype(str).to_numpy(),
                           "attempt": samples["attempt"].astype(int).to_numpy()})
    return wanted.merge(keys, on=["file", "trial_id", "attempt"], how="left")["host"].fillna("").set_axis(
        samples.index)


def hosts_table(trials, samples=None, runs=None):
    """One row per host the trials ran on (trial_hosts), in name order, a host that could not be found last as
    UNKNOWN_HOST: `trials` (trial attempts: rows of /trials), `ok` (of them, status ok), `ranks` (a tuple of the
    ranks whose trials ran there), `sys_used_mean_mib` (the mean of those rows' `sys_used_mean`, the node's used
    memory averaged over each trial's samples; rows that did not measure it skipped), `rss_peak_max_mib` (the
    largest `rss_peak`), `node_total_mib` (the node's MemTotal: the largest `sys_total` of its samples; NaN when
    no sample says), in MiB (2^20 bytes).

    `trials`: a trials frame, or a `Results` (then its runs, and its samples through node_samples, unless given).
    `samples`: node_samples' frame (its attrs["node_totals"] counted too), or any samples frame with `sys_total`
    and `host` or (`file`,) `trial_id` and `attempt`; None: no node totals. `runs`: /runs, for the rows without a
    host."""
    if hasattr(trials, "trials"):
        results = trials
        runs = results.runs if runs is None else runs
        trials = results.trials
        if samples is None:
            samples = node_samples(results, runs=runs)
    hosts = trial_hosts(trials, runs)
    totals = {}
    if samples is not None and len(samples) and "sys_total" in samples.columns:
        total = pd.to_numeric(samples["sys_total"], errors="coerce")
        known = pd.DataFrame({"host": _sample_hosts(samples, trials, hosts).to_numpy(),
                              "total": total.where(total >= 0).to_numpy()}).dropna()
        totals = known.groupby("host")["total"].max().to_dict()
    if samples is not None:
        for host, total in samples.attrs.get("node_totals", {}).items():
            totals[host] = max(total, totals.get(host, total))
    frame = pd.DataFrame({"host": hosts.to_numpy(), "ok": (trials["status"].astype(str) == "ok").to_numpy(),
                          "rank": pd.to_numeric(_column(trials, "rank", -1), errors="coerce").to_numpy(),
                          "sys_used_mean": pd.to_numeric(trials["sys_used_mean"], errors="coerce").to_numpy(),
                          "rss_peak": pd.to_numeric(trials["rss_peak"], errors="coerce").to_numpy()})
    rows = []
    for host in sorted(set(frame["host"]) - {""}) + ([""] if (frame["host"] == "").any() else []):
        mine = frame[frame["host"] == host]
        used = mine["sys_used_mean"].where(mine["sys_used_mean"] >= 0).dropna()
        peak = mine["rss_peak"].where(mine["rss_peak"] >= 0).dropna()
        total = totals.get(host) if host else None
        rows.append({"host": host or UNKNOWN_HOST, "trials": len(mine), "ok": int(mine["ok"].sum()),
                     "ranks": tuple(sorted(int(r) for r in set(mine["rank"].dropna()) if r >= 0)),
                     "sys_used_mean_mib": used.mean() / MIB if len(used) else math.nan,
                     "rss_peak_max_mib": peak.max() / MIB if len(peak) else math.nan,
                     "node_total_mib": total / MIB if total is not None else math.nan})
    return pd.DataFrame(rows, columns=HOSTS_COLUMNS)


def _attempt_places(trials, hosts):
    """{file: {(trial_id bytes, attempt): (start_time, host)}} of the trial rows with a host (start_time NaN where
    the row has none: 0, a resume's row for an attempt cut short), and {host: (first start, last end)}: the span
    of time each host's samples fall in (end: end_time, or start + wall_seconds where that is later)."""
    places, spans = {}, {}
    files = _column(trials, "file", "").map(_text)
    starts = pd.to_numeric(trials["start_time"], errors="coerce")
    ends = np.fmax(pd.to_numeric(_column(trials, "end_time", np.nan), errors="coerce").to_numpy(dtype=float),
                   (starts + pd.to_numeric(_column(trials, "wall_seconds", np.nan), errors="coerce")).to_numpy(
                       dtype=float))
    for path, trial_id, attempt, start, end, host in zip(files, trials["trial_id"], trials["attempt"], starts, ends,
                                                         hosts):
        if not host:
            continue
        known = not pd.isna(start) and start > 0
        places.setdefault(path, {})[(str(trial_id).encode("utf-8"), int(attempt))] = \
            (float(start) if known else math.nan, host)
        if not known:
            continue
        end = float(start) if pd.isna(end) else max(float(end), float(start))
        low, high = spans.get(host, (float(start), end))
        spans[host] = (min(low, float(start)), max(high, end))
    return places, spans


def _known(values):
    values = values.astype(np.float64)
    values[values < 0] = np.nan  # -1: not measured
    return values


def _thin(kept, bins):
    """Of the samples (host, bin, time, used, sys_total: arrays), per (host, bin) the one of the lowest `used` (the
    earliest of equal ones) and the one of the highest (the latest), one when they are the same, each with the
    bin's largest sys_total; in (host, bin) order. Thinning blocks and then their union keeps the same samples as
    thinning everything at once."""
    host, where, time, used, total = kept
    if not len(host):
        return kept
    key = host * bins + where
    order = np.lexsort((time, used, key))
    sorted_key = key[order]
    begins = np.flatnonzero(np.concatenate(([True], sorted_key[1:] != sorted_key[:-1])))
    ends = np.append(begins[1:], len(order)) - 1
    bin_total = np.fmax.reduceat(total[order], begins)
    chosen = np.concatenate([begins, ends])
    bin_of = np.concatenate([np.arange(len(begins))] * 2)
    chosen, unique = np.unique(chosen, return_index=True)
    rows = order[chosen]
    return host[rows], where[rows], time[rows], used[rows], bin_total[bin_of[unique]]


def node_samples(results, max_points=MAX_POINTS_PER_HOST, runs=None):
    """The node's used memory over time per host: one row per sample kept, in host and time order, with
    `host`, `time` (wall clock, s since 1970-01-01T00:00:00Z: the attempt's start_time + t), `seconds` (since the
    first sample placed), `used` (bytes: sys_used, else sys_total - sys_available) and `sys_total` (bytes, the
    largest of the samples its point stands for; NaN unknown).

    /samples is read BLOCK_ROWS rows at a time, only the columns it needs; each host's samples are thinned as
    they are read to the lowest and the highest of each of max_points / 2 equal spans of the host's time (from
    its first trial's start to its last one's end), so at most max_points per host. attrs: `origin` (the first
    sample's wall-clock time; None without samples), `unplaced_attempts` (attempts whose samples could not be
    placed in time: no trial row, no start time or no host), `node_totals` ({host: the largest sys_total of its
    samples, bytes}, placed in time or not: what hosts_table takes the node's total from)."""
    trials = results.trials
    hosts = trial_hosts(trials, results.runs if runs is None else runs)
    places, spans = _attempt_places(trials, hosts)
    names = sorted({host for mine in places.values() for _, host in mine.values()})
    bins = max(1, int(max_points) // 2)
    low = np.array([spans.get(h, (0.0, 1.0))[0] for h in names], dtype=float)
    width = np.array([max(spans.get(h, (0.0, 1.0))[1] - spans.get(h, (0.0, 1.0))[0], 1e-9) for h in names],
                     dtype=float)
    totals = np.full(len(names), np.nan)
    kept = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    origin = math.inf
    unplaced = set()
    for path in results.paths:
        mine = places.get(path, {})
        code = {host: i for i, host in enumerate(names)}
        lookup = {key: (start, code[host]) for key, (start, host) in mine.items()}
        with _load._reading(path, "table /samples"), _load._open(path) as h5:
            dataset = h5["samples"]
            present = [n for n in _READ if n in dataset.dtype.names]
            view = dataset.fields(present)
            for first in range(0, dataset.shape[0], _load.BLOCK_ROWS):
                block = view[first:min(first + _load.BLOCK_ROWS, dataset.shape[0])]
                block = block[block["trial_id"] != b""]  # rows a killed writer never wrote
                if not len(block):
                    continue
                ids, attempts = block["trial_id"], block["attempt"]
                # an attempt's samples come in runs of rows: look each run up once
                runs_start = np.flatnonzero(np.concatenate(([True], (ids[1:] != ids[:-1]) |
                                                            (attempts[1:] != attempts[:-1]))))
                lengths = np.diff(np.append(runs_start, len(block)))
                start = np.full(len(runs_start), np.nan)
                host = np.full(len(runs_start), -1, dtype=np.int64)
                for i, (trial_id, attempt) in enumerate(zip(ids[runs_start].tolist(),
                                                            attempts[runs_start].tolist())):
                    found = lookup.get((trial_id, int(attempt)))
                    if found is not None:
                        start[i], host[i] = found
                    if found is None or math.isnan(start[i]):
                        unplaced.add((path, trial_id, int(attempt)))
                start, host = np.repeat(start, lengths), np.repeat(host, lengths)
                used = _known(block["sys_used"]) if "sys_used" in present else np.full(len(block), np.nan)
                total = _known(block["sys_total"]) if "sys_total" in present else np.full(len(block), np.nan)
                # the node's total from every sample of a known host, placed in time or not
                named = (host >= 0) & ~np.isnan(total)
                np.fmax.at(totals, host[named], total[named])
                if "sys_available" in present:
                    used = np.where(np.isnan(used), total - _known(block["sys_available"]), used)
                time = start + block["t"].astype(np.float64)
                placed = (host >= 0) & ~np.isnan(used) & ~np.isnan(time)
                if not placed.any():
                    continue
                host, time, used, total = host[placed], time[placed], used[placed], total[placed]
                origin = min(origin, float(time.min()))
                where = np.clip(np.floor((time - low[host]) / width[host] * bins), 0, bins - 1).astype(np.int64)
                thinned = _thin((host, where, time, used, total), bins)
                kept = _thin(tuple(np.concatenate(pair) for pair in zip(kept, thinned)), bins)
    host, _, time, used, total = kept
    order = np.lexsort((time, host))
    points = pd.DataFrame({"host": pd.Series([names[i] for i in host[order]], dtype=object),
                           "time": time[order], "seconds": time[order] - (origin if len(time) else 0.0),
                           "used": used[order], "sys_total": total[order]}, columns=NODE_SAMPLE_COLUMNS)
    points.attrs["origin"] = origin if math.isfinite(origin) else None
    points.attrs["node_totals"] = {host: float(total) for host, total in zip(names, totals) if not np.isnan(total)}
    points.attrs["unplaced_attempts"] = len(unplaced)
    return points


__all__ = ["trial_hosts", "host_count", "hosts_table", "node_samples", "run_hosts", "MAX_POINTS_PER_HOST",
           "UNKNOWN_HOST"]
