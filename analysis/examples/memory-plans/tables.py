"""The memory-plans study's tables (README.md here), from its two results files.

    PYTHONPATH=analysis /usr/bin/python3 analysis/examples/memory-plans/tables.py \
        results/memory-plans.h5 results/memory-plans-limits.h5

Prints Markdown: peaks, footprints and step times per model, trainer, plan
and batch size (means of the repeats for memory, medians for time), the
issue's targets as measured, the estimate against each plan, and the
searches' answers.
"""

import math
import sys

import numpy as np
import pandas as pd

from memsweep_analysis.load import load
from memsweep_analysis.tables import plan_text

MIB = 1024.0 * 1024.0
TRAIN_EXAMPLES = 512  # memory-plans.toml's synthetic train_size
TIMED_EPOCH = 2       # the warm one: kernels made, pages touched
PLAN_ORDER = ["keep", "reuse", "recompute", "recompute:2"]
MODEL_ORDER = ["alexnet", "cnn", "mlp"]


def plan_label(row):
    return plan_text(str(row["memory_plan"]), row["recompute_every"])


def trial_table(results):
    trials = results.trials
    trials = trials[trials["status"] == "ok"].copy()
    trials["plan"] = [plan_label(r) for r in trials.to_dict("records")]
    trials["trainer"] = trials["trainer"].astype(str)
    trials["peak_mib"] = trials["rss_peak"] / MIB
    trials["footprint_mib"] = trials["rss_footprint"] / MIB
    trials["predicted_mib"] = trials["predicted_bytes"].where(trials["predicted_bytes"] >= 0) / MIB
    return trials


def step_seconds(results, trials):
    """Each trial's warm epoch (its wall time, the 64 test examples' evaluation included) per training step.

    Not the samples' training phase: a step of the MLP or the CNN is shorter than the sampling interval."""
    epochs = results.epochs
    timed = epochs[epochs["epoch"] == TIMED_EPOCH].set_index(["trial_id", "attempt"])["seconds"]
    keys = list(zip(trials["trial_id"], trials["attempt"]))
    steps = [math.ceil(TRAIN_EXAMPLES / b) for b in trials["batch_size"]]
    return pd.Series([timed.get(k, np.nan) / s for k, s in zip(keys, steps)], index=trials.index)


def wide(frame, value, aggregate, digits):
    table = frame.pivot_table(index=["model", "trainer", "plan"], columns="batch_size", values=value,
                              aggfunc=aggregate)
    table = table.reindex(sorted(table.index, key=lambda k: (MODEL_ORDER.index(k[0]), k[1],
                                                              PLAN_ORDER.index(k[2]))))
    return table.round(digits)


