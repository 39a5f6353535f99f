"""Hardware and software counters per training step, against batch size (paper README §4).

A counter column of /samples counts since the trial's start, so a trial's
count is its last recorded value (the last sample where it is not -1) of the
attempt that gave the trial's ok row. Per step it is divided by

    steps = epochs_done * ceil(train_examples / batch_size)

(the trainer runs a last partial batch). The setup before the first epoch
(epoch 0: allocation, first touches) is in the count too, spread over the
steps like the rest. A trial without steps to count (a user's program that
reports no epochs, or whose batch size the file does not set) is divided by
its wall time instead: `<counter> per second`, given for every trial.

The number of training examples per trial is, in this order
(`train_examples_source` says which):
1. `train_examples={dataset: N}` as given by the caller;
2. what the run recorded: /trials' train_examples (schema 12 on), the
   examples each epoch of the trial went through, limits applied;
and, for a file older than schema 12 (or a program's trial, which has none):
3. a synthetic dataset's `train_size`, from the trial's definition;
4. a real dataset's published size: MNIST and Fashion-MNIST 60000, CIFAR-10
   50000 (the shared CIFAR-10 subset holds 4000: a run on it needs
   `train_examples={"cifar-10": 4000}`, the source column warns);
and the limit of the run that trained the trial (`--max-train-examples N`:
/runs' max_train_examples, load's `run_max_train_examples`) caps either of
the last two.
"""

import math

from ._deps import require

require("numpy", "pandas")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .derived import synthetic_spec, trainer_name  # noqa: E402
from .old_schemas import PUBLISHED_TRAIN_EXAMPLES  # noqa: E402
from .tables import factor_param_columns, ok_rows, trials_of  # noqa: E402

PER_STEP = " per step"
PER_SECOND = " per second"
SUBSET_WARNING = {"cifar-10": "; the shared CIFAR-10 subset holds 4000: pass train_examples if the run used it"}


def train_examples_of(trial, given=None):
    """(number of training examples, where it came from) for one trial row."""
    dataset = trial["dataset"]
    if given and dataset in given:
        return int(given[dataset]), "given"
    recorded = trial.get("train_examples", math.nan)
    if recorded is not None and not pd.isna(recorded) and recorded >= 0:
        return int(recorded), "recorded by the run"
    if dataset == "synthetic":
        spec = synthetic_spec(trial.get("definition", ""))
        size, source = (spec["train_size"], "the definition's train_size") if spec else (None, "")
    else:
        size = PUBLISHED_TRAIN_EXAMPLES.get(dataset)
        source = f"published size{SUBSET_WARNING.get(dataset, '')}"
    if size is None:
        return math.nan, "unknown: pass train_examples"
    limit = int(trial.get("run_max_train_examples") or 0)
    if limit and limit < size:
        return limit, "--max-train-examples of the run"
    return size, source


def counter_columns(results):
    """Every counter column of the loaded files, in first-seen order."""
    names = []
    for columns in results.files["counter_columns"]:
        names += [c for c in columns if c not in names]
    return names


def counter_provenance(results):
    """{counter: ["kernel (type=1 config=0x2)", ...]}: what served each counter column, per distinct answer.

    From the files' counter_sources and counter_encodings; a file written before memsweep recorded them
    counted everything through PAPI, which it says.
    """
    provenance = {}
    for row in results.files.to_dict("records"):
        sources, encodings = row["counter_sources"], row["counter_encodings"]
        for i, name in enumerate(row["counter_columns"]):
            if i < len(sources):
                said = f"{sources[i]} ({encodings[i]})" if i < len(encodings) else sources[i]
            else:
                said = "papi (a file from before memsweep recorded sources)"
            answers = provenance.setdefault(name, [])
            if said not in answers:
                answers.append(said)
    return provenance


