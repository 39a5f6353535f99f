"""A program's own metrics: /metrics (schema 11), what its [programs.NAME] `metrics` patterns matched in its
standard output (docs/sweep-file.md, "Metrics").

`load_metrics(results)` gives the table of every file: one row per trial attempt, metric and epoch, the last value
matched in that epoch (epoch 0: before any epoch). `final_metrics(metrics)` gives one row per trial attempt, a column
per metric: its last value, the trial's final figure. A file of an older schema has no /metrics: no rows.
"""

import pandas as pd

from .load import _concat, _open, _reading, _table_frame

METRICS_TABLE = "metrics"
FIRST_SCHEMA_WITH_METRICS = 11
METRIC_COLUMNS = ("trial_id", "attempt", "epoch", "name", "value", "seconds", "matches")


def load_metrics(results):
    """/metrics of every file of `results` (a load() Results), concatenated, with `file` and `sweep`; empty, with
    those columns, when no file has a metric row."""
    frames = []
    for path in results.paths:
        with _reading(path, f"table /{METRICS_TABLE}"), _open(path) as file:
            if METRICS_TABLE in file:
                frames.append(_table_frame(path, results._sweeps[path], file[METRICS_TABLE]))
    if not frames:
        return pd.DataFrame(columns=["file", "sweep", *METRIC_COLUMNS])
    return _concat(frames)


def final_metrics(metrics):
    """One row per file, trial_id and attempt: `epoch` (the last one with a value, 0 when the program gave none)
    and one column per metric, its last value (an attempt's last row of it: rows come in the order matched)."""
    keys = ["file", "trial_id", "attempt"]
    if metrics.empty:
        return pd.DataFrame(columns=[*keys, "epoch"])
    last = metrics.groupby([*keys, "name"], sort=False).tail(1)
    wide = last.pivot(index=keys, columns="name", values="value")  # one row each: the tail above
    wide.columns.name = None
    epochs = metrics.groupby(keys)["epoch"].max().rename("epoch")
    return wide.join(epochs).reset_index()[[*keys, "epoch", *sorted(wide.columns)]]


def _value_range(values):
    low, high = values.min(), values.max()
    return f"{low:.6g}" if low == high else f"{low:.6g} to {high:.6g}"


def report_metrics(doc, results):
    """The report's line on the programs' own metrics, when any trial has one: each metric's final values over the
    trial attempts."""
    finals = final_metrics(load_metrics(results))
    names = [c for c in finals.columns if c not in ("file", "trial_id", "attempt", "epoch")]
    if not names:
        return
    parts = [f"`{name}` {_value_range(finals[name].dropna())} ({finals[name].notna().sum()} attempts)"
             for name in names]
    doc.paragraph("The programs' own metrics, their final values (memsweep export --table metrics has them per "
                  "epoch): " + "; ".join(parts) + ".")
