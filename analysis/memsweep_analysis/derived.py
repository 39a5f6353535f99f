"""The columns the loader derives from /trials and /searches: configurations, free parameters as columns, run
limits, trial numbers, categoricals.

Apart from reading (load.py): pandas frames in, pandas frames out, so that a frame built by hand (the tests', a
figure's) goes through the same code as one read from a file.
"""

import json
import math
import re
import warnings

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .old_schemas import (BUILTIN_TRAINER, FINAL_STATUSES, NO_PARAMS, RUN_LIMITS, RUN_SETTINGS,  # noqa: E402
                          TRIAL_COLUMNS_OF_SCHEMA_4, TRIAL_COLUMNS_OF_SCHEMA_6, TRIAL_COLUMNS_OF_SCHEMA_7,
                          TRIAL_COLUMNS_OF_SCHEMA_8, TRIAL_COLUMNS_OF_SCHEMA_10, run_limits)

# The dataset of a program trial whose sweep file names none: a group of its own (blank_program_fields).
NO_DATASET = "no dataset"

# /trials' columns as the loader gives them (the file's, of schema 4, then the derived ones), before the
# params columns: a params key named like one of them gets a column `param_<key>` (param_column_names).
FILE_TRIAL_COLUMNS = (
    "trial_id", "attempt", "repeat", "run", "dataset", "model", "optimizer", "learning_rate", "epochs",
    "batch_size", "depth", "hidden", "channels", "seed", "rank", "host", "status", "message", "start_time",
    "end_time", "wall_seconds", "rss_baseline", "rss_peak", "rss_mean", "rss_footprint", "sys_used_mean",
    "predicted_bytes", "epochs_done", "final_train_loss", "test_accuracy", "samples", "dropped_samples",
    "definition", "pid", "end_signal", "oom_killed", "end_cause", "isolation", "start_seconds", "cgroup_peak",
    "trainer", "params", "processes", "rss_peak_hwm_sum", "process_peak_max", "bad_event_lines",
    "search", "probe", "axis_value", "search_limit", "full_run", "reported_oom",
    "gpu_peak", "gpu_devices", "gpu_peak_source", "torch_allocated_peak", "torch_reserved_peak",
    "memory_plan", "recompute_every", "parameters")
DERIVED_TRIAL_COLUMNS = ("total_units", "max_width", "final", "config", "run_command_line",
                         *(f"run_{name}" for name in RUN_SETTINGS),
                         "channels_text", "shape", "trial_number")
# The fields a trial's configuration is made of that are names, not numbers: categorical columns, their
# categories in plan order (categorical_columns). The free parameters' text columns are too.
CATEGORICAL_COLUMNS = ("dataset", "model", "optimizer", "trainer", "channels_text", "shape", "memory_plan")
# A /trials column added by the runner after schema 5 (the trial's 0-based position in its sweep's plan; -1 or
# absent in older files): the trials' `trial_number` is it + 1 where known.
PLAN_INDEX = "plan_index"
KNOWN_TRIAL_COLUMNS = ("file", "sweep") + FILE_TRIAL_COLUMNS + DERIVED_TRIAL_COLUMNS
PARAM_PREFIX = "param_"


# /searches' columns (SearchRow, include/memsweep/results.hpp), as the loader gives them: text decoded, hidden
# and channels as lists (padding dropped), `limit` in bytes; fits, does_not_fit and predicted are axis values
# with -1 for none, fit_a_mib and fit_b_mib -1 for no fit, as the file holds them. Then `file` and `sweep`.
SEARCH_COLUMNS = (
    "search", "configuration", "limit_index", "run", "configuration_id", "trainer", "dataset", "model", "optimizer",
    "learning_rate", "epochs", "batch_size", "depth", "hidden", "channels", "repeat", "params", "definition", "axis",
    "range_low", "range_high", "limit", "enforced_by", "strategy", "status", "fits", "fits_verified", "does_not_fit",
    "fit_a_mib", "fit_b_mib", "predicted", "trials", "seconds", "message", "memory_plan", "recompute_every")
# SearchRow::status names (search_status).
SEARCH_STATUSES = ("found", "below_range", "above_range", "stopped", "failed")


