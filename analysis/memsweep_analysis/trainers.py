"""The same hyperparameters trained by two trainers: memsweep's own and a program (PyTorch, ...), side by side.

`paired_configurations(trials)` pairs the ok trials of two trainers whose hyperparameters are identical:
every field of the trial's definition but its trainer, seed and repeat, and the free parameters (`params`)
too. Repeats are averaged (over the ok ones with a measured peak) to one point per trainer and configuration,
and each pair gets the difference other − reference of the peak RSS and of the footprint. The reference is
memsweep's own trainer when the trials have it, else the trainer first by name; every other trainer is
compared with it.

`difference_slopes(pairs)` says whether a difference is about constant or grows with batch size: the least-
squares slope of the difference against batch size within configurations (a configuration without its batch
size is a group of its own, so that a difference that depends on, say, the hidden widths does not pass for
one that depends on batch size), per trainer pair, dataset and figure, with its 95% interval (Student's t)
and the spread.

Figures are bytes here (a slope is bytes per example); the report shows MiB.

Note what each figure is: a program's `rss_peak` is the sampled peak of its whole process tree's summed RSS,
and its footprint is that whole peak (a program has no ready point: `rss_baseline` is 0), while memsweep's
footprint is its peak above the baseline of a process that has loaded its libraries and the dataset. The
peak difference compares the two processes' memory; the footprint difference also counts what memsweep's
baseline holds.
"""

import json
import re

from ._deps import require

require("numpy", "pandas", "scipy")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as sps  # noqa: E402

from .derived import (canonical_params, param_column_names, param_columns, parse_definition,  # noqa: E402
                      parse_params, trainer_name)
from .old_schemas import BUILTIN_TRAINER  # noqa: E402

MIB = float(2 ** 20)
# (trials column, name in the pairs table): the figures compared.
FIGURES = (("rss_peak", "peak"), ("rss_footprint", "footprint"))
# Definition fields that are not hyperparameters (or are the trainer's own, when the definition holds them).
NOT_HYPERPARAMETERS = ("seed", "repeat", "trainer", "program", "command", "env", "workdir", "params")
# What identifies a configuration to a reader, beside its free parameters.
DESCRIPTION = ("dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size", "hidden", "channels",
               "memory_plan")
NOISE = "about constant"


def trainers(trials):
    """The trainers of some trials, by name (memsweep's for a frame without the column)."""
    if "trainer" not in trials.columns:
        return [BUILTIN_TRAINER] if len(trials) else []
    return sorted({trainer_name(t) for t in trials["trainer"]})


def reference_trainer(names):
    """memsweep's own trainer when present, else the first by name."""
    names = sorted(names)
    return BUILTIN_TRAINER if BUILTIN_TRAINER in names else (names[0] if names else None)


def hyperparameter_key(row, ignore_params=()):
    """Every field that defines the trial but its trainer, seed and repeat, plus its params as sorted JSON
    (without the keys in `ignore_params`; True: without any): equal for the same training whoever trained it."""
    definition = row.get("definition") or ""
    if definition:
        fields = parse_definition(definition)
        # parse_definition keeps the last of a repeated key; the definition's order is kept
        key = ";".join(f"{name}={value}" for name, value in fields.items() if name not in NOT_HYPERPARAMETERS)
    else:
        key = ";".join(f"{name}={_text(row.get(name))}" for name in DESCRIPTION)
    if ignore_params is True:
        return key
    params = canonical_params(row.get("params"))
    if ignore_params:
        try:
            ignored = set(ignore_params)
            kept = {k: v for k, v in parse_params(params).items() if k not in ignored}
            params = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        except ValueError:
            pass
    return f"{key};params={params}"


_BATCH = re.compile(r"(^|;)batch_size=[^;]*")


def without_batch_size(key):
    """A hyperparameter key with its batch size left out: the configurations that differ in it alone."""
    return _BATCH.sub(r"\1batch_size=*", key)