def markdown(table, fmt):
    columns = list(table.columns)
    lines = ["| model | trainer | plan | " + " | ".join(str(c) for c in columns) + " |",
             "| :-- | :-- | :-- | " + " | ".join("--:" for _ in columns) + " |"]
    for key, row in table.iterrows():
        cells = ["" if pd.isna(row[c]) else fmt(row[c]) for c in columns]
        lines.append("| " + " | ".join(key) + " | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ratio_to_keep(table):
    ratios = table.copy()
    for key in table.index:
        keep = (key[0], key[1], "keep")
        ratios.loc[key] = table.loc[key] / table.loc[keep]
    return ratios


def slopes(trials):
    """Peak against batch size, least squares over every ok run: MiB per example of the batch, and the
    intercept. The per-example cost is what compares trainers whose processes start at different sizes."""
    lines = ["| model | plan | memsweep: MiB per example | PyTorch: MiB per example | memsweep / PyTorch | "
             "memsweep: intercept MiB | PyTorch: intercept MiB |",
             "| :-- | :-- | --: | --: | --: | --: | --: |"]
    fits = {}
    for (model, trainer, plan), group in trials.groupby(["model", "trainer", "plan"]):
        slope, intercept = np.polyfit(group["batch_size"].astype(float), group["peak_mib"], 1)
        fits[(model, trainer, plan)] = (slope, intercept)
    for model in MODEL_ORDER:
        for plan in PLAN_ORDER:
            ours, theirs = fits.get((model, "memsweep", plan)), fits.get((model, "pytorch", plan))
            if ours is None or theirs is None:
                continue
            lines.append(f"| {model} | {plan} | {ours[0]:.3f} | {theirs[0]:.3f} | {ours[0] / theirs[0]:.2f} | "
                         f"{ours[1]:.1f} | {theirs[1]:.1f} |")
    return "\n".join(lines)


def targets(trials):
    alex = trials[trials["model"] == "alexnet"]
    plans = set(alex["plan"])
    if 512 not in set(alex["batch_size"]) or not {"keep", "reuse", "recompute", "recompute:2"} <= plans \
            or "pytorch" not in set(alex["trainer"]):
        return "(the targets are AlexNet's at batch 512, both trainers, every plan: not all in this file)"
    peak = alex.groupby(["trainer", "plan", "batch_size"])["peak_mib"].mean()
    footprint = alex.groupby(["trainer", "plan", "batch_size"])["footprint_mib"].mean()
    step = alex.groupby(["trainer", "plan", "batch_size"])["step_s"].median()
    lines = ["| target | measured | met |", "| :-- | :-- | :-- |"]
    for batch in sorted(alex["batch_size"].unique()):
        if batch < 64:
            continue
        ours, theirs = peak[("memsweep", "reuse", batch)], peak[("pytorch", "keep", batch)]
        lines.append(f"| AlexNet batch {batch}: reuse's peak ≤ PyTorch's | {ours:.1f} vs {theirs:.1f} MiB "
                     f"({ours / theirs:.2f}×) | {'yes' if ours <= theirs else 'no'} |")
    for what, series in (("peak", peak), ("footprint", footprint)):
        keep, reuse = series[("memsweep", "keep", 512)], series[("memsweep", "reuse", 512)]
        saved = 1.0 - reuse / keep
        lines.append(f"| AlexNet batch 512: reuse ≥ 25 % below keep ({what}) | {reuse:.1f} vs {keep:.1f} MiB "
                     f"(−{saved:.0%}) | {'yes' if saved >= 0.25 else 'no'} |")
    for plan in ("recompute", "recompute:2"):
        for what, series in (("peak", peak), ("footprint", footprint)):
            reuse, ours = series[("memsweep", "reuse", 512)], series[("memsweep", plan, 512)]
            saved = 1.0 - ours / reuse
            lines.append(f"| AlexNet batch 512: {plan} ≥ 25 % below reuse ({what}) | {ours:.1f} vs "
                         f"{reuse:.1f} MiB (−{saved:.0%}) | {'yes' if saved >= 0.25 else 'no'} |")
        slower = step[("memsweep", plan, 512)] / step[("memsweep", "reuse", 512)]
        lines.append(f"| AlexNet batch 512: {plan}'s step ≤ 1.5× reuse's | "
                     f"{step[('memsweep', plan, 512)] * 1e3:.0f} vs {step[('memsweep', 'reuse', 512)] * 1e3:.0f} ms "
                     f"({slower:.2f}×) | {'yes' if slower <= 1.5 else 'no'} |")
    return "\n".join(lines)


def estimate_check(trials):
    ours = trials[(trials["trainer"] == "memsweep") & trials["predicted_mib"].notna()].copy()
    ours["error"] = ours["predicted_mib"] - ours["footprint_mib"]
    ours["relative"] = ours["error"] / ours["footprint_mib"]
    lines = ["| plan | trials | ≥ 100 MiB: trials, worst error | all: worst error | "
             "within ±3 % (≥ 100 MiB) | within ±10 % or ±1 MiB |",
             "| :-- | --: | :-- | :-- | :-- | :-- |"]
    for plan in PLAN_ORDER:
        rows = ours[ours["plan"] == plan]
        if rows.empty:
            continue
        large = rows[rows["footprint_mib"] >= 100.0]
        worst_large = large.loc[large["relative"].abs().idxmax()] if len(large) else None
        worst = rows.loc[rows["error"].abs().idxmax()]
        within_large = (large["relative"].abs() <= 0.03).all()
        allowed = np.maximum(0.10 * rows["footprint_mib"], 1.0)
        within_all = (rows["error"].abs() <= allowed).all()
        large_text = "none" if worst_large is None else (
            f"{len(large)}, {worst_large['relative']:+.1%} ({worst_large['model']} batch "
            f"{worst_large['batch_size']})")
        lines.append(f"| {plan} | {len(rows)} | {large_text} | {worst['error']:+.2f} MiB, {worst['relative']:+.1%} "
                     f"({worst['model']} batch {worst['batch_size']}) | {'yes' if within_large else 'no'} | "
                     f"{'yes' if within_all else 'no'} |")
    return "\n".join(lines)


def size_text(size):
    gib = MIB * 1024.0
    return f"{size / gib:g} GiB" if size % gib == 0 else f"{size / MIB:g} MiB"


def search_table(results):
    searches = results.searches
    if searches.empty:
        return "(no searches in these files)"
    trials = results.trials
    plans = {row["trial_id"]: plan_label(row) for row in trials.to_dict("records")}
    # A search's configuration is its first probe's configuration: the plan is one of its fields.
    first = trials[trials["search"] >= 0].sort_values("probe").drop_duplicates("search")
    plan_of_search = {int(s): plans[t] for s, t in zip(first["search"], first["trial_id"])}
    lines = ["| trainer | plan | limit | largest batch that trained within it | smallest that did not | probes |",
             "| :-- | :-- | --: | --: | --: | --: |"]
    probes = trials[trials["search"] >= 0].groupby("search").size()
    searches = searches.assign(_plan=[PLAN_ORDER.index(plan_of_search[int(s)]) for s in searches["search"]])
    for _, row in searches.sort_values(["trainer", "_plan", "limit"]).iterrows():
        s = int(row["search"])
        fits = "none" if row["fits"] < 0 else f"{int(row['fits'])}" + ("" if row["fits_verified"] else " (unverified)")
        above = "-" if row["does_not_fit"] < 0 else str(int(row["does_not_fit"]))
        lines.append(f"| {row['trainer'] or 'memsweep'} | {plan_of_search[s]} | {size_text(row['limit'])} | "
                     f"{fits} ({row['status']}) | {above} | {probes.get(s, 0)} |")
    return "\n".join(lines)


def main(paths):
    study = load(paths[0])
    trials = trial_table(study)
    trials["step_s"] = step_seconds(study, trials)
    counts = trials.groupby(["model", "trainer", "plan", "batch_size"]).size()
    print(f"{len(trials)} trials ok of {len(study.trials)}; repeats per configuration: "
          f"{counts.min()} to {counts.max()}\n")
    print("## Peak RSS (MiB, mean of the repeats)\n")
    print(markdown(wide(trials, "peak_mib", "mean", 1), lambda v: f"{v:.1f}"))
    print("\n## Footprint, peak − the ready process's baseline (MiB), memsweep's trainer\n")
    ours = trials[trials["trainer"] == "memsweep"]
    footprint = wide(ours, "footprint_mib", "mean", 1)
    print(markdown(footprint, lambda v: f"{v:.1f}"))
    print("\n## Footprint as a fraction of keep's\n")
    print(markdown(ratio_to_keep(wide(ours, "footprint_mib", "mean", 6)), lambda v: f"{v:.2f}"))
    print("\n## Peak as a fraction of keep's (PyTorch: recompute is --checkpoint)\n")
    print(markdown(ratio_to_keep(wide(trials, "peak_mib", "mean", 6)), lambda v: f"{v:.2f}"))
    print("\n## Step time (ms, median of the repeats; the warm epoch's wall time / its steps)\n")
    steps = wide(trials, "step_s", "median", 6)
    print(markdown(steps * 1e3, lambda v: f"{v:.2f}" if v < 10 else (f"{v:.1f}" if v < 100 else f"{v:.0f}")))
    print("\n## Step time as a fraction of keep's\n")
    print(markdown(ratio_to_keep(steps), lambda v: f"{v:.2f}"))
    print("\n## Peak against batch size, fitted (PyTorch's keep and reuse are the same program)\n")
    print(slopes(trials))
    print("\n## The issue's targets\n")
    print(targets(trials))
    print("\n## The estimate against the footprint, per plan\n")
    print(estimate_check(trials))
    if len(paths) > 1:
        print("\n## The largest batch within a limit (AlexNet-like, 3×32×32)\n")
        print(search_table(load(paths[1])))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(sys.argv[1:])