def parse_definition(text):
    """TrialSpec::canonical_text() ("dataset=mnist;model=mlp;...") as a dict of str."""
    fields = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key] = value
    return fields


def synthetic_spec(definition):
    """A synthetic trial's shape, classes, train_size, test_size from its definition; None if not synthetic."""
    value = parse_definition(definition).get("synthetic")
    if not value:
        return None
    parts = value.split("/")
    try:
        shape = tuple(int(v) for v in parts[0].split("x"))
        return {"shape": shape, "classes": int(parts[1]), "train_size": int(parts[2]), "test_size": int(parts[3])}
    except (IndexError, ValueError):
        return None


_WITHOUT_SEED_AND_REPEAT = re.compile(r";(seed|repeat)=[^;]*")


def config_key(row):
    """The trial's hyperparameters without its repeat (and seed): equal for the repeats of one trial.

    A program's trial (trainer other than memsweep) and a trial with free parameters keep them in the key,
    `;trainer=<name>` and `;params=<JSON>` unless its definition already names them, so that the same
    hyperparameters trained by two trainers, or with two sets of parameters, are two configurations. The
    key of a built-in trial without parameters (every trial of a file before schema 4) is as it always was.
    """
    definition = row.get("definition") or ""
    if definition:
        key = _WITHOUT_SEED_AND_REPEAT.sub("", definition)
    else:
        key = (f"dataset={row['dataset']};model={row['model']};optimizer={row['optimizer']};"
               f"learning_rate={row['learning_rate']!r};epochs={row['epochs']};batch_size={row['batch_size']};"
               f"hidden={'-'.join(map(str, row['hidden']))};channels={'-'.join(map(str, row['channels']))}")
    named = parse_definition(key)
    trainer = trainer_name(row.get("trainer"))
    if trainer != BUILTIN_TRAINER and "trainer" not in named:
        key += f";trainer={trainer}"
    params = canonical_params(row.get("params"))
    if params != NO_PARAMS and "params" not in named:
        key += f";params={params}"
    return key