def _text(value):
    if isinstance(value, (list, tuple)):
        return "-".join(str(v) for v in value)
    return str(value)


def _ok_rows(trials):
    rows = trials[trials["status"] == "ok"]
    return rows[rows["rss_peak"].notna() & (rows["rss_peak"] >= 0)]


def _per_configuration(rows, params):
    """One row per (trainer, hyperparameter key): the description, then each figure's mean over repeats."""
    out = []
    for (trainer, key), group in rows.groupby(["_trainer", "_key"], sort=True):
        first = group.iloc[0]
        row = {"trainer": trainer, "key": key, "group": without_batch_size(key)}
        for column in DESCRIPTION:
            if column in group.columns:
                value = first[column]
                row[column] = _text(value) if column in ("hidden", "channels") else value
        for name, column in params.items():
            row[name] = first[column]
        row["n"] = len(group)
        for column, name in FIGURES:
            values = group[column].where(group[column] >= 0).dropna()
            row[name] = values.mean() if len(values) else np.nan
        out.append(row)
    return pd.DataFrame(out)


def paired_configurations(trials, reference=None, ignore_params=()):
    """One row per configuration that the reference trainer and another trainer both have an ok trial of.

    `ignore_params`: params keys that do not make trials different (a program's `device`, say, that
    memsweep's trials lack), or True for all of them; the parameter columns show the trainer's side.

    Columns: the configuration (dataset, model, optimizer, learning_rate, epochs, batch_size, hidden as
    "a-b", channels, one column per free parameter as load names it), `trainer` and `reference`,
    `n_reference` and `n_trainer` (ok repeats averaged), then per figure (peak, footprint) `<figure>_reference`,
    `<figure>_trainer` and `<figure>_difference` = trainer − reference, in bytes; `key` (the hyperparameters)
    and `group` (the same without batch size). Sorted by trainer, dataset, group, batch size.

    `attrs["unpaired"]`: {trainer: configurations with an ok trial of that trainer and none of the reference
    (for the reference: none of any other trainer)}; `attrs["reference"]`: the reference trainer;
    `attrs["param_columns"]`: {params key: column of this table}.
    """
    names = trainers(trials)
    reference = reference or reference_trainer(names)
    figure_columns = [f"{name}_{side}" for _, name in FIGURES for side in ("reference", "trainer", "difference")]
    fixed = ["trainer", "reference", "n_reference", "n_trainer"] + figure_columns + ["key", "group"]
    # key -> (the trials' column, this table's: param_<key> when the key is named like a column of this table)
    in_trials = param_columns(trials)
    names_in_table = param_column_names(list(in_trials), list(DESCRIPTION) + fixed + ["n"] +
                                        [name for _, name in FIGURES])
    params = {names_in_table[key]: column for key, column in in_trials.items()}
    columns = list(DESCRIPTION) + list(params) + fixed
    rows = _ok_rows(trials)
    empty = pd.DataFrame(columns=columns)
    if rows.empty or reference is None:
        return _with_attrs(empty, {}, reference, names_in_table)
    records = rows.to_dict("records")
    rows = rows.assign(_trainer=[trainer_name(r.get("trainer")) for r in records],
                       _key=[hyperparameter_key(r, ignore_params) for r in records])
    configurations = _per_configuration(rows, params)
    mine = configurations[configurations["trainer"] == reference]
    frames = []
    unpaired = {}
    for other in names:
        if other == reference:
            continue
        theirs = configurations[configurations["trainer"] == other]
        merged = theirs.merge(mine[["key", "n"] + [name for _, name in FIGURES]], on="key",
                              suffixes=("_trainer", "_reference"))
        unpaired[other] = int((~theirs["key"].isin(mine["key"])).sum())
        if merged.empty:
            continue
        merged["reference"] = reference
        for _, name in FIGURES:
            merged[f"{name}_difference"] = merged[f"{name}_trainer"] - merged[f"{name}_reference"]
        frames.append(merged)
    others = configurations[configurations["trainer"] != reference]
    unpaired[reference] = int((~mine["key"].isin(others["key"])).sum())
    if not frames:
        return _with_attrs(empty, unpaired, reference, names_in_table)
    pairs = pd.concat(frames, ignore_index=True)
    pairs = pairs.sort_values(["trainer", "dataset", "group", "batch_size"], kind="stable").reset_index(drop=True)
    return _with_attrs(pairs[[c for c in columns if c in pairs.columns]], unpaired, reference, names_in_table)


