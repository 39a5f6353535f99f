"""The source paper's table layout, per dataset, beside memsweep's per-process figures.

`paper_table(results)` has one row per configuration (a trial without its
repeat): the paper's columns (trial, learning rate, epochs, batch size,
hidden widths "a-b-c", average memory used in MB) and, beside them, RSS mean,
RSS peak, footprint (peak - baseline) and the estimate, each as the mean,
the sample standard deviation (ddof 1; NaN for one repeat) over the repeats.

The paper's "memory used" is formula 2 (the mean over a trial's samples) of
formula 1 (total - (free + buffers + cached)): the trial's `sys_used_mean`,
which the sampler computes exactly so. MB is 2^20 bytes, as the paper's
figures are psutil's bytes / 2^20. Only rows with status `ok` count for the
figures; `n_ok` says how many repeats that is, `n` how many have a final
status at all (a failed or killed repeat is counted, not averaged).

After those columns (which stay first and as they were): `trial_numbers` and
`trial_ids` (the configuration's trials: their numbers, load's
`trial_number`, the one `memsweep summary` shows, and ids), the categorical
fields `model`, `optimizer`, `channels` ("16-32", "" for none) and `shape`
(a synthetic dataset's, "" for a real one), each categorical in plan order;
then `trainer` and one column per free parameter (load.param_columns): a
configuration's trainer and parameters are part of it, so the same
hyperparameters trained by two trainers are two rows.
"""

import os
import re

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .load import BUILTIN_TRAINER, FINAL_STATUSES, param_column_names, param_columns  # noqa: E402

MIB = float(2 ** 20)
# this table's column: the trials' categorical column it is the configuration's value of
CATEGORICAL_EXTRA = {"model": "model", "optimizer": "optimizer", "channels": "channels_text", "shape": "shape"}

# (trials column, table column prefix): the figures averaged over repeats.
FIGURES = [
    ("sys_used_mean", "memory_used_mb"),
    ("rss_mean", "rss_mean_mb"),
    ("rss_peak", "rss_peak_mb"),
    ("rss_footprint", "rss_footprint_mb"),
    ("predicted_bytes", "predicted_mb"),
]


def trials_of(source):
    """The trials DataFrame of a Results, or the DataFrame itself."""
    return source.trials if hasattr(source, "trials") else source


def hidden_text(hidden):
    return "-".join(str(int(w)) for w in hidden)


def ok_rows(trials):
    """Final rows with status ok: the rows whose figures are a trial's result."""
    return trials[trials["status"] == "ok"]


def paper_table(results, dataset=None, paper_csv=None):
    """One row per (dataset, configuration), all datasets in one frame (or only `dataset`).

    `trial` numbers configurations per dataset from 1, in the plan's order
    (their smallest trial number; files without one: the order their first
    row appears in). `paper_csv`: a path, a list of paths, or
    {dataset: path} of the paper's published tables (trial, learning_rate,
    epochs, batch_size, hidden, memory_used_mb); matched rows get
    `paper_trial` and `paper_memory_used_mb`, and the table is in the paper's
    order; the paper's rows that no result matches are kept with n = 0.
    """
    trials = trials_of(results)
    if dataset is not None:
        trials = trials[trials["dataset"] == dataset]
    final = trials[trials["status"].isin(FINAL_STATUSES)]
    columns = ["dataset", "trial", "learning_rate", "epochs", "batch_size", "hidden", "n", "n_ok"]
    for _, name in FIGURES:
        columns += [name, f"{name}_std"]
    columns += ["config"]
    # key -> (the trials' column, this table's: a key named like one of the columns above gets param_<key>)
    in_trials = param_columns(trials)
    in_table = param_column_names(list(in_trials), columns + ["trainer", "paper_trial", "paper_memory_used_mb"])
    params = {key: (in_trials[key], in_table[key]) for key in in_trials}
    columns += ["trial_numbers", "trial_ids"] + list(CATEGORICAL_EXTRA) + ["trainer"] + [mine for _, mine in
                                                                                    params.values()]
    rows = []
    for (name, config), group in final.groupby(["dataset", "config"], sort=False):
        ok = ok_rows(group)
        first = group.iloc[0]
        row = {"dataset": name, "learning_rate": float(first["learning_rate"]), "epochs": int(first["epochs"]),
               "batch_size": int(first["batch_size"]), "hidden": hidden_text(first["hidden"]), "n": len(group),
               "n_ok": len(ok), "config": config, "_order": group.index.min(),
               "trainer": str(first["trainer"]) if "trainer" in group.columns else BUILTIN_TRAINER,
               "trial_ids": tuple(dict.fromkeys(group["trial_id"]))}
        numbers = group.drop_duplicates("trial_id")["trial_number"] if "trial_number" in group.columns else []
        row["trial_numbers"] = tuple(sorted(int(v) for v in numbers))
        if row["trial_numbers"]:  # the plan's order, as summary lists the trials
            row["_order"] = row["trial_numbers"][0]
        for column, theirs in CATEGORICAL_EXTRA.items():
            row[column] = str(first[theirs]) if theirs in group.columns and not pd.isna(first[theirs]) else ""
        for theirs, mine in params.values():
            row[mine] = first[theirs]
        for column, prefix in FIGURES:
            values = ok[column].dropna() / MIB
            row[prefix] = values.mean() if len(values) else np.nan
            row[f"{prefix}_std"] = values.std(ddof=1) if len(values) > 1 else np.nan
        rows.append(row)
    table = pd.DataFrame(rows, columns=columns + ["_order"])
    table = table.sort_values(["dataset", "_order"], kind="stable")
    table["trial"] = table.groupby("dataset").cumcount() + 1
    table = table.drop(columns="_order").reset_index(drop=True)
    for column in CATEGORICAL_EXTRA:  # categorical in the trials' plan order, as load() gives them
        categories = [c for c in _categories(trials, CATEGORICAL_EXTRA[column]) if c in set(table[column])]
        categories += [c for c in dict.fromkeys(table[column]) if c not in categories]
        table[column] = pd.Categorical(table[column], categories=categories)
    if paper_csv is not None:
        table = _beside_paper(table, read_paper_csvs(paper_csv), dataset)
    table.attrs["param_columns"] = {key: mine for key, (_, mine) in params.items()}
    return table