def counters_per_step(results, train_examples=None):
    """One row per ok trial: its counters' final values and per-step values.

    Columns: file, sweep, dataset, trainer, trial_id, attempt, config, batch_size,
    epochs_done, train_examples, train_examples_source, steps, seconds, the free
    parameters that are not numbers (`arch`: tables.factor_param_columns, named
    in attrs["factors"]), then for each counter `<counter>` (the count),
    `<counter> per step` and `<counter> per second`. A counter the trial's file
    did not record, or that was never counted (-1), is NaN.
    """
    every = trials_of(results)
    factors = factor_param_columns(every)
    trials = ok_rows(every)
    names = counter_columns(results)
    finals = _final_counts(results, trials, names)
    rows = []
    for trial in trials.to_dict("records"):
        examples, source = train_examples_of(trial, train_examples)
        batch = trial["batch_size"]
        known = np.isfinite(examples) and pd.notna(batch) and batch > 0 and trial["epochs_done"] > 0
        steps = trial["epochs_done"] * math.ceil(examples / batch) if known else math.nan
        seconds = trial.get("wall_seconds", math.nan)
        row = {"file": trial["file"], "sweep": trial["sweep"], "dataset": trial["dataset"],
               "trainer": trainer_name(trial.get("trainer")),
               "trial_id": trial["trial_id"], "attempt": trial["attempt"], "config": trial["config"],
               "batch_size": batch, "epochs_done": trial["epochs_done"], "train_examples": examples,
               "train_examples_source": source, "steps": steps, "seconds": seconds}
        row.update({column: trial[column] for column in factors})
        counts = finals.get((trial["file"], trial["trial_id"], trial["attempt"]), {})
        for name in names:
            value = counts.get(name, math.nan)
            row[name] = value
            row[name + PER_STEP] = value / steps if steps and np.isfinite(steps) else math.nan
            row[name + PER_SECOND] = value / seconds if pd.notna(seconds) and seconds > 0 else math.nan
        rows.append(row)
    columns = ["file", "sweep", "dataset", "trainer", "trial_id", "attempt", "config", "batch_size",
               "epochs_done", "train_examples", "train_examples_source", "steps", "seconds"] + factors
    for name in names:
        columns += [name, name + PER_STEP, name + PER_SECOND]
    table = pd.DataFrame(rows, columns=columns)
    table.attrs["factors"] = factors
    return table


def _final_counts(results, trials, names):
    """{(file, trial_id, attempt): {counter: last recorded value}} for the given trial rows."""
    finals = {}
    for path, mine in trials.groupby("file", sort=False):
        recorded = results.files.loc[results.files["path"] == path, "counter_columns"].iloc[0]
        recorded = [c for c in recorded if c in names]
        if not recorded:
            continue
        samples = results.samples_for(sorted(set(mine["trial_id"])), columns=["t"] + recorded, file=path)
        # GroupBy.last skips NaN: the last sample where the counter was counted.
        last = samples.sort_values("t", kind="stable").groupby(["trial_id", "attempt"])[recorded].last()
        wanted = pd.MultiIndex.from_arrays([mine["trial_id"], mine["attempt"]])
        for (trial_id, attempt), values in last[last.index.isin(wanted)].iterrows():
            finals[(path, trial_id, attempt)] = values.to_dict()
    return finals


def line_keys(per_step):
    """The columns that tell the counters' lines apart: dataset; trainer when the trials have more than one
    (a framework's own faults are not the model's); each categorical free parameter with more than one level
    (a Transformer's counts are not an LSTM's)."""
    keys = ["dataset"]
    if "trainer" in per_step.columns and per_step["trainer"].nunique() > 1:
        keys.append("trainer")
    for column in per_step.attrs.get("factors", []):
        if column in per_step.columns and per_step[column].astype(object).map(str).nunique() > 1:
            keys.append(column)
    return keys


def counters_vs_batch(per_step, unit=PER_STEP):
    """Per (line, counter, batch size): mean, SD (ddof 1), min, max and n of the counter per step over the
    trials (`per_step_mean`, `per_step_std`, `per_step_min`, `per_step_max`; with unit=PER_SECOND per second:
    `per_second_mean`, …). A line is a dataset, and a trainer and a level of each categorical parameter where
    the trials have several (line_keys: `trainer`, `arch` columns)."""
    names = [c[:-len(unit)] for c in per_step.columns if str(c).endswith(unit)]
    stat = unit.strip().replace(" ", "_")
    keys = line_keys(per_step) + ["batch_size"]
    # a parameter's missing cell (a trial without it) is a level of its own, not a dropped row
    grouping = per_step.assign(**{k: per_step[k].astype(object).where(per_step[k].notna(), "(none)")
                                  for k in keys[1:-1]})
    rows = []
    for key, group in grouping.groupby(keys, sort=True):
        fields = dict(zip(keys, key))
        for name in names:
            values = group[name + unit].dropna()
            rows.append({**fields, "counter": name, "n": len(values),
                         f"{stat}_mean": values.mean() if len(values) else math.nan,
                         f"{stat}_std": values.std(ddof=1) if len(values) > 1 else math.nan,
                         f"{stat}_min": values.min() if len(values) else math.nan,
                         f"{stat}_max": values.max() if len(values) else math.nan})
    columns = keys[:-1] + ["counter", "batch_size", "n", f"{stat}_mean", f"{stat}_std", f"{stat}_min",
                           f"{stat}_max"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(keys[:-1] + ["counter", "batch_size"], kind="stable").reset_index(drop=True)
