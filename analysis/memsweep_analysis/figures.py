"""The report's figures, each written as a PNG of a fixed size; each function returns a `Drawn` record (the
path it wrote and what it drew) or, when there is nothing to draw, a one-line reason and no file.

Figures are matplotlib `Figure` objects drawn by the Agg canvas, never through pyplot: a notebook's backend
and pyplot's list of open figures stay as they were, nothing opens a window, and no figure outlives its call.
Every figure is WIDTH_IN x HEIGHT_IN inches at DPI (800 x 500 pixels) so that a report's pages line up and a
test can check the size; `bbox_inches="tight"` is never used because it would change it.

Memory figures count only trials whose status is `ok` (a failed or killed trial's peak is not the trial's
footprint) and present bytes as MiB (2^20 bytes, the paper's "MB").

Points of several kinds are told apart by the strongest categorical factor (colour and marker) and the next
one (panels): `strongest_factors` ranks the categorical fields by eta², the share of the footprint's variance
that their levels' means explain, so that the figure separates what the data say matters most.
"""

import os
from dataclasses import dataclass, field

from ._deps import require

require("numpy", "pandas", "matplotlib")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import ScalarFormatter  # noqa: E402

from . import counters, tables  # noqa: E402
from .derived import NO_DATASET  # noqa: E402
from .derived import trainer_name as load_trainer_name  # noqa: E402
from .old_schemas import BUILTIN_TRAINER  # noqa: E402

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
# Sizes that sweeps double: a log2 axis when their values call for one (see log2_axis).
DOUBLING = {"batch_size", "total_units", "max_width"}

# Hyperparameters a sweep's configuration is made of, for frames that lack A's `config` column (a trial's
# trainer and free parameters, schema 4, are part of it).
CONFIG_COLUMNS = ("dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size", "hidden", "channels",
                  "trainer", "params", "memory_plan", "recompute_every")
# The categorical fields a figure may colour or split its points by, in the order that breaks a tie; then each
# free parameter that is not a number (factor_columns). Never the whole `params` JSON: its text is every
# parameter at once, numbers too, and a legend of it names each configuration.
FACTORS = ("dataset", "model", "optimizer", "trainer", "channels", "memory_plan")
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
MAX_PANELS = 4  # beyond four panels in a row the labels no longer fit 800 x 500
EVAL_PHASE = 2
PHASE_NAMES = {0: "setup", 1: "training", 2: "evaluation"}


@dataclass
class Drawn:
    """A figure that was written: its path (the record is a path-like, so `open(drawn)` works), the factor its
    colours stand for and their levels, the factor its panels split by, each panel's x scale as (scale, base),
    the data colours found on the canvas before saving, whether an evaluation phase was shaded, the title and
    the texts on it, and notes (warnings) the reader should see beside it. `panels`: what each panel of a
    search figure holds, read from its artists (search_capacity). `lines`: {label: [(x, y)]} of each data line
    drawn, read from its artists (node_memory_by_host: one per host, y in MiB). `bars`: {(panel title,
    label): [(x, low, high)]} of each error bar drawn, read from its artists (counters_vs_batch)."""
    path: str
    factor: str = None
    levels: list = field(default_factory=list)
    facet: str = None
    xscales: list = field(default_factory=list)
    colours: set = field(default_factory=set)
    shaded: bool = False
    notes: list = field(default_factory=list)
    title: str = ""
    texts: list = field(default_factory=list)
    panels: list = field(default_factory=list)
    lines: dict = field(default_factory=dict)
    bars: dict = field(default_factory=dict)

    def __fspath__(self):
        return self.path


def _new_figure(rows=1, columns=1, **subplot_kw):
    figure = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, constrained_layout=True)
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False, **subplot_kw)
    return figure, axes


def _scales(figure):
    """Each visible panel's x axis as (scale name, base): ("log", 2.0), ("linear", None)."""
    found = []
    for ax in figure.axes:
        if not ax.axison:
            continue
        scale = ax.xaxis.get_scale()
        found.append((scale, float(ax.xaxis.get_transform().base) if scale == "log" else None))
    return found


def data_colours(figure):
    """The colours of the figure's data points, read from its artists: markers of lines (error bars' caps and
    the reference lines have none) and the faces of scatter collections; grey and black are left out, being
    the colour of references and notes rather than of a level."""
    colours = set()
    for ax in figure.axes:
        for line in ax.lines:
            if line.get_marker() not in (None, "None", "", " ", "_", "|"):
                colours.add(to_hex(line.get_markerfacecolor()))
        for collection in ax.collections:
            if hasattr(collection, "get_offsets") and type(collection).__name__ == "PathCollection":
                colours.update(to_hex(c) for c in collection.get_facecolors())
    return colours - {"#000000", "#808080", "#7f7f7f"}


