"""The report's figures, each written as a PNG of a fixed size; each function returns the path it wrote.

Figures are matplotlib `Figure` objects drawn by the Agg canvas, never through pyplot: a notebook's backend
and pyplot's list of open figures stay as they were, nothing opens a window, and no figure outlives its call.
Every figure is WIDTH_IN x HEIGHT_IN inches at DPI (800 x 500 pixels) so that a report's pages line up and a
test can check the size; `bbox_inches="tight"` is never used because it would change it.

Memory figures count only trials whose status is `ok` (a failed or killed trial's peak is not the trial's
footprint) and present bytes as MiB (2^20 bytes, the paper's "MB").
"""

import os

from ._deps import require

require("numpy", "pandas", "matplotlib")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

WIDTH_IN, HEIGHT_IN, DPI = 8, 5, 100
MIB = 2 ** 20

# What a hyperparameter column is called on an axis, and which ones span decades.
LABELS = {
    "learning_rate": "learning rate",
    "epochs": "epochs",
    "batch_size": "batch size",
    "depth": "hidden layers",
    "total_units": "total hidden units",
    "max_width": "widest hidden layer",
    "parameters": "parameters (weights + biases)",
}
LOG_SCALE = {"learning_rate", "parameters"}

# Hyperparameters a sweep's configuration is made of, for frames that lack A's `config` column (a trial's
# trainer and free parameters, schema 4, are part of it).
CONFIG_COLUMNS = ("dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size", "hidden", "channels",
                  "trainer", "params")


def _new_figure(rows=1, columns=1, **subplot_kw):
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, constrained_layout=True)
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False, **subplot_kw)
    return figure, axes


def _save(figure, out):
    out = os.fspath(out)
    directory = os.path.dirname(out)
    if directory:
        os.makedirs(directory, exist_ok=True)
    figure.savefig(out, dpi=DPI, format="png")
    return out


def _placeholder(out, message):
    """A figure saying why there is nothing to plot: a report keeps its layout and says so in place."""
    figure, axes = _new_figure()
    axes[0][0].set_axis_off()
    axes[0][0].text(0.5, 0.5, message, ha="center", va="center", wrap=True)
    return _save(figure, out)


def ok_trials(trials):
    """The rows whose figures are results: status ok (final by definition), with a measured footprint."""
    rows = trials[trials["status"] == "ok"]
    return rows[rows["rss_footprint"] >= 0]


def _config_key(trials):
    if "config" in trials.columns:
        return trials["config"].astype(str)
    present = [c for c in CONFIG_COLUMNS if c in trials.columns]
    return trials[present].astype(str).agg("|".join, axis=1)


def memory_points(trials, param):
    """One row per (dataset, configuration): the hyperparameter's value, and the footprint and system-used
    memory as mean, sample standard deviation (NaN for a single repeat) and number of ok repeats, in bytes.

    A configuration is a trial without its repeat, so the spread is what repeating the same training
    gives, which is what an error bar has to show to tell an effect from noise.
    """
    rows = ok_trials(trials)
    rows = rows.assign(_config=_config_key(rows),
                       _sys=rows["sys_used_mean"].where(rows["sys_used_mean"] >= 0))
    grouped = rows.groupby(["dataset", "_config"], sort=True)
    points = pd.DataFrame({
        param: grouped[param].first(),
        "footprint_mean": grouped["rss_footprint"].mean(),
        "footprint_std": grouped["rss_footprint"].std(ddof=1),
        "sys_used_mean": grouped["_sys"].mean(),
        "sys_used_std": grouped["_sys"].std(ddof=1),
        "n": grouped["rss_footprint"].size(),
    }).reset_index().drop(columns="_config")
    return points.sort_values(["dataset", param], kind="stable").reset_index(drop=True)


def memory_vs_hyperparameter(trials, param, out):
    """Footprint (peak - baseline, top row) and system memory used (the paper's figure, bottom row) against
    one hyperparameter, one column of panels per dataset; error bars are one standard deviation over repeats.

    The two figures have rows of their own because they differ by orders of magnitude (a trial's own MiB
    against the whole machine's), and one axis would flatten the one that matters.
    """
    points = memory_points(trials, param)
    label = LABELS.get(param, param)
    if points.empty:
        return _placeholder(out, f"no trial with status ok: nothing to plot against {label}")
    datasets = list(dict.fromkeys(points["dataset"]))
    figure, axes = _new_figure(2, len(datasets), sharex="col")
    for column, dataset in enumerate(datasets):
        mine = points[points["dataset"] == dataset]
        for row, (mean, std, colour, name) in enumerate([
                ("footprint_mean", "footprint_std", "tab:blue", "footprint (peak − baseline)"),
                ("sys_used_mean", "sys_used_std", "tab:orange", "system used (paper)")]):
            ax = axes[row][column]
            ax.errorbar(mine[param], mine[mean] / MIB, yerr=mine[std].fillna(0) / MIB, fmt="o", color=colour,
                        ecolor=colour, elinewidth=1, capsize=3, markersize=4)
            if param in LOG_SCALE and (mine[param] > 0).all():
                ax.set_xscale("log")
            ax.grid(True, alpha=0.3)
            if row == 0:
                ax.set_title(f"{dataset} ({int(mine['n'].sum())} ok trials)", fontsize=10)
            else:
                ax.set_xlabel(label)
            if column == 0:
                ax.set_ylabel(f"{name}, MiB", fontsize=8)
    figure.suptitle(f"Memory against {label} (mean ± SD over repeats)", fontsize=11)
    return _save(figure, out)


