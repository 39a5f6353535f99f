"""The same trials of two results files side by side (two machines, two memsweep versions, two runs).

Trials are matched by `trial_id` first: the id is a hash of the trial's whole definition (seed and repeat
included), so equal ids trained exactly the same thing. What is left is matched by configuration and
repeat, which pairs the trials of two sweep files that differ in something outside the hyperparameters
(the seed, a synthetic dataset's noise) but not the trials themselves; `matched_by` says which rule
paired a row. Each side contributes one row per trial: its final attempt (the last attempt when none is
final), because an interrupted attempt's figures are not the trial's result.
"""

import os
from dataclasses import dataclass, field

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# (column in /trials, name in the comparison): the figures a comparison is about.
FIGURES = [
    ("rss_footprint", "footprint"),
    ("rss_peak", "peak"),
    ("sys_used_mean", "sys_used"),
    ("predicted_bytes", "predicted"),
    ("wall_seconds", "wall_s"),
]
# What identifies a compared row to a reader, beside the figures (trainer: schema 4, memsweep's for older files).
DESCRIPTION = ["dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size", "hidden", "repeat",
               "trainer"]


@dataclass
class Comparison:
    """`table`: one row per trial found in both; `only_in_a` / `only_in_b`: trial ids found in one only."""
    table: pd.DataFrame
    only_in_a: list = field(default_factory=list)
    only_in_b: list = field(default_factory=list)
    a_name: str = "A"
    b_name: str = "B"


def _trials_of(source):
    if isinstance(source, pd.DataFrame):
        return source, "trials"
    if isinstance(source, (str, os.PathLike)):
        from .load import load
        return load(source).trials, os.fspath(source)
    return source.trials, "results"


def latest_attempts(trials):
    """One row per trial id: its final attempt with the highest number, else its highest attempt."""
    final = trials["final"] if "final" in trials.columns else pd.Series(True, index=trials.index)
    ordered = trials.assign(_final=final.astype(bool)).sort_values(["trial_id", "_final", "attempt"],
                                                                    kind="stable")
    return ordered.groupby("trial_id", sort=False).tail(1).drop(columns="_final")


def _config(trials):
    if "config" in trials.columns:
        return trials["config"].astype(str)
    present = [c for c in DESCRIPTION if c in trials.columns and c != "repeat"]
    return trials[present].astype(str).agg("|".join, axis=1)


def _measured(series):
    # -1 in a results file means "could not be measured": it must not become a ratio.
    return series.where(series >= 0).astype(float)


def compare(a, b):
    """Compare two results (paths, Results, or trials DataFrames): B's figures over A's as `<figure> B/A`."""
    trials_a, a_name = _trials_of(a)
    trials_b, b_name = _trials_of(b)
    left = latest_attempts(trials_a)
    right = latest_attempts(trials_b)

    pairs = left[["trial_id"]].merge(right[["trial_id"]], on="trial_id")
    pairs = pairs.assign(id_a=pairs["trial_id"], id_b=pairs["trial_id"], matched_by="trial_id")
    rest_a = left[~left["trial_id"].isin(pairs["id_a"])]
    rest_b = right[~right["trial_id"].isin(pairs["id_b"])]
    by_config = _pair_by_config(rest_a, rest_b)
    pairs = pd.concat([pairs[["id_a", "id_b", "matched_by"]], by_config], ignore_index=True)

    a_rows = left.set_index("trial_id").loc[pairs["id_a"]].reset_index()
    b_rows = right.set_index("trial_id").loc[pairs["id_b"]].reset_index()
    table = pd.DataFrame({"trial_id": a_rows["trial_id"], "trial_id_b": b_rows["trial_id"],
                          "matched_by": pairs["matched_by"]})
    for column in DESCRIPTION:
        if column in a_rows.columns:
            values = a_rows[column]
            table[column] = (values.astype(str) if column == "trainer" else values).to_numpy()
    table["status_a"] = a_rows["status"].to_numpy()
    table["status_b"] = b_rows["status"].to_numpy()
    for column, name in FIGURES:
        value_a = _measured(a_rows[column]).to_numpy()
        value_b = _measured(b_rows[column]).to_numpy()
        table[f"{name}_a"] = value_a
        table[f"{name}_b"] = value_b
        with np.errstate(divide="ignore", invalid="ignore"):
            table[f"{name} B/A"] = np.where(value_a > 0, value_b / value_a, np.nan)
    matched_a, matched_b = set(pairs["id_a"]), set(pairs["id_b"])
    return Comparison(table=table.reset_index(drop=True),
                      only_in_a=sorted(set(left["trial_id"]) - matched_a),
                      only_in_b=sorted(set(right["trial_id"]) - matched_b),
                      a_name=a_name, b_name=b_name)