def _error_bars(figure):
    """{(panel title, label): [(x, low, high)]}: the error bars of each errorbar() call, from its bar lines."""
    bars = {}
    for ax in figure.axes:
        for container in ax.containers:
            if type(container).__name__ != "ErrorbarContainer" or not container.lines[2]:
                continue
            segments = container.lines[2][0].get_segments()
            bars[(ax.get_title(), container.get_label())] = sorted(
                (float(s[0][0]), float(min(s[0][1], s[1][1])), float(max(s[0][1], s[1][1]))) for s in segments)
    return bars


def _save(figure, out, **record):
    out = os.fspath(out)
    directory = os.path.dirname(out)
    if directory:
        os.makedirs(directory, exist_ok=True)
    title = figure._suptitle.get_text() if figure._suptitle is not None else ""
    texts = ([t.get_text() for ax in figure.axes for t in ax.texts] + [t.get_text() for t in figure.texts] +
             [title.get_text() for ax in figure.axes for title in (ax.title, ax._left_title) if title.get_text()])
    # shaded: read from the canvas, not from what the caller meant to draw (axvspan adds a patch; no figure
    # here draws other patches)
    drawn = Drawn(path=out, xscales=_scales(figure), colours=data_colours(figure), title=title, texts=texts,
                  shaded=any(ax.patches for ax in figure.axes), **record)
    figure.savefig(out, dpi=DPI, format="png")
    return drawn


def factor_columns(trials):
    """FACTORS that the frame has, then its free parameters' columns that are not numbers (text, booleans,
    lists): what a figure may colour or split its points by (`arch`, one parameter, never `params`)."""
    present = [name for name in FACTORS if name in trials.columns]
    return present + [c for c in tables.factor_param_columns(trials) if c not in present]


def ok_trials(trials):
    """The rows whose figures are results: status ok (final by definition), with a measured footprint."""
    rows = trials[trials["status"] == "ok"]
    return rows[rows["rss_footprint"] >= 0]


def _config_key(trials):
    if "config" in trials.columns:
        return trials["config"].astype(str)
    present = [c for c in CONFIG_COLUMNS if c in trials.columns]
    return trials[present].astype(str).agg("|".join, axis=1)


def _levels(column):
    """A factor's cells as text: missing and empty cells are one level, "(none)" (an MLP's channels)."""
    text = column.astype(object).where(column.notna(), "")
    return text.map(lambda v: str(v) if str(v) != "" else "(none)")


def eta_squared(values, groups):
    """The share of the values' variance that the groups' means explain, SS_between / SS_total (0 when the
    values do not vary): one-way ANOVA's eta², 1 when every level is a constant of its own."""
    values = pd.Series(np.asarray(values, dtype=float))
    groups = pd.Series(np.asarray(groups, dtype=object))
    keep = values.notna().to_numpy()
    values, groups = values[keep], groups[keep]
    total = float(((values - values.mean()) ** 2).sum())
    if total <= 0:
        return 0.0
    means = values.groupby(groups.to_numpy()).transform("mean")
    return float(((means - values.mean()) ** 2).sum()) / total


def strongest_factors(frame, value, candidates=FACTORS):
    """[(field, eta²)] of the categorical fields with at least two levels among the rows with a value, the
    strongest first (ties in the order of `candidates`): the first colours a figure, the second splits it."""
    rows = frame[frame[value].notna()]
    ranked = []
    for order, name in enumerate(candidates):
        if name not in rows.columns:
            continue
        levels = _levels(rows[name])
        if levels.nunique() < 2:
            continue
        ranked.append((-eta_squared(rows[value], levels), order, name))
    return [(name, -score) for score, _, name in sorted(ranked)]


def _is_power_of_two(value):
    return value >= 1 and float(value).is_integer() and (int(value) & (int(value) - 1)) == 0


def log2_axis(values):
    """Whether sizes are drawn on a log2 axis: every value positive and at least two distinct, and either at
    least three distinct powers of two (a doubling sweep: evenly spaced on log2, crowded at the left on a
    linear axis) or a largest-to-smallest ratio of 4 or more (on a linear axis the smallest values would share
    the first quarter). Two powers of two a factor 2 apart, or sizes 48 to 96, stay linear."""
    values = pd.Series(values, dtype=float).dropna()
    distinct = sorted(set(values))
    if len(distinct) < 2 or distinct[0] <= 0:
        return False
    doubling = len(distinct) >= 3 and all(_is_power_of_two(v) for v in distinct)
    return doubling or distinct[-1] / distinct[0] >= 4


def _set_xscale(ax, param, values):
    if param in DOUBLING and log2_axis(values):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(ScalarFormatter())  # 32, 64, 128 rather than 2^5, 2^6, 2^7
    elif param in LOG_SCALE and (pd.Series(values) > 0).all():
        ax.set_xscale("log")


