"""The estimate against the measurement: per trial, per component, and a calibrated fit.

- `estimate_errors(trials)`: per ok trial, error = predicted - footprint
  (bytes; negative: the estimate is short) and ratio = footprint / predicted.
- `estimate_components(results)`: the parts of the estimate (parameters,
  gradients, activations, ...) beside each trial's measured footprint. A file
  of schema 10 records each trial's parts as its run estimated them (/trials'
  `estimate_*` columns): they are read from it. For an older file it runs
  `memsweep estimate` on the sweep file kept in the results file
  (`sweep_text`): $MEMSWEEP, else $MEMSWEEP_EXECUTABLE, else `memsweep` on
  PATH. Without one, or when it fails, that file's components are left out
  and `frame.attrs["notes"]` says why.
- `calibrate(trials)`: per (dataset, host), the least-squares line
  footprint = a + b * predicted over the ok trials (every repeat a point);
  `save_calibration(fits, path)` writes it as JSON for `memsweep plan`
  (format in docs/analysis.md, "Estimate and calibration").
"""

import json
import math
import os
import re
import shutil
import subprocess
import tempfile

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .old_schemas import RUN_LIMITS, option_value  # noqa: E402
from .tables import ok_rows, trials_of  # noqa: E402

CALIBRATION_FORMAT = "memsweep-calibration"
CALIBRATION_VERSION = 1
# Above this many trials one run of `memsweep estimate` over the whole sweep
# is cheaper than one per trial.
PER_TRIAL_CALLS = 20
ESTIMATE_TIMEOUT_S = 300


def measured(trials):
    """Ok rows with a measured footprint and an estimate."""
    rows = ok_rows(trials_of(trials))
    return rows[rows["rss_footprint"].notna() & (rows["predicted_bytes"] > 0)]


def estimate_errors(trials):
    """One row per ok trial with an estimate: predicted_bytes, rss_footprint, error_bytes, ratio."""
    rows = measured(trials)
    keep = ["file", "sweep", "dataset", "host", "trial_id", "attempt", "repeat", "config", "batch_size", "hidden",
            "predicted_bytes", "rss_footprint"]
    table = rows[[c for c in keep if c in rows.columns]].copy()
    table["error_bytes"] = table["predicted_bytes"] - table["rss_footprint"]
    table["ratio"] = table["rss_footprint"] / table["predicted_bytes"]
    return table.reset_index(drop=True)


# --- components ---------------------------------------------------------------

def find_memsweep(memsweep=None):
    """The memsweep binary to run, or None."""
    for candidate in (memsweep, os.environ.get("MEMSWEEP"), os.environ.get("MEMSWEEP_EXECUTABLE")):
        if candidate:
            return os.fspath(candidate)
    return shutil.which("memsweep")


# "trial 540c10fe86d3 (sweep.toml:3 trial[0]): ...": a part's row may start with "trial " too ("trial process").
TRIAL_HEADING = re.compile(r"trial ([0-9a-f]{12}) \(")


def parse_estimate_output(text):
    """`memsweep estimate`'s tables: {trial_id: [{"part", "size", "bytes", "where"}]}.

    Each trial's block is a "trial ID (...)" line, an optional Q&A line, a
    header "part  size  bytes  where ..." whose words start the columns, then
    one row per part until a blank line. Parts contain single spaces
    ("optimizer state"), so the columns are cut at the header's positions.
    """
    blocks = {}
    trial = None
    starts = None
    for line in text.splitlines():
        heading = TRIAL_HEADING.match(line)
        if heading:
            trial = heading.group(1)
            blocks[trial] = []
            starts = None
        elif trial is not None and starts is None and line.startswith("part "):
            starts = [line.index(word) for word in ("part", "size", "bytes", "where")]
        elif trial is not None and starts is not None and line.strip():
            cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line)])]
            try:
                value = int(cells[2])
            except ValueError:
                continue
            blocks[trial].append({"part": cells[0], "size": cells[1], "bytes": value, "where": cells[3]})
        elif not line.strip():
            trial, starts = None, None
    return blocks


# `memsweep estimate`'s option for each of a run's limits on examples (old_schemas.RUN_LIMITS).
ESTIMATE_OPTIONS = {"max_train_examples": "--train-examples", "max_test_examples": "--test-examples"}
LIMIT_COLUMNS = [f"run_{name}" for name in RUN_LIMITS]
# The run's threads (old_schemas.RUN_THREADS): each run's estimate is asked with its own.
THREADS_COLUMN = "run_threads"


def _split_options(limits):
    """`memsweep estimate` options for the split sizes a run was limited to: {name of RUN_LIMITS: N, 0 for all}."""
    options = []
    for name, estimate_option in ESTIMATE_OPTIONS.items():
        value = int(limits.get(name) or 0)
        if value:
            options += [estimate_option, str(value)]
    return options


