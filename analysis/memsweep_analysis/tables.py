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
status at all (a failed or timed-out repeat is counted, not averaged; a
killed or interrupted attempt is not a result).

After those columns (which stay first and as they were): `trial_numbers` and
`trial_ids` (the configuration's trials: their numbers, load's
`trial_number`, the one `memsweep summary` shows, and ids), the categorical
fields `model`, `optimizer`, `channels` ("16-32", "" for none) and `shape`
(a synthetic dataset's, "" for a real one), each categorical in plan order;
then `trainer` and one column per free parameter (derived.param_columns): a
configuration's trainer and parameters are part of it, so the same
hyperparameters trained by two trainers are two rows.
"""

import os
import re

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .derived import param_column_names, param_columns  # noqa: E402
from .old_schemas import BUILTIN_TRAINER, FINAL_STATUSES, KEEP_PLAN  # noqa: E402

MIB = float(2 ** 20)
# this table's column: the trials' categorical column it is the configuration's value of
CATEGORICAL_EXTRA = {"model": "model", "optimizer": "optimizer", "channels": "channels_text", "shape": "shape",
                     "memory_plan": "memory_plan"}

# (trials column, table column prefix): the figures averaged over repeats.
FIGURES = [
    ("sys_used_mean", "memory_used_mb"),
    ("rss_mean", "rss_mean_mb"),
    ("rss_peak", "rss_peak_mb"),
    ("rss_footprint", "rss_footprint_mb"),
    ("predicted_bytes", "predicted_mb"),
]


def numeric_param_columns(trials):
    """The free parameters' columns that hold numbers (not booleans): hyperparameters a figure can be drawn
    against (`memory-vs-<param>.png`), as the model of drivers.py takes them."""
    return [column for column in param_columns(trials).values()
            if pd.api.types.is_numeric_dtype(trials[column]) and not pd.api.types.is_bool_dtype(trials[column])]


def factor_param_columns(trials):
    """The free parameters' columns that are not numbers (text, booleans, lists): categorical parameters a
    figure may colour, split or draw a line per level of (`arch`), one parameter each, never `params`."""
    numeric = set(numeric_param_columns(trials))
    return [column for column in param_columns(trials).values() if column not in numeric]


def trials_of(source):
    """The trials DataFrame of a Results, or the DataFrame itself."""
    return source.trials if hasattr(source, "trials") else source


def hidden_text(hidden):
    """"128-64"; "" for a program whose file sets no hidden widths (None: blank, not an MLP without any)."""
    if hidden is None or (isinstance(hidden, float) and np.isnan(hidden)):
        return ""
    return "-".join(str(int(w)) for w in hidden)


def _whole_or_none(value):
    """An integer field as an int; None where a program's file leaves it blank (NaN)."""
    return None if pd.isna(value) else int(value)


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
    final = trials[trials["final"] if "final" in trials.columns else trials["status"].isin(FINAL_STATUSES)]
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
        row = {"dataset": name, "learning_rate": float(first["learning_rate"]), "epochs": _whole_or_none(first["epochs"]),
               "batch_size": _whole_or_none(first["batch_size"]), "hidden": hidden_text(first["hidden"]), "n": len(group),
               "n_ok": len(ok), "config": config, "_order": group.index.min(),
               "trainer": str(first["trainer"]) if "trainer" in group.columns else BUILTIN_TRAINER,
               "trial_ids": tuple(dict.fromkeys(group["trial_id"]))}
        numbers = group.drop_duplicates("trial_id")["trial_number"] if "trial_number" in group.columns else []
        row["trial_numbers"] = tuple(sorted(int(v) for v in numbers))
        if row["trial_numbers"]:  # the plan's order, as summary lists the trials
            row["_order"] = row["trial_numbers"][0]
        for column, theirs in CATEGORICAL_EXTRA.items():
            row[column] = str(first[theirs]) if theirs in group.columns and not pd.isna(first[theirs]) else ""
        row["memory_plan"] = plan_text(row["memory_plan"], first.get("recompute_every", 0))
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


def plan_text(plan, recompute_every):
    """`recompute:2` where a recompute trial sets its segment length, as `memsweep plan` writes it: two
    recompute configurations would otherwise read alike."""
    if plan == "recompute" and not pd.isna(recompute_every) and int(recompute_every) > 0:
        return f"{plan}:{int(recompute_every)}"
    return plan


def _categories(trials, column):
    if column in trials.columns and isinstance(trials[column].dtype, pd.CategoricalDtype):
        return [str(c) for c in trials[column].cat.categories]
    return []


def extra_columns(table):
    """The columns after the paper's that a reader needs: model and optimizer always, channels and the synthetic
    shape when some row has one, `memory_plan` when some row trained with another plan than keep, `trainer` when
    some row is not memsweep's own, and the free parameters' columns that have a value in some row."""
    extra = [c for c in ("model", "optimizer") if c in table.columns]
    extra += [c for c in ("channels", "shape") if c in table.columns and (table[c].astype(str) != "").any()]
    if "memory_plan" in table.columns and set(table["memory_plan"].astype(str)) - {"", KEEP_PLAN}:
        extra.append("memory_plan")
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


# --- searches (schema 6): the capacity table ----------------------------------------------------------------

GIB = float(2 ** 30)
# A search's configuration as a reader tells configurations apart: these fields (those that differ between
# the searched configurations are shown; the axis's own field is the search's, not the configuration's).
SEARCH_CONFIGURATION_FIELDS = ("dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size", "hidden",
                               "channels", "trainer", "params")
# The field an axis moves (`width`: every hidden layer's; `params.NAME`: a key of params).
AXIS_FIELDS = {"batch_size": "batch_size", "epochs": "epochs", "width": "hidden"}
# What a search's probe said about its value (probe_outcomes): the three kinds its figure draws.
FITS, DOES_NOT_FIT, OTHER = "fits", "does not fit", "other"


def size_text(size_bytes):
    """A limit as a reader writes it: GiB from 1 GiB up, else MiB, with up to 4 significant digits."""
    if size_bytes is None or pd.isna(size_bytes):
        return ""
    if size_bytes >= GIB:
        return f"{size_bytes / GIB:.4g} GiB"
    return f"{size_bytes / MIB:.4g} MiB"


def _field_text(name, value):
    if isinstance(value, (list, tuple)):
        return "-".join(str(v) for v in value) or "(none)"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def search_setups(searches):
    """Each search's configuration as short text: `name value` of the fields (SEARCH_CONFIGURATION_FIELDS) whose
    values differ between the searched configurations, the axis's own field left out; the dataset and model
    when none differs."""
    if searches.empty:
        return pd.Series(dtype=object)
    configurations = searches.drop_duplicates(["file", "configuration"]) if "file" in searches.columns \
        else searches.drop_duplicates("configuration")
    varied = [name for name in SEARCH_CONFIGURATION_FIELDS if name in searches.columns and
              configurations[name].map(lambda v: _field_text(name, v)).nunique() > 1]
    shown = varied or [name for name in ("dataset", "model") if name in searches.columns]
    texts = []
    for _, row in searches.iterrows():
        axis = str(row.get("axis", ""))
        own = "params" if axis.startswith("params.") and varied == ["params"] else AXIS_FIELDS.get(axis)
        parts = [f"{name} {_field_text(name, row[name])}" for name in shown if name != own]
        texts.append(", ".join(parts))
    return pd.Series(texts, index=searches.index, dtype=object)


def capacity_table(searches):
    """One row per search (configuration × limit), in the order of the files, configurations and limits, from
    the /searches rows (load's `searches`): file, search, configuration (its number in the plan, from 1),
    configuration_id, setup (search_setups), limit (bytes), axis, answer (the largest value that trained within
    the limit; NA when none), verified (the answer trained its full epochs), does_not_fit (the smallest value
    seen not to fit; NA when none), mib_per_unit (the fitted slope of the peak along the axis, MiB; NaN without
    a fit), predicted (the estimate's answer; NA when none), trials, status and message."""
    columns = ["file", "search", "configuration", "configuration_id", "setup", "limit", "axis", "answer",
               "verified", "does_not_fit", "mib_per_unit", "predicted", "trials", "status", "message"]
    if searches.empty:
        return pd.DataFrame(columns=columns)
    order = searches.assign(_file=pd.Categorical(searches["file"], categories=list(dict.fromkeys(searches["file"]))))
    order = order.sort_values(["_file", "configuration", "limit_index", "search"], kind="stable")

    def answer(values):
        return pd.array([int(v) if v >= 0 else pd.NA for v in values], dtype="Int64")

    table = pd.DataFrame({
        "file": order["file"].to_numpy(),
        "search": order["search"].astype(int).to_numpy(),
        "configuration": order["configuration"].astype(int).to_numpy() + 1,
        "configuration_id": order["configuration_id"].to_numpy(),
        "setup": search_setups(order).to_numpy(),
        "limit": order["limit"].fillna(-1).astype(np.int64).to_numpy(),
        "axis": order["axis"].to_numpy(),
        "answer": answer(order["fits"]),
        "verified": (order["fits_verified"].astype(int) == 1).to_numpy() & (order["fits"] >= 0).to_numpy(),
        "does_not_fit": answer(order["does_not_fit"]),
        "mib_per_unit": order["fit_b_mib"].where(order["fit_b_mib"] >= 0).astype(float).to_numpy(),
        "predicted": answer(order["predicted"]),
        "trials": order["trials"].astype(int).to_numpy(),
        "status": order["status"].to_numpy(),
        "message": order["message"].to_numpy(),
    }, columns=columns)
    return table.reset_index(drop=True)


def probe_outcomes(trials):
    """What each trial row says about its search's limit (SearchRow's rule, search.hpp's probe_outcome):
    FITS where it ended ok with its peak (rss_peak) within its limit (search_limit); DOES_NOT_FIT where it ended
    over_budget, the OOM killer ended it, its program reported running out of memory, or it ended ok past the
    limit; OTHER for the rest (failed for another reason, interrupted, no peak)."""
    status = trials["status"].astype(str)
    peak = pd.to_numeric(trials["rss_peak"], errors="coerce")
    limit = pd.to_numeric(trials.get("search_limit", pd.Series(np.nan, index=trials.index)), errors="coerce")
    zero = pd.Series(0, index=trials.index)
    ok = status == "ok"
    out_of_memory = ((status == "over_budget") | (trials.get("oom_killed", zero) == 1) |
                     (trials.get("reported_oom", zero) == 1) | (ok & (peak > limit)))
    fits = ok & (peak <= limit) & ~out_of_memory
    outcome = np.where(out_of_memory, DOES_NOT_FIT, np.where(fits, FITS, OTHER))
    return pd.Series(outcome, index=trials.index, dtype=object)


def search_trials(trials, search):
    """The trial rows of one search (a row of load's `searches`): its file's rows with that `search`."""
    if "search" not in trials.columns:
        return trials.iloc[0:0]
    mine = trials["search"] == int(search["search"])
    if "file" in trials.columns and "file" in search.index:
        mine &= trials["file"] == search["file"]
    return trials[mine]


def answer_disagreements(searches, trials):
    """Lines naming each found search (status `found`) whose answer (`fits`) is not the largest value its own
    trial rows show fitting (trained in full, when the answer is verified), or whose `does_not_fit` is not the
    smallest they show not fitting (probe_outcomes): the file's two tables disagree. Searches without trial rows
    are not checked (a part's file may hold the search without them)."""
    lines = []
    for _, search in searches.iterrows():
        rows = search_trials(trials, search)
        if rows.empty or search["status"] != "found":
            continue
        outcome = probe_outcomes(rows)
        values = pd.to_numeric(rows["axis_value"], errors="coerce")
        fitting = values[(outcome == FITS) & (values >= 0)]
        if int(search["fits_verified"]) == 1 and "full_run" in rows.columns:
            fitting = fitting[rows.loc[fitting.index, "full_run"] == 1]
        failing = values[(outcome == DOES_NOT_FIT) & (values >= 0)]
        seen_fit = int(fitting.max()) if len(fitting) else -1
        seen_not = int(failing.min()) if len(failing) else -1
        said = (int(search["fits"]), int(search["does_not_fit"]))
        if said != (seen_fit, seen_not):
            lines.append(f"search {int(search['search'])} ({search['file']}): /searches says fits "
                         f"{said[0]}, does not fit {said[1]}; its trials show {seen_fit} and {seen_not} "
                         "(-1: none)")
    return lines