def shared_node_note(trials):
    """A warning when, within some dataset, the node's used memory (sys_used_mean) varied more across the ok
    trials than their own footprints did, by sample standard deviation: then something besides the trials was
    using the node, and a system-memory figure shows it rather than them. Within a dataset, because trials of
    different datasets differ in their baseline (the data they load), which the node's memory counts and the
    footprint does not. None when no dataset has two trials with both figures, or none is out of line."""
    rows = ok_trials(trials)
    rows = rows[rows["sys_used_mean"] >= 0]
    found = []
    for dataset, mine in rows.groupby(rows["dataset"].astype(str), sort=True):
        if len(mine) < 2:
            continue
        sys_sd, own_sd = float(mine["sys_used_mean"].std(ddof=1)), float(mine["rss_footprint"].std(ddof=1))
        if sys_sd > own_sd:
            found.append(f"{dataset} (SD {sys_sd / MIB:.3g} MiB against {own_sd / MIB:.3g})")
    if not found:
        return None
    return ("Shared node? The node's used memory varied more across the trials than the trials' own footprints "
            f"in {', '.join(found)}: other processes' memory is in the system-used figures.")


def memory_points(trials, param):
    """One row per (dataset, configuration): the hyperparameter's value, the categorical fields the trials
    have (factor_columns; their names, dataset first, in attrs["factors"]), and the footprint and
    system-used memory as mean, sample standard deviation (NaN for a single repeat) and number of ok
    repeats, in bytes.

    A configuration is a trial without its repeat, so the spread is what repeating the same training
    gives, which is what an error bar has to show to tell an effect from noise.
    """
    rows = ok_trials(trials)
    rows = rows.assign(_config=_config_key(rows),
                       _sys=rows["sys_used_mean"].where(rows["sys_used_mean"] >= 0))
    grouped = rows.groupby(["dataset", "_config"], sort=True, observed=True)
    names = [name for name in factor_columns(trials) if name != "dataset" and name != param]
    factors = {name: grouped[name].first().astype(object) for name in names}
    points = pd.DataFrame({
        param: grouped[param].first(),
        **factors,
        "footprint_mean": grouped["rss_footprint"].mean(),
        "footprint_std": grouped["rss_footprint"].std(ddof=1),
        "sys_used_mean": grouped["_sys"].mean(),
        "sys_used_std": grouped["_sys"].std(ddof=1),
        "n": grouped["rss_footprint"].size(),
    }).reset_index().drop(columns="_config")
    points["dataset"] = points["dataset"].astype(object)
    points = points.sort_values(["dataset", param], kind="stable").reset_index(drop=True)
    points.attrs["factors"] = ["dataset"] + names
    return points


def _styles(levels):
    return ({level: colour for level, colour in zip(levels, _colours())},
            {level: marker for level, marker in zip(levels, MARKERS * 10)})


def _panels(frame, facet):
    """[(title, rows)] of the figure's panels: one per level of the facet field (the first MAX_PANELS), or one
    panel of everything; and how many levels were left out."""
    if facet is None:
        return [(None, frame)], 0
    levels = _levels(frame[facet])
    names = list(dict.fromkeys(sorted(levels)))
    return [(f"{facet} {name}", frame[levels == name]) for name in names[:MAX_PANELS]], max(0, len(names) - MAX_PANELS)


def _colour_and_facet(frame, value, candidates=FACTORS):
    """The strongest factor, and the next one that is not fixed by it: panels of channels beside colours of
    model would repeat the colours (an MLP has no channels), so a factor with one level within each colour
    is passed over."""
    ranked = [name for name, _ in strongest_factors(frame, value, candidates)]
    if not ranked:
        return None, None
    colour = _levels(frame[ranked[0]])
    for name in ranked[1:]:
        if (_levels(frame[name]).groupby(colour.to_numpy()).nunique() > 1).any():
            return ranked[0], name
    return ranked[0], None