def trainer_name(value):
    """A `trainer` cell as a name: empty (a row written before its trainer was set) or missing is memsweep's."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return BUILTIN_TRAINER
    return str(value)


def parse_params(text):
    """A `params` cell as a dict; {} for an empty cell. ValueError when it is not a JSON object (a text longer
    than the column's 512 bytes is cut, and then no longer JSON)."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object: {text!r}")
    return value


def canonical_params(text):
    """A `params` cell as compact JSON with sorted keys ("{}" when none): equal parameters give equal text.
    A cell that is not a JSON object stays as it is."""
    try:
        return json.dumps(parse_params(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return str(text)


def param_column_names(keys, existing):
    """{params key: column name}: the key itself when no column in `existing` (and no other key) has that name,
    else `param_<key>` (more `param_` in front while that is taken too). Keys that name a free column keep it
    before any clashing key is renamed, so the result does not depend on the keys' order."""
    taken = set(existing)
    names = {key: key for key in keys if key and key not in taken}
    taken |= set(names)
    for key in sorted(keys):
        if key in names:
            continue
        name = PARAM_PREFIX + key
        while name in taken:
            name = PARAM_PREFIX + name
        names[key] = name
        taken.add(name)
    return {key: names[key] for key in sorted(keys)}


def param_columns(trials):
    """{params key: column} of a trials frame: what `trial_columns` recorded in `trials.attrs["param_columns"]`,
    else worked out again from its `params` column against the loader's own columns; only columns present."""
    names = trials.attrs.get("param_columns")
    if names is None:
        keys = set()
        for text in set(trials.get("params", pd.Series(dtype=object)).dropna()):
            try:
                keys |= set(parse_params(text))
            except ValueError:
                pass
        names = param_column_names(keys, KNOWN_TRIAL_COLUMNS)
    return {key: name for key, name in names.items() if name in trials.columns}


_ABSENT = object()


def _param_value(value):
    """A JSON value as a cell: lists as tuples (hashable, so a column of them groups), objects as JSON text."""
    if isinstance(value, list):
        return tuple(_param_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return value


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def param_series(values, index=None):
    """One params key's column from its value per trial (`_ABSENT` where a trial lacks the key; JSON null is
    missing too). Every value a bool: bool, or pandas' nullable "boolean" when some are missing. Every value a
    number: int64 when every trial has an integer, else float64 with NaN where missing. Every value a string:
    categorical (NaN where missing). Anything else (lists, a mix of kinds): object, lists as tuples, None where
    missing."""
    present = [v for v in values if v is not _ABSENT and v is not None]
    complete = len(present) == len(values)
    if present and all(isinstance(v, bool) for v in present):
        if complete:
            return pd.Series(values, index=index, dtype=bool)
        return pd.Series(pd.array([v if isinstance(v, bool) else pd.NA for v in values], dtype="boolean"),
                         index=index)
    if present and all(_is_number(v) for v in present):
        if complete and all(isinstance(v, int) and -2**63 <= v < 2**63 for v in present):
            return pd.Series(values, index=index, dtype=np.int64)
        return pd.Series([float(v) if _is_number(v) else math.nan for v in values], index=index, dtype=float)
    if present and all(isinstance(v, str) for v in present):
        return pd.Series(pd.Categorical([v if isinstance(v, str) else math.nan for v in values]), index=index)
    return pd.Series([None if v is _ABSENT or v is None else _param_value(v) for v in values], index=index,
                     dtype=object)


def _add_param_columns(trials):
    """One column per key of the trials' `params` (docs/analysis.md); the key -> column map in attrs."""
    parsed = {}
    for text in set(trials["params"]):
        try:
            parsed[text] = parse_params(text)
        except ValueError as error:
            parsed[text] = None
            bad = trials[trials["params"] == text]
            ids = ", ".join(f"{f}: {t}" for f, t in zip(bad["file"], bad["trial_id"]))
            warnings.warn(f"params of trial(s) {ids} are not a JSON object ({error}); read as no parameters",
                          stacklevel=3)
    per_row = [parsed[text] or {} for text in trials["params"]]
    keys = sorted(set().union(*per_row)) if per_row else []
    names = param_column_names(keys, set(trials.columns) | set(KNOWN_TRIAL_COLUMNS))
    columns = {names[key]: param_series([p.get(key, _ABSENT) for p in per_row], index=trials.index)
               for key in keys}
    if columns:
        trials = pd.concat([trials, pd.DataFrame(columns, index=trials.index)], axis=1)
    trials.attrs["param_columns"] = names
    return trials


def trial_columns(trials, runs=None, final_statuses=None):
    """Add the derived columns of /trials.

    hidden, channels (lists, padding dropped; hidden has `depth` widths),
    total_units, max_width, final (the status is one its file calls final:
    `final_statuses` {file: statuses}, FINAL_STATUSES for a file it does not
    name), config, run_command_line
    (the command line of the trial's row of /runs, when `runs` is given) and
    run_max_train_examples, run_max_test_examples (that run's limits on
    examples, 0 for all or without `runs`: run_limits), run_threads (its
    threads, 0 for the CPUs each rank may use or without `runs`);
    `parameters` is NaN where the file has -1 or none (schema 10's column);
    `trainer` becomes categorical (an empty cell: memsweep), `params` compact
    JSON ("{}" when none), and each params key gets a column of its own
    (param_series, param_column_names; the map in attrs["param_columns"]).
    """
    trials = trials.copy()
    for name, value in {**TRIAL_COLUMNS_OF_SCHEMA_4, **TRIAL_COLUMNS_OF_SCHEMA_6, **TRIAL_COLUMNS_OF_SCHEMA_7,
                        **TRIAL_COLUMNS_OF_SCHEMA_8, **TRIAL_COLUMNS_OF_SCHEMA_10}.items():
        if name not in trials.columns:  # a frame built by hand
            trials[name] = value
    trials["trainer"] = pd.Categorical([trainer_name(t) for t in trials["trainer"]])
    canonical = {text: canonical_params(text) for text in set(trials["params"])}
    trials["params"] = pd.Series([canonical[text] for text in trials["params"]], index=trials.index, dtype=object)
    if trials.empty:
        for name in ("total_units", "max_width", "parameters"):
            trials[name] = pd.Series(dtype=float)
        trials["final"] = pd.Series(dtype=bool)
        trials["config"] = pd.Series(dtype=object)
        trials["run_command_line"] = pd.Series(dtype=object)
        for name in RUN_LIMITS:
            trials[f"run_{name}"] = pd.Series(dtype=np.int64)
        trials.attrs["param_columns"] = {}
        for name in ("channels_text", "shape"):
            trials[name] = pd.Series(dtype=object)
        trials["trial_number"] = pd.Series(dtype=np.int64)
        return trials
    trials = blank_program_fields(trials)
    trials["hidden"] = [None if pd.isna(d) else [int(w) for w in row[:max(int(d), 0)]]
                        for row, d in zip(trials["hidden"], trials["depth"])]
    trials["channels"] = [[int(c) for c in row if c != 0] for row in trials["channels"]]
    trials["total_units"] = [math.nan if h is None else sum(h) for h in trials["hidden"]]
    trials["max_width"] = [math.nan if h is None else (max(h) if h else 0) for h in trials["hidden"]]
    parameters = pd.to_numeric(trials["parameters"], errors="coerce").astype(float)
    trials["parameters"] = parameters.where(parameters >= 0)
    finals = final_statuses or {}
    trials["final"] = [status in finals.get(path, FINAL_STATUSES) for path, status in
                       zip(trials["file"] if "file" in trials.columns else [None] * len(trials), trials["status"])]
    trials["config"] = [config_key(row) for row in trials.to_dict("records")]
    if runs is not None and len(runs):
        lines = {(f, int(r)): c for f, r, c in zip(runs["file"], runs["run"], runs["command_line"])}
        trials["run_command_line"] = [lines.get((f, int(r)), "") for f, r in zip(trials["file"], trials["run"])]
        limits = run_limits(runs)
    else:
        trials["run_command_line"] = ""
        limits = {}
    for name in RUN_SETTINGS:
        trials[f"run_{name}"] = np.array([limits.get((f, int(r)), {}).get(name, 0)
                                          for f, r in zip(trials["file"], trials["run"])], dtype=np.int64)
    trials["channels_text"] = ["-".join(map(str, c)) for c in trials["channels"]]
    trials["shape"] = [synthetic_shape_text(d) for d in trials["definition"]]
    trials["trial_number"] = trial_numbers(trials)
    return categorical_columns(_add_param_columns(trials))


def standing_rows(trials):
    """A bool Series: whether each row stands for its trial, as in memsweep summary (stands_for_trial,
    src/results/rows.cpp), per file: the trial's final row with the highest attempt, else its row with the highest
    attempt (an interrupted or killed trial that was never run to a result); of equal attempts, the later row."""
    keyed = pd.DataFrame({"file": trials["file"].astype(str).to_numpy() if "file" in trials.columns else "",
                          "trial_id": trials["trial_id"].astype(str).to_numpy(),
                          "final": (trials["final"].to_numpy(dtype=bool) if "final" in trials.columns
                                    else trials["status"].astype(str).isin(FINAL_STATUSES).to_numpy()),
                          "attempt": trials["attempt"].to_numpy(), "position": np.arange(len(trials))})
    last = keyed.sort_values(["final", "attempt", "position"], kind="stable").groupby(
        ["file", "trial_id"], sort=False).tail(1)["position"].to_numpy()
    standing = np.zeros(len(trials), dtype=bool)
    standing[last] = True
    return pd.Series(standing, index=trials.index)


def blank_program_fields(trials):
    """A program's built-in fields that its sweep file neither sets nor names are blank in the file ("" for
    dataset, model and optimizer, NaN learning rate, 0 epochs and batch size, depth -1; docs/sweep-file.md,
    Programs): here missing values (None, NaN), never memsweep's defaults. A column gets NaN only where a
    program left it blank, so a file without such trials keeps its whole-number columns. The dataset is the
    exception: a blank one reads NO_DATASET, one group like any label, since every table, fit and figure
    groups by dataset and a missing key would drop the trials from each of them."""
    trials = trials.copy()
    programs = pd.Series([trainer_name(t) != BUILTIN_TRAINER for t in trials["trainer"]], index=trials.index)
    blank = programs & (trials["dataset"].astype(object) == "")
    if blank.any():
        trials["dataset"] = trials["dataset"].astype(object).where(~blank, NO_DATASET)
    for name in ("model", "optimizer", "memory_plan"):
        blank = programs & (trials[name].astype(object) == "")
        if blank.any():
            trials[name] = trials[name].astype(object).where(~blank, None)
    for name, empty in (("epochs", 0), ("batch_size", 0), ("depth", -1)):
        blank = programs & (trials[name] == empty)
        if blank.any():
            trials[name] = trials[name].astype(float).where(~blank, math.nan)
    return trials


def search_columns(searches):
    """/searches as the loader gives it: rows never written (an empty status, as a killed non-SWMR writer leaves
    them) dropped; hidden with `depth` widths and channels without their padding (lists, as /trials'), `trainer`
    a name (empty: memsweep), `params` compact JSON ("{}" when none), and the columns of SEARCH_COLUMNS that a
    frame lacks added with their "none" value."""
    searches = searches.copy()
    if "status" in searches.columns and len(searches):
        searches = searches[searches["status"].astype(str) != ""].reset_index(drop=True)
    if len(searches):
        searches["hidden"] = [[int(w) for w in list(row)[:max(int(d), 0)]]
                              for row, d in zip(searches["hidden"], searches["depth"])]
        searches["channels"] = [[int(c) for c in row if c != 0] for row in searches["channels"]]
        searches["trainer"] = [trainer_name(t) for t in searches["trainer"]]
        searches["params"] = [canonical_params(t) for t in searches["params"]]
    for name in SEARCH_COLUMNS:
        if name not in searches.columns:
            searches[name] = pd.Series(dtype=object)
    return searches


def synthetic_shape_text(definition):
    """A synthetic trial's data shape as its definition names it ("1x28x28/10": input shape / classes); ""
    for a real dataset."""
    spec = synthetic_spec(definition or "")
    return "" if spec is None else "x".join(map(str, spec["shape"])) + f"/{spec['classes']}"


def trial_numbers(trials):
    """Each row's trial number, the one `memsweep summary` shows: plan_index + 1 where the file records it (0-based
    position in the sweep's plan); else, per file, the order in which the trials' ids first appear in the rows
    (a trial's attempts share its number)."""
    known = pd.to_numeric(trials[PLAN_INDEX], errors="coerce") if PLAN_INDEX in trials.columns else None
    numbers = []
    seen = {}
    for position, (path, trial_id) in enumerate(zip(trials.get("file", pd.Series("", index=trials.index)),
                                                    trials["trial_id"])):
        mine = seen.setdefault(path, {})
        in_load_order = mine.setdefault(trial_id, len(mine) + 1)
        index = None if known is None else known.iloc[position]
        numbers.append(int(index) + 1 if index is not None and not pd.isna(index) and index >= 0 else in_load_order)
    return pd.Series(numbers, index=trials.index, dtype=np.int64)


def categorical_columns(trials):
    """CATEGORICAL_COLUMNS and the free parameters' text columns as pandas categoricals whose categories are in
    the order they first appear in plan order (file by file, by trial_number): the order a reader set them in."""
    order = trials.assign(_file=pd.Categorical(trials.get("file", pd.Series("", index=trials.index)),
                                               categories=list(dict.fromkeys(trials.get("file", [""])))))
    order = order.sort_values(["_file", "trial_number"], kind="stable").index
    names = [c for c in CATEGORICAL_COLUMNS if c in trials.columns]
    names += [c for c in param_columns(trials).values()
              if isinstance(trials[c].dtype, pd.CategoricalDtype) or trials[c].dtype == object and
              trials[c].map(lambda v: isinstance(v, str) or v is None).all()]
    for name in dict.fromkeys(names):
        values = trials[name].astype(object)
        categories = list(dict.fromkeys(v for v in values.loc[order] if isinstance(v, str)))
        trials[name] = pd.Categorical(values.where(values.map(lambda v: isinstance(v, str))), categories=categories)
    return trials