def _run_estimate(binary, sweep_path, arguments, threads):
    # oneDNN sizes its scratchpad for the threads it may use: estimate with the run's count when it was given.
    env = dict(os.environ, OMP_NUM_THREADS=str(threads)) if threads else None
    done = subprocess.run([binary, "estimate", sweep_path] + arguments, capture_output=True, text=True,
                          timeout=ESTIMATE_TIMEOUT_S, env=env)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RuntimeError(last)
    return parse_estimate_output(done.stdout)


COMPONENT_COLUMNS = ["file", "dataset", "trial_id", "attempt", "config", "part", "bytes", "where", "rss_footprint",
                     "predicted_bytes", "share_of_footprint"]


# The part that is the estimate's sum, and the one outside the footprint, as `memsweep estimate` prints them.
TOTAL_PART = "total"
RESIDENT_DATASET_PART = "resident dataset"


def _component_row(path, trial, part, bytes_, where):
    return {"file": path, "dataset": trial["dataset"], "trial_id": trial["trial_id"], "attempt": trial["attempt"],
            "config": trial["config"], "part": part, "bytes": bytes_, "where": where,
            "rss_footprint": trial["rss_footprint"], "predicted_bytes": trial["predicted_bytes"],
            "share_of_footprint": bytes_ / trial["rss_footprint"] if trial["rss_footprint"] else math.nan}


def _recorded_components(path, trials, labels):
    """Rows of the parts the run recorded (schema 10), in the file's column order, then "total" (the
    predicted_bytes they add up to) and the resident dataset; [] for a trial that recorded none."""
    rows = []
    footprint_parts = [c for c in labels if labels[c] != RESIDENT_DATASET_PART]
    dataset_parts = [c for c in labels if labels[c] == RESIDENT_DATASET_PART]
    for trial in trials.to_dict("records"):
        parts = [(labels[c], trial.get(c)) for c in footprint_parts]
        parts = [(name, value) for name, value in parts if value is not None and not pd.isna(value)]
        if not parts:
            continue
        parts.append((TOTAL_PART, trial["predicted_bytes"]))
        parts += [(labels[c], trial.get(c)) for c in dataset_parts
                  if trial.get(c) is not None and not pd.isna(trial.get(c))]
        rows += [_component_row(path, trial, name, int(value), "recorded by the run") for name, value in parts]
    return rows


def estimate_components(results, trial_ids=None, memsweep=None):
    """Long table: one row per (ok trial, part of its estimate), with the trial's measured footprint.

    `share_of_footprint` = the part's bytes / the footprint. The parts include
    "total" (the estimate's sum: predicted_bytes) and "resident dataset"
    (outside the footprint), as `memsweep estimate` prints them. A file of
    schema 10 gives each trial's parts as its run recorded them (`where`:
    "recorded by the run"); an older file's come from `memsweep estimate`
    today, a repeat matched to the estimate of its configuration (the
    command prints each shape once).
    """
    notes = []
    trials = measured(results)
    if trial_ids is not None:
        trials = trials[trials["trial_id"].isin(list(trial_ids))]
    rows = []
    files = results.files
    older = []
    for path, mine in trials.groupby("file", sort=False):
        labels = files[files["path"] == path].iloc[0].get("estimate_parts") or {}
        if labels:
            recorded = _recorded_components(path, mine, labels)
            missing = mine["trial_id"].nunique() - len({r["trial_id"] for r in recorded})
            if missing:
                notes.append(f"{path}: {missing} trial(s) recorded no estimate parts")
            rows += recorded
        else:
            older.append((path, mine))
    binary = find_memsweep(memsweep) if older else None
    if older and binary is None:
        notes.append("components of files before schema 10 left out: no memsweep binary ($MEMSWEEP, "
                     "$MEMSWEEP_EXECUTABLE, or memsweep on PATH)")
    elif older:
        for path, mine in older:
            attrs = files[files["path"] == path].iloc[0]
            try:
                estimates = _estimates_for_file(binary, attrs, mine, trial_ids)
            except (OSError, RuntimeError, subprocess.TimeoutExpired) as error:
                notes.append(f"{path}: components left out: memsweep estimate failed: {error}")
                continue
            missing = 0
            # Each estimate holds for the trials of runs with its limits only: a run resumed with
            # --allow-changed-options measured other trials, or repeats, on other split sizes.
            for limited, blocks in estimates:
                by_config = {}
                for trial_id, parts in blocks.items():
                    config = limited.loc[limited["trial_id"] == trial_id, "config"]
                    if len(config):
                        by_config.setdefault(config.iloc[0], parts)
                for _, trial in limited.iterrows():
                    parts = blocks.get(trial["trial_id"]) or by_config.get(trial["config"])
                    if parts is None:
                        missing += 1
                        continue
                    rows += [_component_row(path, trial, part["part"], part["bytes"], part["where"])
                             for part in parts]
            if missing:
                notes.append(f"{path}: memsweep estimate printed nothing for {missing} trial(s)")
            differ = sum(1 for r in rows if r["file"] == path and r["part"] == TOTAL_PART
                         and r["bytes"] != r["predicted_bytes"])
            if differ:
                notes.append(f"{path}: for {differ} trial(s) memsweep estimate's total is not the predicted_bytes "
                             f"the run recorded (oneDNN's scratchpad depends on the threads, and the split sizes "
                             f"on the data the run loaded): the parts are today's estimate")
    table = pd.DataFrame(rows, columns=COMPONENT_COLUMNS)
    table.attrs["notes"] = notes
    return table