def memory_vs_hyperparameter(trials, param, out):
    """Footprint (peak - baseline, top row) and system memory used (the paper's figure, bottom row) against
    one hyperparameter, one point per configuration, colour and marker by the strongest categorical factor,
    one column of panels per level of the next; error bars are one standard deviation over repeats, drawn
    only where there are repeats. A reason (no file) when no trial ended ok.

    The two figures have rows of their own because they differ by orders of magnitude (a trial's own MiB
    against the whole machine's), and one axis would flatten the one that matters.
    """
    points = memory_points(trials, param)
    label = LABELS.get(param, param)
    if points.empty:
        return f"no trial ended ok: nothing to plot against {label}"
    factor, facet = _colour_and_facet(points, "footprint_mean", points.attrs["factors"])
    levels = sorted(set(_levels(points[factor]))) if factor else []
    colours, markers = _styles(levels)
    panels, left_out = _panels(points, facet)
    repeated = bool((points["n"] > 1).any())
    figure, axes = _new_figure(2, len(panels), sharex="col")
    footprint = footprint_label(trials)
    for column, (title, mine) in enumerate(panels):
        for row, (mean, std, name) in enumerate([("footprint_mean", "footprint_std", footprint),
                                                 ("sys_used_mean", "sys_used_std", "system used (paper)")]):
            ax = axes[row][column]
            groups = mine.groupby(_levels(mine[factor]), sort=True) if factor else [(None, mine)]
            for level, these in groups:
                colour = colours.get(level, "tab:blue")
                ax.errorbar(these[param], these[mean] / MIB,
                            yerr=these[std].fillna(0) / MIB if repeated else None, fmt=markers.get(level, "o"),
                            color=colour, ecolor=colour, elinewidth=1, capsize=3, markersize=5,
                            label=f"{factor} {level}" if (row, column) == (0, 0) and factor else None)
            _set_xscale(ax, param, points[param])
            ax.grid(True, alpha=0.3)
            if row == 0:
                ax.set_title(f"{title or 'all trials'} ({int(mine['n'].sum())} ok trials)", fontsize=9)
            else:
                ax.set_xlabel(label)
            if column == 0:
                ax.set_ylabel(f"{name}, MiB", fontsize=8)
    if factor:
        axes[0][0].legend(fontsize=7)
    notes = []
    warning = shared_node_note(trials)
    if warning:
        notes.append(warning)
        # a short title over the system-used panel (constrained layout makes room for titles, not free text);
        # the whole note goes into the record for the report to print
        axes[1][0].set_title("⚠ shared node? system used varies more than the footprints", fontsize=7,
                             color="tab:red", loc="left")
    spread = " (mean ± SD over repeats)" if repeated else ""
    more = f", first {MAX_PANELS} of {MAX_PANELS + left_out} {facet}s" if left_out else ""
    figure.suptitle(f"Memory against {label}{spread}{more}", fontsize=11)
    return _save(figure, out, factor=factor, levels=levels, facet=facet, notes=notes)


def epoch_boundaries(samples):
    """(t, epoch) of each sample whose epoch differs from the sample before it, in time order: where an
    epoch (or, from epoch 0, the first epoch after setup) began, as seen at the sampler's resolution."""
    ordered = samples.sort_values("t", kind="stable")
    epochs = ordered["epoch"].to_numpy()
    changed = np.flatnonzero(epochs[1:] != epochs[:-1]) + 1
    return [(float(ordered["t"].iloc[i]), int(epochs[i])) for i in changed]


def phase_spans(samples, phase=EVAL_PHASE):
    """(start, end) times of each run of consecutive samples in the phase, in time order; a run ends at the
    next sample's time (the phase lasted at least until the sampler saw otherwise), or at its own last sample.
    Empty when the samples carry no `phase` (files before it was recorded)."""
    if "phase" not in samples.columns or samples.empty:
        return []
    ordered = samples.sort_values("t", kind="stable")
    times, inside = ordered["t"].to_numpy(dtype=float), (ordered["phase"].to_numpy() == phase)
    spans, start = [], None
    for i, now in enumerate(inside):
        if now and start is None:
            start = times[i]
        if start is not None and (not now or i == len(inside) - 1):
            spans.append((float(start), float(times[i])))
            start = None
    return spans


def _final_attempt(trials, trial_id):
    rows = trials[trials["trial_id"] == trial_id]
    if rows.empty:
        raise KeyError(f"no trial {trial_id!r} in the results")
    final = rows[rows["final"]] if "final" in rows.columns else rows.iloc[0:0]
    chosen = (final if not final.empty else rows).sort_values("attempt").iloc[-1]
    return chosen