def epoch_boundaries(samples):
    """(t, epoch) of each sample whose epoch differs from the sample before it, in time order: where an
    epoch (or, from epoch 0, the first epoch after setup) began, as seen at the sampler's resolution."""
    ordered = samples.sort_values("t", kind="stable")
    epochs = ordered["epoch"].to_numpy()
    changed = np.flatnonzero(epochs[1:] != epochs[:-1]) + 1
    return [(float(ordered["t"].iloc[i]), int(epochs[i])) for i in changed]


def _final_attempt(trials, trial_id):
    rows = trials[trials["trial_id"] == trial_id]
    if rows.empty:
        raise KeyError(f"no trial {trial_id!r} in the results")
    final = rows[rows["final"]] if "final" in rows.columns else rows.iloc[0:0]
    chosen = (final if not final.empty else rows).sort_values("attempt").iloc[-1]
    return chosen


def rss_over_time(results, trial_id, out):
    """RSS (top) and the node's used memory (bottom) against time since the trial's sampler started, for
    the trial's final attempt (the last attempt when none is final), with the epochs' starts marked."""
    trial = _final_attempt(results.trials, trial_id)
    samples = results.samples_for([trial_id], attempt=int(trial["attempt"]))
    if "file" in samples.columns and "file" in trial.index:
        samples = samples[samples["file"] == trial["file"]]
    samples = samples[samples["attempt"] == int(trial["attempt"])].sort_values("t", kind="stable")
    title = (f"trial {trial_id} ({trial['dataset']}, batch {trial['batch_size']}, "
             f"attempt {int(trial['attempt'])}, {trial['status']})")
    if samples.empty:
        return _placeholder(out, f"{title}: no samples recorded")
    figure, axes = _new_figure(2, 1, sharex="col")
    for ax, column, colour, name in [(axes[0][0], "rss", "tab:blue", "RSS"),
                                     (axes[1][0], "sys_used", "tab:orange", "system used")]:
        measured = samples[samples[column] >= 0]
        ax.plot(measured["t"], measured[column] / MIB, color=colour, linewidth=1)
        ax.set_ylabel(f"{name}, MiB")
        ax.grid(True, alpha=0.3)
        for t, epoch in epoch_boundaries(samples):
            ax.axvline(t, color="grey", linestyle=":", linewidth=0.8)
            if ax is axes[0][0]:
                ax.text(t, 1.0, f" {epoch}", transform=ax.get_xaxis_transform(), fontsize=7, va="top")
    axes[1][0].set_xlabel("t since the trial's sampler started, s (dotted: an epoch begins)")
    figure.suptitle(title, fontsize=11)
    return _save(figure, out)


def estimate_vs_measured(trials, fits, out):
    """Measured footprint against the estimate, one colour per dataset, with y = x (a perfect estimate)
    and each calibrated fit footprint = a + b x drawn over the predictions it was fitted on.

    `fits` is what estimate.calibrate returns (a DataFrame or a list of dicts with dataset, host,
    a_bytes, b); it may be empty.
    """
    rows = ok_trials(trials)
    rows = rows[rows["predicted_bytes"] > 0]
    if rows.empty:
        return _placeholder(out, "no ok trial with an estimate: nothing to compare")
    fits = pd.DataFrame(fits)
    figure, axes = _new_figure()
    ax = axes[0][0]
    colours = dict(zip(sorted(rows["dataset"].unique()), _colours()))
    for dataset, mine in rows.groupby("dataset", sort=True):
        ax.scatter(mine["predicted_bytes"] / MIB, mine["rss_footprint"] / MIB, s=14, color=colours[dataset],
                   label=dataset, alpha=0.8)
    if not fits.empty:
        for _, fit in fits.iterrows():
            mine = rows[rows["dataset"] == fit["dataset"]]
            if "host" in rows.columns and "host" in fit.index:
                mine = mine[mine["host"] == fit["host"]]
            if mine.empty:
                continue
            x = np.linspace(mine["predicted_bytes"].min(), mine["predicted_bytes"].max(), 2)
            ax.plot(x / MIB, (fit["a_bytes"] + fit["b"] * x) / MIB, color=colours.get(fit["dataset"], "black"),
                    linewidth=1, label=f"fit {fit['dataset']} @ {fit.get('host', '?')}")
    top = max(rows["predicted_bytes"].max(), rows["rss_footprint"].max()) / MIB
    ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="measured = estimate")
    ax.set_xlabel("estimate (predicted_bytes), MiB")
    ax.set_ylabel("measured footprint (peak − baseline), MiB")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title("Estimate against measurement (ok trials)", fontsize=11)
    return _save(figure, out)