def _with_attrs(frame, unpaired, reference, params):
    frame.attrs = {"unpaired": unpaired, "reference": reference, "param_columns": params}
    return frame


def within_slope(x, y, groups):
    """Least-squares slope of y on x with one intercept per group (x and y centred within each group).

    Returns {n, groups, slope, se, df, ci_low, ci_high (95%, Student's t; NaN when df < 1), residual_sd,
    why (why there is no slope or interval, else "")}.
    """
    frame = pd.DataFrame({"x": np.asarray(x, float), "y": np.asarray(y, float), "g": list(groups)}).dropna()
    n, count = len(frame), frame["g"].nunique()
    result = {"n": n, "groups": count, "slope": np.nan, "se": np.nan, "df": n - count - 1, "ci_low": np.nan,
              "ci_high": np.nan, "residual_sd": np.nan, "why": ""}
    if n == 0:
        return dict(result, df=0, why="no paired configuration")
    dx = frame["x"] - frame.groupby("g")["x"].transform("mean")
    dy = frame["y"] - frame.groupby("g")["y"].transform("mean")
    sxx = float((dx * dx).sum())
    if not sxx > 0:
        return dict(result, why="no configuration was trained at two batch sizes by both")
    slope = float((dx * dy).sum()) / sxx
    residual = dy - slope * dx
    df = n - count - 1
    result.update(slope=slope)
    if df < 1:
        return dict(result, why=f"{n} points in {count} configuration(s) leave no degree of freedom for an interval")
    variance = float((residual * residual).sum()) / df
    se = np.sqrt(variance / sxx)
    half = sps.t.ppf(0.975, df) * se
    return dict(result, se=se, ci_low=slope - half, ci_high=slope + half, residual_sd=np.sqrt(variance))


def difference_slopes(pairs):
    """Per (trainer, reference, dataset, figure): does trainer − reference change with batch size?

    Columns: trainer, reference, dataset, figure (peak, footprint), n (paired configurations), groups
    (configurations without batch size), batch_min, batch_max, mean_difference, sd_difference (ddof 1),
    min_difference, max_difference (bytes), slope, ci_low, ci_high (bytes per example), residual_sd, df,
    verdict ("about constant": the interval includes 0; "grows with batch size", "shrinks with batch size";
    "cannot tell: <why>"), sentence (the finding in words, MiB).
    """
    columns = ["trainer", "reference", "dataset", "figure", "n", "groups", "batch_min", "batch_max",
               "mean_difference", "sd_difference", "min_difference", "max_difference", "slope", "ci_low",
               "ci_high", "residual_sd", "df", "verdict", "sentence"]
    rows = []
    if pairs.empty:
        return pd.DataFrame(rows, columns=columns)
    for (trainer, reference, dataset), mine in pairs.groupby(["trainer", "reference", "dataset"], sort=True):
        for _, figure in FIGURES:
            measured = mine[mine[f"{figure}_difference"].notna()]
            y = measured[f"{figure}_difference"].astype(float)
            fit = within_slope(measured["batch_size"], y, measured["group"])
            row = {"trainer": trainer, "reference": reference, "dataset": dataset, "figure": figure,
                   "n": fit["n"], "groups": fit["groups"],
                   "batch_min": int(measured["batch_size"].min()) if len(measured) else np.nan,
                   "batch_max": int(measured["batch_size"].max()) if len(measured) else np.nan,
                   "mean_difference": y.mean() if len(y) else np.nan,
                   "sd_difference": y.std(ddof=1) if len(y) > 1 else np.nan,
                   "min_difference": y.min() if len(y) else np.nan, "max_difference": y.max() if len(y) else np.nan,
                   "slope": fit["slope"], "ci_low": fit["ci_low"], "ci_high": fit["ci_high"],
                   "residual_sd": fit["residual_sd"], "df": fit["df"]}
            row["verdict"] = _verdict(fit, y)
            row["sentence"] = sentence(row)
            rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def _verdict(fit, y):
    if fit["why"] and np.isnan(fit["ci_low"]):
        return f"cannot tell: {fit['why']}"
    # An exact fit leaves a rounding-sized slope and interval: read anything below that as zero.
    tolerance = 1e-9 * max(float(np.abs(y).max()) if len(y) else 0.0, 1.0)
    if fit["ci_low"] <= tolerance and fit["ci_high"] >= -tolerance:
        return NOISE
    return "grows with batch size" if fit["slope"] > 0 else "shrinks with batch size"