def rss_over_time(results, trial_id, out):
    """RSS (top) and the node's used memory (bottom) against time since the trial's sampler started, for
    the trial's final attempt (the last attempt when none is final), with the epochs' starts marked, the
    evaluation phase shaded (samples with `phase` 2) and the highest RSS annotated with its phase. A reason
    (no file) when the attempt has no samples."""
    trial = _final_attempt(results.trials, trial_id)
    samples = results.samples_for([trial_id], attempt=int(trial["attempt"]))
    if "file" in samples.columns and "file" in trial.index:
        samples = samples[samples["file"] == trial["file"]]
    samples = samples[samples["attempt"] == int(trial["attempt"])].sort_values("t", kind="stable")
    title = (f"trial {trial_id} ({trial['dataset']}, batch {trial['batch_size']}, "
             f"attempt {int(trial['attempt'])}, {trial['status']})")
    if samples.empty or not (samples["rss"] >= 0).any():
        return f"{title}: no samples recorded"
    figure, axes = _new_figure(2, 1, sharex="col")
    spans = phase_spans(samples)
    for ax, column, colour, name in [(axes[0][0], "rss", "tab:blue", "RSS"),
                                     (axes[1][0], "sys_used", "tab:orange", "system used")]:
        measured = samples[samples[column] >= 0]
        ax.plot(measured["t"], measured[column] / MIB, color=colour, linewidth=1)
        ax.set_ylabel(f"{name}, MiB")
        ax.grid(True, alpha=0.3)
        for start, end in spans:
            ax.axvspan(start, end, color="tab:green", alpha=0.15, linewidth=0,
                       label="evaluation" if ax is axes[0][0] and start == spans[0][0] else None)
        for t, epoch in epoch_boundaries(samples):
            ax.axvline(t, color="grey", linestyle=":", linewidth=0.8)
            if ax is axes[0][0]:
                ax.text(t, 1.0, f" {epoch}", transform=ax.get_xaxis_transform(), fontsize=7, va="top")
    measured = samples[samples["rss"] >= 0]
    top = measured.loc[measured["rss"].idxmax()]
    phase = PHASE_NAMES.get(int(top["phase"]), "phase unknown") if "phase" in top.index else "phase unknown"
    axes[0][0].plot([top["t"]], [top["rss"] / MIB], marker="v", color="tab:red", linestyle="none")
    axes[0][0].annotate(f"peak {top['rss'] / MIB:.1f} MiB ({phase})", (top["t"], top["rss"] / MIB),
                        textcoords="offset points", xytext=(-10, -14), ha="right", fontsize=8, color="tab:red")
    if spans:
        axes[0][0].legend(fontsize=7, loc="lower right")
    notes = []
    system = samples["sys_used"][samples["sys_used"] >= 0]
    own = float(measured["rss"].max() - measured["rss"].min())
    if len(system) > 1 and float(system.max() - system.min()) > own:
        notes.append(f"Shared node? During trial {trial_id} the node's used memory ranged over "
                     f"{(system.max() - system.min()) / MIB:.3g} MiB, more than the trial's RSS "
                     f"({own / MIB:.3g} MiB).")
        axes[1][0].set_title("⚠ shared node? system used moved more than the trial's RSS", fontsize=7,
                             color="tab:red", loc="left")
    shaded = " (shaded: evaluation)" if spans else ""
    axes[1][0].set_xlabel(f"t since the trial's sampler started, s (dotted: an epoch begins){shaded}")
    figure.suptitle(title, fontsize=11)
    return _save(figure, out, notes=notes)