def _categories(trials, column):
    if column in trials.columns and isinstance(trials[column].dtype, pd.CategoricalDtype):
        return [str(c) for c in trials[column].cat.categories]
    return []


def extra_columns(table):
    """The columns after the paper's that a reader needs: model and optimizer always, channels and the synthetic
    shape when some row has one, `trainer` when some row is not memsweep's own, and the free parameters' columns
    that have a value in some row."""
    extra = [c for c in ("model", "optimizer") if c in table.columns]
    extra += [c for c in ("channels", "shape") if c in table.columns and (table[c].astype(str) != "").any()]
    if "trainer" in table.columns and set(table["trainer"].dropna().astype(str)) - {BUILTIN_TRAINER}:
        extra.append("trainer")
    for column in table.attrs.get("param_columns", {}).values():
        if column in table.columns and table[column].notna().any():
            extra.append(column)
    return extra


def paper_dataset(path):
    """The dataset a paper CSV holds, from its name (mnist_table1.csv, fashion_mnist_..., cifar10_...)."""
    name = re.sub(r"[^a-z0-9]", "", os.path.basename(os.fspath(path)).lower())
    if "fashion" in name:
        return "fashion-mnist"
    if "cifar" in name:
        return "cifar-10"
    if "mnist" in name:
        return "mnist"
    return None


def read_paper_csv(path, dataset=None):
    """A paper table (trial, learning_rate, epochs, batch_size, hidden, memory_used_mb) with a dataset column."""
    table = pd.read_csv(path, dtype={"hidden": str})
    expected = {"trial", "learning_rate", "epochs", "batch_size", "hidden", "memory_used_mb"}
    missing = expected - set(table.columns)
    if missing:
        raise ValueError(f"{os.fspath(path)}: not a paper table: no column(s) {', '.join(sorted(missing))} "
                         f"(expected {', '.join(sorted(expected))})")
    table["dataset"] = dataset or paper_dataset(path)
    return table


def read_paper_csvs(paper_csv):
    if isinstance(paper_csv, dict):
        frames = [read_paper_csv(path, dataset) for dataset, path in paper_csv.items()]
    elif isinstance(paper_csv, (list, tuple)):
        frames = [read_paper_csv(path) for path in paper_csv]
    else:
        frames = [read_paper_csv(paper_csv)]
    return pd.concat(frames, ignore_index=True)


def _same_trial(table_row, paper_row):
    return (paper_row["dataset"] in (None, table_row["dataset"])
            and np.isclose(float(paper_row["learning_rate"]), table_row["learning_rate"], rtol=1e-9, atol=0)
            and int(paper_row["epochs"]) == table_row["epochs"]
            and int(paper_row["batch_size"]) == table_row["batch_size"]
            and str(paper_row["hidden"]) == table_row["hidden"])


def _beside_paper(table, paper, dataset):
    if dataset is not None:
        paper = paper[paper["dataset"].isin([dataset, None])]
    table = table.copy()
    table["paper_trial"] = np.nan
    table["paper_memory_used_mb"] = np.nan
    unmatched = []
    for _, reference in paper.iterrows():
        hits = [i for i, row in table.iterrows() if _same_trial(row, reference) and np.isnan(row["paper_trial"])]
        if hits:
            table.loc[hits[0], "paper_trial"] = int(reference["trial"])
            table.loc[hits[0], "paper_memory_used_mb"] = float(reference["memory_used_mb"])
        else:
            unmatched.append({"dataset": reference["dataset"] or "?",
                              "learning_rate": float(reference["learning_rate"]),
                              "epochs": int(reference["epochs"]), "batch_size": int(reference["batch_size"]),
                              "hidden": str(reference["hidden"]), "n": 0, "n_ok": 0,
                              "paper_trial": int(reference["trial"]),
                              "paper_memory_used_mb": float(reference["memory_used_mb"])})
    if unmatched:
        table = pd.concat([table, pd.DataFrame(unmatched)], ignore_index=True)
    # the paper's order where there is one, then the rest in the files' order
    table["_paper"] = table["paper_trial"].fillna(np.inf)
    table = table.sort_values(["dataset", "_paper", "trial"], kind="stable").drop(columns="_paper")
    columns = [c for c in table.columns if c not in ("paper_trial", "paper_memory_used_mb")]
    columns.insert(columns.index("trial") + 1, "paper_trial")
    columns.insert(columns.index("memory_used_mb"), "paper_memory_used_mb")
    return table[columns].reset_index(drop=True)