def _estimates_for_file(binary, attrs, trials, trial_ids):
    """[(trials, {trial_id: parts})]: one estimate per distinct limits and threads of the trials' runs
    (old_schemas.run_limits)."""
    text = attrs.get("sweep_text") or ""
    if not text:
        raise RuntimeError("the file keeps no sweep_text")
    # A frame built without /runs has no limits (its runs trained on whole splits), and its threads are the first
    # command line's, all there is to read.
    first_threads = int(option_value(attrs.get("command_line", ""), "--threads") or 0)
    trials = trials.assign(**{c: trials[c] if c in trials.columns else 0 for c in LIMIT_COLUMNS})
    if THREADS_COLUMN not in trials.columns:
        trials = trials.assign(**{THREADS_COLUMN: first_threads})
    estimates = []
    with tempfile.TemporaryDirectory(prefix="memsweep-analysis-") as scratch:
        name = os.path.basename(attrs.get("sweep_file") or "") or "sweep.toml"
        sweep_path = os.path.join(scratch, name)
        with open(sweep_path, "w", encoding="utf-8") as out:
            out.write(text)
        for values, limited in trials.groupby(LIMIT_COLUMNS + [THREADS_COLUMN], sort=False):
            options = _split_options(dict(zip(RUN_LIMITS, values)))
            threads = int(values[-1])
            wanted = sorted(set(limited["trial_id"]))
            if trial_ids is not None and len(wanted) <= PER_TRIAL_CALLS:
                blocks = {}
                for trial_id in wanted:
                    blocks.update(_run_estimate(binary, sweep_path, ["--trial", trial_id] + options, threads))
            else:
                blocks = _run_estimate(binary, sweep_path, options, threads)
            estimates.append((limited, blocks))
    return estimates


# --- calibration ----------------------------------------------------------------

FIT_COLUMNS = ["dataset", "host", "a_bytes", "b", "n", "r2", "note"]


def calibrate(trials):
    """Per (dataset, host): footprint = a + b * predicted by least squares over the ok trials.

    Columns: dataset, host, a_bytes, b, n, r2, note. Fewer than two points or
    one predicted value cannot give a line: a and b are NaN and `note` says
    why. r2 is NaN when the footprint does not vary.
    """
    rows = []
    rows_measured = measured(trials)
    # datasets alphabetically (the file calibration.json has always been in), not in their categorical plan order
    keys = [rows_measured["dataset"].astype(str), rows_measured["host"]]
    for (dataset, host), group in rows_measured.groupby(keys, sort=True):
        x = group["predicted_bytes"].to_numpy(float)
        y = group["rss_footprint"].to_numpy(float)
        row = {"dataset": dataset, "host": host, "a_bytes": math.nan, "b": math.nan, "n": len(x), "r2": math.nan,
               "note": ""}
        if len(x) < 2:
            rows.append(dict(row, note="one trial: no line through one point"))
            continue
        if np.all(x == x[0]):
            rows.append(dict(row, note="every trial has the same estimate: no slope"))
            continue
        b, a = np.polyfit(x, y, 1)
        residual = y - (a + b * x)
        tss = float(((y - y.mean()) ** 2).sum())
        r2 = 1.0 - float(residual @ residual) / tss if tss > 0 else math.nan
        rows.append(dict(row, a_bytes=float(a), b=float(b), r2=r2))
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def save_calibration(fits, path):
    """Write the usable fits (a and b known) as memsweep-calibration JSON; return how many were written."""
    usable = []
    for fit in pd.DataFrame(fits).to_dict("records"):
        if not (np.isfinite(fit.get("a_bytes", math.nan)) and np.isfinite(fit.get("b", math.nan))):
            continue
        r2 = fit.get("r2", math.nan)
        usable.append({"dataset": str(fit["dataset"]), "host": str(fit["host"]), "a_bytes": float(fit["a_bytes"]),
                       "b": float(fit["b"]), "n": int(fit["n"]), "r2": float(r2) if np.isfinite(r2) else None})
    document = {"format": CALIBRATION_FORMAT, "version": CALIBRATION_VERSION, "fits": usable}
    with open(path, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=2)
        out.write("\n")
    return len(usable)


def load_calibration(path):
    """The fits of a calibration file as a DataFrame (dataset, host, a_bytes, b, n, r2)."""
    with open(path, encoding="utf-8") as source:
        document = json.load(source)
    if document.get("format") != CALIBRATION_FORMAT or document.get("version") != CALIBRATION_VERSION:
        raise ValueError(f"{os.fspath(path)}: not a {CALIBRATION_FORMAT} file of version {CALIBRATION_VERSION}")
    return pd.DataFrame(document["fits"], columns=FIT_COLUMNS[:-1])