def estimate_vs_measured(trials, fits, out):
    """Measured footprint against the estimate, colour and marker by the strongest categorical factor, one
    panel per level of the next, with y = x (a perfect estimate) and each calibrated fit footprint = a + b x
    drawn over the predictions it was fitted on. A reason (no file) when no ok trial has an estimate.

    `fits` is what estimate.calibrate returns (a DataFrame or a list of dicts with dataset, host,
    a_bytes, b); it may be empty.
    """
    rows = ok_trials(trials)
    rows = rows[rows["predicted_bytes"] > 0]
    if rows.empty:
        return "no ok trial has an estimate: nothing to compare"
    fits = pd.DataFrame(fits)
    factor, facet = _colour_and_facet(rows, "rss_footprint", factor_columns(trials))
    levels = sorted(set(_levels(rows[factor]))) if factor else []
    colours, markers = _styles(levels)
    panels, left_out = _panels(rows, facet)
    figure, axes = _new_figure(1, len(panels))
    top = max(rows["predicted_bytes"].max(), rows["rss_footprint"].max()) / MIB
    for column, (title, mine) in enumerate(panels):
        ax = axes[0][column]
        groups = mine.groupby(_levels(mine[factor]), sort=True) if factor else [(None, mine)]
        for level, these in groups:
            ax.scatter(these["predicted_bytes"] / MIB, these["rss_footprint"] / MIB, s=16, alpha=0.8,
                       color=colours.get(level, "tab:blue"), marker=markers.get(level, "o"),
                       label=f"{factor} {level}" if factor else "ok trials")
        for _, fit in (fits.iterrows() if not fits.empty else []):
            fitted = mine[mine["dataset"] == fit["dataset"]]
            if "host" in mine.columns and "host" in fit.index:
                fitted = fitted[fitted["host"] == fit["host"]]
            if fitted.empty:
                continue
            x = np.linspace(fitted["predicted_bytes"].min(), fitted["predicted_bytes"].max(), 2)
            ax.plot(x / MIB, (fit["a_bytes"] + fit["b"] * x) / MIB, color="black", linewidth=1,
                    linestyle="-.", label=f"fit {fit['dataset']} @ {fit.get('host', '?')}")
        ax.plot([0, top], [0, top], color="grey", linestyle="--", linewidth=1, label="measured = estimate")
        ax.set_xlabel("estimate (predicted_bytes), MiB")
        if column == 0:
            ax.set_ylabel("measured footprint (peak − baseline), MiB")
        if title:
            ax.set_title(title, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    more = f", first {MAX_PANELS} of {MAX_PANELS + left_out} {facet}s" if left_out else ""
    figure.suptitle(f"Estimate against measurement (ok trials{more})", fontsize=11)
    return _save(figure, out, factor=factor, levels=levels, facet=facet)


def footprint_label(trials):
    """What a trial's footprint is, for an axis: peak − baseline for memsweep's trainer; a user's program
    has no ready point (baseline 0), so its footprint is its process tree's whole peak."""
    names = {load_trainer_name(t) for t in trials["trainer"]} if "trainer" in trials.columns else set()
    programs = bool(names - {BUILTIN_TRAINER})
    if not programs:
        return "footprint (peak − baseline)"
    if BUILTIN_TRAINER in names:
        return "footprint (peak − baseline; programs: peak)"
    return "peak (the program's process tree)"


def counter_rate_columns(table):
    """(columns, unit) the counters figure draws: per training step when every trial with a count has
    steps to divide by, else per second of wall time (a program that reports no epochs has no steps), so
    that no trial's counters are left out and one unit holds in every panel."""
    steps = [c for c in table.columns if str(c).endswith(" per step")]
    seconds = [c for c in table.columns if str(c).endswith(" per second")]
    counts = [c[:-len(" per step")] for c in steps if c[:-len(" per step")] in table.columns]
    rates = counts or steps + seconds  # a table of rates alone: where any rate is known
    has_count = table[rates].notna().any(axis=1) if rates else pd.Series(False, index=table.index)
    has_steps = table[steps].notna().any(axis=1) if steps else pd.Series(False, index=table.index)
    if not seconds or (steps and bool(has_steps[has_count].all())):
        return steps, "step"
    return seconds, "second"


def counters_vs_batch(table, out):
    """Each counter per training step (or per second, counter_rate_columns) against batch size, one panel
    per counter, one line per dataset (and per trainer, and per level of each categorical free parameter,
    when the table has more than one: counters.line_keys); against the trial's row when no trial has a
    batch size. A reason (no file) when no counter was recorded.

    `table` is the counters table: one row per trial with `dataset`, `batch_size` and `<counter> per
    step` and `<counter> per second` columns per recorded counter (see counters.counters_per_step);
    several rows of one line at one batch size (repeats, other hyperparameters) are drawn as their mean
    with a bar from their smallest to their largest value: a range of counts, which cannot go below zero
    as mean ± SD of skewed counts does.
    """
    columns, unit = counter_rate_columns(table)
    if table.empty or not columns:
        return "no counters were recorded"
    table = table.copy()
    by_batch = pd.to_numeric(table["batch_size"], errors="coerce").notna().any()
    x = "batch_size" if by_batch else "trial"
    if not by_batch:
        table["trial"] = np.arange(1, len(table) + 1)
    table["dataset"] = table["dataset"].map(lambda d: NO_DATASET if d is None or pd.isna(d) or d == "" else d)
    shown = columns[:6]  # beyond six panels the labels no longer fit 800 x 500
    across = min(3, len(shown))
    down = (len(shown) + across - 1) // across
    figure, axes = _new_figure(down, across)
    keys = counters.line_keys(table)
    line_of = table["dataset"].astype(str)
    for key in keys[1:]:  # the trainer by its name, a parameter as "arch LSTM"
        prefix = "" if key == "trainer" else f"{key} "
        line_of = line_of + " " + prefix + _levels(table[key])
    names = sorted(line_of.unique())
    colours, markers = _styles(names)
    for index, column in enumerate(shown):
        ax = axes[index // across][index % across]
        for line, mine in table.groupby(line_of, sort=True):
            values = mine[mine[column] >= 0].groupby(x)[column]
            mean, low, high = values.mean(), values.min(), values.max()
            ax.errorbar(mean.index, mean.to_numpy(),
                        yerr=np.vstack([(mean - low).to_numpy(), (high - mean).to_numpy()]),
                        fmt=markers[line] + "-", markersize=3, capsize=2, linewidth=1, color=colours[line],
                        label=line)
        ax.set_title(column, fontsize=8)
        ax.set_xlabel("batch size" if by_batch else "trial (row of the counters table)", fontsize=8)
        if by_batch:
            _set_xscale(ax, "batch_size", table["batch_size"])
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=7)
    for index in range(len(shown), down * across):
        axes[index // across][index % across].set_axis_off()
    axes[0][0].legend(fontsize=7)
    against = "batch size" if by_batch else "trial"
    figure.suptitle(f"Counters per {'training step' if unit == 'step' else 'second'} against {against} "
                    "(mean; bars: min–max of the trials)", fontsize=11)
    return _save(figure, out, factor=" and ".join(keys), levels=names, bars=_error_bars(figure))


def peak_vs_batch_by_trainer(peaks, out, reference=None):
    """Peak RSS against batch size, one colour (a line through the mean at each batch size, a marker per
    configuration) per trainer, one panel per dataset. The colour stays the trainer's whatever factor is
    strongest, since telling trainers apart is the figure's question. A reason (no file) without pairs.

    `peaks` is trainers.peaks_by_trainer(pairs): one row per (trainer, configuration) with `trainer`,
    `dataset`, `batch_size` and `peak` (bytes, the mean over the configuration's ok repeats), the paired
    configurations only, so that every line covers the same hyperparameters.
    """
    if peaks.empty:
        return "no configuration was trained by two trainers: nothing to compare"
    datasets = sorted(peaks["dataset"].unique())
    shown = datasets[:3]  # beyond three panels the labels no longer fit 800 x 500
    figure, axes = _new_figure(1, len(shown), sharey=False)
    names = sorted(peaks["trainer"].unique(), key=lambda name: (name != reference, name))
    colours, markers = _styles(names)
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
        _set_xscale(ax, "batch_size", peaks["batch_size"])
        ax.set_xlabel("batch size")
        ax.set_title(dataset, fontsize=10)
        ax.grid(True, alpha=0.3)
        if column == 0:
            ax.set_ylabel("peak RSS, MiB")
        ax.legend(fontsize=7)
    more = f" (first {len(shown)} of {len(datasets)} datasets)" if len(shown) < len(datasets) else ""
    figure.suptitle(f"Peak RSS against batch size per trainer, paired configurations{more}", fontsize=11)
    return _save(figure, out, factor="trainer", levels=names, facet="dataset")


def per_step_columns(table):
    """The counter-per-step columns of a counters table."""
    return [c for c in table.columns if str(c).endswith(" per step")]


def _colours():
    # grey is left out: it is the colour of reference lines, not of a level
    return ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
            "tab:olive", "tab:cyan", "navy"] * 10


# A search's figure: one panel per search (configuration × limit), at most this many (3 across, 2 down).
MAX_SEARCH_PANELS = 6
SEARCH_STYLES = {"fits": ("o", "tab:green", "fits"), "does not fit": ("X", "tab:red", "does not fit"),
                 "other": ("s", "tab:purple", "failed otherwise")}


def search_capacity(searches, trials, out, setups=None):
    """Peak RSS against the axis value for each search (a row of load's `searches`), one panel per search in
    the order of the files, configurations and limits (the first MAX_SEARCH_PANELS; the title and a note say
    how many were left out): the search's trial rows (its `search` in its file) as points, those that fit
    (tables.probe_outcomes: ok within the limit) and those that did not (over budget, OOM-killed, an
    out-of-memory the program reported, ok past the limit) in markers of their own, and the rest (failed
    otherwise) in a third; a row that did not fit and has no peak is drawn at the limit. Then the fitted line
    a + b·x (fit_a_mib, fit_b_mib) where the search has one, the limit as a horizontal dashed line and the
    answer (fits) as a vertical dotted one. The axis stays linear, so that the fitted line is straight. A reason
    (no file) when there is no search.

    `setups`: {search index in `searches`: text} for the panels' titles (tables.search_setups)."""
    if searches.empty:
        return "no search in the results files"
    order = searches.assign(_file=pd.Categorical(searches["file"], categories=list(dict.fromkeys(searches["file"]))))
    order = order.sort_values(["_file", "configuration", "limit_index", "search"], kind="stable")
    shown = order.iloc[:MAX_SEARCH_PANELS]
    left_out = len(order) - len(shown)
    across = min(3, len(shown))
    down = (len(shown) + across - 1) // across
    figure, axes = _new_figure(down, across)
    labelled = set()
    for index, (key, search) in enumerate(shown.iterrows()):
        ax = axes[index // across][index % across]
        rows = tables.search_trials(trials, search)
        limit = float(search["limit"]) / MIB
        values = pd.to_numeric(rows["axis_value"], errors="coerce")
        peaks = pd.to_numeric(rows["rss_peak"], errors="coerce") / MIB
        outcome = tables.probe_outcomes(rows) if len(rows) else pd.Series(dtype=object)
        for kind, (marker, colour, name) in SEARCH_STYLES.items():
            mine = (outcome == kind) & (values >= 0)
            if not mine.any():
                continue
            y = peaks[mine]
            if kind == tables.DOES_NOT_FIT:
                y = y.fillna(limit)  # killed before its peak was read: at least the limit
            y = y.dropna()
            ax.scatter(values[y.index], y, marker=marker, color=colour, s=28, zorder=3, gid=kind,
                       label=name if kind not in labelled else None)
            labelled.add(kind)
        xs = [float(v) for v in values[values >= 0]]
        xs += [float(search[c]) for c in ("fits", "does_not_fit") if search[c] >= 0]
        if search["fit_a_mib"] >= 0 and search["fit_b_mib"] >= 0 and xs:
            x = np.linspace(min(xs), max(xs), 50)
            ax.plot(x, search["fit_a_mib"] + search["fit_b_mib"] * x, color="black", linewidth=1, gid="fit",
                    linestyle="-.", label="fit a + b·x" if "fit" not in labelled else None)
            labelled.add("fit")
        ax.axhline(limit, color="grey", linestyle="--", linewidth=1, gid="limit",
                   label="limit" if "limit" not in labelled else None)
        labelled.add("limit")
        if search["fits"] >= 0:
            ax.axvline(float(search["fits"]), color="tab:green", linestyle=":", linewidth=1.2, gid="answer",
                       label="answer" if "answer" not in labelled else None)
            labelled.add("answer")
        answer = f"{int(search['fits'])}{'' if int(search['fits_verified']) == 1 else ' (unverified)'}" \
            if search["fits"] >= 0 else "none"
        setup = (setups or {}).get(key, "")
        ax.set_title(f"#{int(search['configuration']) + 1} {setup}\n≤ {tables.size_text(search['limit'])}: "
                     f"{answer} ({search['status']})", fontsize=7)
        ax.set_xlabel(str(search["axis"]), fontsize=7)
        if index % across == 0:
            ax.set_ylabel("peak RSS, MiB", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(True, alpha=0.3)
    for index in range(len(shown), down * across):
        axes[index // across][index % across].set_axis_off()
    handles, names = [], []
    for ax in figure.axes:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            handles.append(handle)
            names.append(name)
    if handles:
        axes[0][0].legend(handles, names, fontsize=6)
    notes = []
    more = ""
    if left_out:
        more = f" (first {len(shown)} of {len(order)} searches)"
        notes.append(f"The figure shows the first {len(shown)} of {len(order)} searches (configurations × limits); "
                     f"the table lists them all.")
    figure.suptitle(f"Peak RSS against the searched value{more}", fontsize=10)
    panels = [_search_panel(axes[i // across][i % across], int(search)) for i, search in enumerate(shown["search"])]
    return _save(figure, out, facet="search", levels=[int(s) for s in shown["search"]], notes=notes,
                 panels=panels)


def _search_panel(ax, search):
    """What a search panel holds, read from its artists: {search, kind: [(x, y MiB)] for each kind of point,
    fit: [(x, y)] of the fitted line's ends or None, limit: MiB, answer: x or None}."""
    panel = {"search": search, "fit": None, "limit": None, "answer": None}
    for kind in SEARCH_STYLES:
        panel[kind] = sorted((float(x), float(y)) for c in ax.collections if c.get_gid() == kind
                             for x, y in c.get_offsets())
    for line in ax.lines:
        xs, ys = line.get_xdata(), line.get_ydata()
        if line.get_gid() == "fit":
            panel["fit"] = [(float(xs[0]), float(ys[0])), (float(xs[-1]), float(ys[-1]))]
        elif line.get_gid() == "limit":
            panel["limit"] = float(ys[0])
        elif line.get_gid() == "answer":
            panel["answer"] = float(xs[0])
    return panel


# The node-memory figure draws at most this many hosts (one colour each); the table lists them all.
MAX_HOST_LINES = 10


def node_memory_by_host(points, out):
    """The node's used memory (MiB) against wall-clock seconds since the first sample, one line per host (the
    first MAX_HOST_LINES hosts by name; the title and a note say how many were left out), from
    hosts.node_samples: `host`, `seconds`, `used` (bytes), each host's samples already thinned. A reason (no
    file) when no sample could be placed in time."""
    if points is None or points.empty:
        return "no sample of a trial with a known host and start time"
    names = sorted(set(points["host"]))
    shown = names[:MAX_HOST_LINES]
    colours, _ = _styles(shown)
    figure, axes = _new_figure(1, 1)
    ax = axes[0][0]
    for host in shown:
        mine = points[points["host"] == host].sort_values("seconds", kind="stable")
        ax.plot(mine["seconds"].to_numpy(), mine["used"].to_numpy() / MIB, color=colours[host], linewidth=1,
                label=host, gid="host")
    ax.set_xlabel("wall-clock time since the first sample, s")
    ax.set_ylabel("node memory used, MiB")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, title="host", title_fontsize=7)
    notes = []
    more = ""
    if len(shown) < len(names):
        more = f" (first {len(shown)} of {len(names)} hosts)"
        notes.append(f"The figure shows the first {len(shown)} of {len(names)} hosts by name; the table lists "
                     "them all.")
    origin = points.attrs.get("origin")
    since = ""
    if origin is not None:
        since = ", from " + pd.Timestamp(origin, unit="s", tz="UTC").strftime("%Y-%m-%d %H:%M:%S UTC")
    figure.suptitle(f"Node memory used over time per host{more}{since}", fontsize=11)
    lines = {line.get_label(): [(float(x), float(y)) for x, y in zip(line.get_xdata(), line.get_ydata())]
             for line in ax.lines if line.get_gid() == "host"}
    return _save(figure, out, factor="host", levels=shown, notes=notes, lines=lines)