def counters_vs_batch(table, out):
    """Each counter per training step against batch size, one panel per counter, one line per dataset (and
    per trainer, when the table has more than one).

    `table` is the counters table: one row per trial with `dataset`, `batch_size` and one `<counter> per
    step` column per recorded counter (see counters.per_step_columns); several rows at one batch size
    (repeats, other hyperparameters) are drawn as their mean with the standard deviation as error bars.
    """
    columns = per_step_columns(table)
    if table.empty or not columns:
        return _placeholder(out, "no counters were recorded: nothing to plot against batch size")
    shown = columns[:6]  # beyond six panels the labels no longer fit 800 x 500
    across = min(3, len(shown))
    down = (len(shown) + across - 1) // across
    figure, axes = _new_figure(down, across)
    by_trainer = "trainer" in table.columns and table["trainer"].nunique() > 1
    line_of = table["dataset"] + (" " + table["trainer"].astype(str) if by_trainer else "")
    colours = dict(zip(sorted(line_of.unique()), _colours()))
    for index, column in enumerate(shown):
        ax = axes[index // across][index % across]
        for line, mine in table.groupby(line_of, sort=True):
            values = mine[mine[column] >= 0].groupby("batch_size")[column]
            mean, std = values.mean(), values.std(ddof=1).fillna(0)
            ax.errorbar(mean.index, mean.to_numpy(), yerr=std.to_numpy(), fmt="o-", markersize=3, capsize=2,
                        linewidth=1, color=colours[line], label=line)
        ax.set_title(column, fontsize=8)
        ax.set_xlabel("batch size", fontsize=8)
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    for index in range(len(shown), down * across):
        axes[index // across][index % across].set_axis_off()
    axes[0][0].legend(fontsize=7)
    figure.suptitle("Counters per training step against batch size", fontsize=11)
    return _save(figure, out)


def peak_vs_batch_by_trainer(peaks, out, reference=None):
    """Peak RSS against batch size, one colour (a line through the mean at each batch size, a marker per
    configuration) per trainer, one panel per dataset; log2 batch axis.

    `peaks` is trainers.peaks_by_trainer(pairs): one row per (trainer, configuration) with `trainer`,
    `dataset`, `batch_size` and `peak` (bytes, the mean over the configuration's ok repeats), the paired
    configurations only, so that every line covers the same hyperparameters.
    """
    if peaks.empty:
        return _placeholder(out, "no configuration trained by two trainers: nothing to compare")
    datasets = sorted(peaks["dataset"].unique())
    shown = datasets[:3]  # beyond three panels the labels no longer fit 800 x 500
    figure, axes = _new_figure(1, len(shown), sharey=False)
    names = sorted(peaks["trainer"].unique(), key=lambda name: (name != reference, name))
    colours = dict(zip(names, _colours()))
    markers = dict(zip(names, ["o", "s", "^", "D", "v", "P", "X", "*"] * 4))
    for column, dataset in enumerate(shown):
        ax = axes[0][column]
        for trainer in names:
            mine = peaks[(peaks["dataset"] == dataset) & (peaks["trainer"] == trainer)]
            if mine.empty:
                continue
            ax.scatter(mine["batch_size"], mine["peak"] / MIB, s=12, alpha=0.5, color=colours[trainer],
                       marker=markers[trainer])
            mean = mine.groupby("batch_size")["peak"].mean().sort_index()
            ax.plot(mean.index, mean.to_numpy() / MIB, color=colours[trainer], marker=markers[trainer],
                    markersize=4, linewidth=1.2, label=trainer)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_title(dataset, fontsize=10)
        ax.grid(True, alpha=0.3)
        if column == 0:
            ax.set_ylabel("peak RSS, MiB")
        ax.legend(fontsize=7)
    more = f" (first {len(shown)} of {len(datasets)} datasets)" if len(shown) < len(datasets) else ""
    figure.suptitle(f"Peak RSS against batch size per trainer, paired configurations{more}", fontsize=11)
    return _save(figure, out)


def per_step_columns(table):
    """The counter-per-step columns of a counters table."""
    return [c for c in table.columns if str(c).endswith(" per step")]


def _colours():
    return ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
            "tab:grey", "tab:olive", "tab:cyan"] * 10