def _mib(value, digits=1):
    return f"{value / MIB:+.{digits}f}"


def _per_example(value):
    """A slope in MiB per example, with three significant digits (a slope is often a fraction of a MiB)."""
    mib = value / MIB
    if mib == 0 or abs(mib) < 5e-7:
        return "+0"
    return f"{mib:+.3g}"


def sentence(row):
    """One plain sentence: the difference, whether it is about constant or grows with batch size, by how much."""
    what = f"{row['trainer']} − {row['reference']} {'peak RSS' if row['figure'] == 'peak' else 'footprint'}"
    where = f"{row['dataset']}, {row['n']} paired configuration{'s' if row['n'] != 1 else ''}"
    if row["n"] == 0:
        return f"{what} ({row['dataset']}): no configuration with a measured value on both sides."
    batches = f"batch sizes {row['batch_min']}–{row['batch_max']}"
    verdict = row["verdict"]
    if verdict.startswith("cannot tell: "):
        spread = (f"{_mib(row['mean_difference'])} MiB" if row["n"] == 1 else
                  f"{_mib(row['mean_difference'])} MiB on average, from {_mib(row['min_difference'])} to "
                  f"{_mib(row['max_difference'])} MiB")
        why = verdict[len("cannot tell: "):]
        return f"{what} ({where}): {spread}; whether it changes with batch size cannot be told: {why}."
    interval = f"[{_per_example(row['ci_low'])}, {_per_example(row['ci_high'])}]"
    if verdict == NOISE:
        return (f"{what} ({where}): about constant over {batches}, {_mib(row['mean_difference'])} MiB on average "
                f"(slope {_per_example(row['slope'])} MiB per example, 95% CI {interval}; spread SD "
                f"{_sd(row['sd_difference'])} MiB).")
    change = row["slope"] * (row["batch_max"] - row["batch_min"])
    return (f"{what} ({where}): {verdict}, {_per_example(row['slope'])} MiB per example (95% CI {interval}), "
            f"{_mib(change)} MiB from batch {row['batch_min']} to {row['batch_max']}; "
            f"{_mib(row['mean_difference'])} MiB on average.")


def _sd(value):
    return "n/a" if pd.isna(value) else f"{value / MIB:.1f}"


def peaks_by_trainer(pairs):
    """The pairs as one row per (trainer, configuration): trainer, dataset, batch_size, key, peak (bytes), the
    reference's rows once however many trainers it is compared with."""
    if pairs.empty:
        return pd.DataFrame(columns=["trainer", "dataset", "batch_size", "key", "peak"])
    sides = [pairs.assign(peak=pairs["peak_trainer"])[["trainer", "dataset", "batch_size", "key", "peak"]],
             pairs.assign(trainer=pairs["reference"], peak=pairs["peak_reference"])[
                 ["trainer", "dataset", "batch_size", "key", "peak"]]]
    return pd.concat(sides, ignore_index=True).drop_duplicates(["trainer", "key"]).reset_index(drop=True)