def _pair_by_config(rest_a, rest_b):
    """Pair the unmatched trials by (configuration, repeat); several of one key pair in trial-id order."""
    empty = pd.DataFrame({"id_a": [], "id_b": [], "matched_by": []})
    if rest_a.empty or rest_b.empty:
        return empty
    keys = []
    for rest in (rest_a, rest_b):
        key = pd.DataFrame({"trial_id": rest["trial_id"].to_numpy(), "config": _config(rest).to_numpy(),
                            "repeat": rest["repeat"].to_numpy() if "repeat" in rest.columns else 0})
        key = key.sort_values(["config", "repeat", "trial_id"], kind="stable")
        key["nth"] = key.groupby(["config", "repeat"]).cumcount()
        keys.append(key)
    paired = keys[0].merge(keys[1], on=["config", "repeat", "nth"], suffixes=("_a", "_b"))
    if paired.empty:
        return empty
    return pd.DataFrame({"id_a": paired["trial_id_a"], "id_b": paired["trial_id_b"], "matched_by": "config"})


def presented(comparison):
    """The comparison as a reader sees it: bytes in MiB, hidden widths as "a-b", a status column only
    where the two sides differ in one."""
    table = comparison.table
    shown = pd.DataFrame({"trial_id": table["trial_id"]})
    if (table["matched_by"] != "trial_id").any():
        shown["trial_id B"] = table["trial_id_b"]
    for column in ("dataset", "batch_size", "hidden", "repeat"):
        if column in table.columns:
            shown[column] = table[column].map(lambda v: "-".join(map(str, v)) if isinstance(v, list) else v)
    if "trainer" in table.columns and set(table["trainer"]) - {"memsweep"}:
        shown["trainer"] = table["trainer"]
    if (table["status_a"] != table["status_b"]).any() or (table["status_a"] != "ok").any():
        shown["status A"], shown["status B"] = table["status_a"], table["status_b"]
    for _, name in FIGURES:
        scale, unit = (1.0, "s") if name == "wall_s" else (2.0 ** 20, "MiB")
        label = "wall" if name == "wall_s" else name
        shown[f"{label} A {unit}"] = table[f"{name}_a"] / scale
        shown[f"{label} B {unit}"] = table[f"{name}_b"] / scale
        shown[f"{label} B/A"] = table[f"{name} B/A"]
    return shown


def _summary_lines(comparison):
    table = comparison.table
    lines = [f"A = {comparison.a_name}, B = {comparison.b_name}: {len(table)} trials in both"
             + (f" ({int((table['matched_by'] == 'config').sum())} matched by configuration and repeat, "
                "the rest by trial id)" if (table["matched_by"] == "config").any() else "")]
    ratio = table["footprint B/A"].dropna()
    if len(ratio):
        lines.append(f"footprint B/A: median {ratio.median():.3g}, range {ratio.min():.3g} to {ratio.max():.3g} "
                     f"over {len(ratio)} trials")
    for side, ids in (("A", comparison.only_in_a), ("B", comparison.only_in_b)):
        if ids:
            lines.append(f"only in {side} ({len(ids)}): {', '.join(ids)}")
    return lines


def to_text(comparison):
    from .document import cell
    shown = presented(comparison)
    body = shown.to_string(index=False, formatters={c: cell for c in shown.columns}) if len(shown) else "(none)"
    return "\n".join(_summary_lines(comparison) + ["", body])


def to_markdown(comparison):
    from .document import Document
    document = Document(f"Comparison: {comparison.a_name} and {comparison.b_name}")
    document.bullets(_summary_lines(comparison))
    document.table(presented(comparison))
    return document.to_markdown()
