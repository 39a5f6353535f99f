"""`report`: one or more results files turned into report.md, report.html, PNG figures and calibration.json.

The report says what the numbers say and no more: every statistic comes with its interval and a verdict,
and a line lists what is not distinguishable from noise. Content is built once (document.Document) and
rendered twice, so the Markdown and the HTML page cannot disagree.
"""

import os
import signal

from ._deps import require

require("pandas")

import pandas as pd  # noqa: E402

from . import counters, drivers, estimate, figures, hosts, metrics, stats, tables, trainers  # noqa: E402
from .derived import param_columns, standing_rows  # noqa: E402
from .document import Document, cell  # noqa: E402
from .load import load  # noqa: E402
from .old_schemas import BUILTIN_TRAINER  # noqa: E402

MIB = 2 ** 20
# At most this many trials get `memsweep estimate`'s parts (one process per trial).
COMPONENT_TRIALS = 6
# The statistics' targets as a reader knows them.
TARGETS = {"rss_footprint": "footprint", "sys_used_mean": "system used"}


class InputError(ValueError):
    """Bad input found while reporting (an unknown trial id, an unreadable paper table); names what."""


def _mib(series):
    return series / MIB


def files_table(results):
    files = results.files
    shown = pd.DataFrame({
        "file": files["file"],
        "sweep": files["sweep_name"],
        "part": files["part"].replace("", "-"),
        "ranks": files["ranks"],
        "hosts": [", ".join(sorted(set(h))) if isinstance(h, (list, tuple)) else h for h in files["hosts"]],
        "started": files["start_time"],
        "memsweep": files["memsweep_version"],
        "trial rows": files["trials_rows"],
        "sample rows": files["samples_rows"],
    })
    return shown


def process_end(end_cause, end_signal):
    """How a trial's process ended where that says more than its status, as `memsweep summary` shows it:
    "killed: oom, SIGKILL", "no_result"; "" for a process that exited, none started, or a file before schema 3."""
    cause = end_cause if isinstance(end_cause, str) else ""
    number = 0 if pd.isna(end_signal) else int(end_signal)
    if number > 0:
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed: {cause + ', ' if cause else ''}{name}"
    return "" if cause == "exited" else cause


def not_ok_table(trials):
    """The final rows that are not ok, and the last row of each trial without a final one (killed or interrupted
    and not run to a result since: memsweep summary lists it too), with their messages, and how their process
    ended when any says; then, when some trial of `trials` is a program's or has free parameters, `trainer` and
    the parameters."""
    final = trials["final"].astype(bool)
    failed = trials[(final & (trials["status"] != "ok")) | (standing_rows(trials) & ~final)]
    columns = ["file", "trial_number", "trial_id", "dataset", "model", "optimizer", "learning_rate", "batch_size",
               "status", "message"]
    shown = failed[[c for c in columns if c in failed.columns]].copy()
    # the number `memsweep summary` and the tables above show the trial under
    shown = shown.rename(columns={"trial_number": "trial"})
    ends = [process_end(cause, number) for cause, number in
            zip(failed.get("end_cause", pd.Series("", index=failed.index)),
                failed.get("end_signal", pd.Series(0, index=failed.index)))]
    if any(ends):
        shown.insert(shown.columns.get_loc("message"), "process end", ends)
    if _has_programs(trials):
        shown["trainer"] = failed["trainer"].astype(str)
    for column in param_columns(trials).values():
        if trials[column].notna().any():
            shown[column] = failed[column]
    return shown


def _has_programs(trials):
    """Whether some trial was trained by a program (a trainer other than memsweep's own)."""
    return "trainer" in trials.columns and bool(set(trials["trainer"].astype(str)) - {BUILTIN_TRAINER})


def _paper_layout(table, extra=()):
    """The paper table with the columns a reader needs, MiB to one decimal, mean ± SD as one cell; then the
    `extra` columns of the table (tables.extra_columns: model, optimizer, channels, shape, the trainer, the free
    parameters) as they are."""
    def with_spread(mean, std):
        return [("" if pd.isna(m) else f"{m:.1f}" + ("" if pd.isna(s) else f" ± {s:.1f}"))
                for m, s in zip(table[mean], table[std])]

    def listed(values):
        return ", ".join(str(v) for v in values) if isinstance(values, (list, tuple)) else ""

    # the configuration's trials by the number `memsweep summary` shows them under (load's trial_number), ids beside
    shown = pd.DataFrame({"trial": table["trial_numbers"].map(listed), "id": table["trial_ids"].map(listed)})
    if "paper_trial" in table.columns:
        shown["paper row"] = table["paper_trial"].map(cell)
    shown["lr"] = table["learning_rate"].map(lambda v: "" if pd.isna(v) else f"{v:g}")
    shown["epochs"] = table["epochs"]
    shown["batch"] = table["batch_size"]
    shown["hidden"] = table["hidden"]
    shown["ok/runs"] = [f"{ok}/{n}" for ok, n in zip(table["n_ok"], table["n"])]
    if "paper_memory_used_mb" in table.columns:
        shown["paper used MB"] = table["paper_memory_used_mb"].map(lambda v: "" if pd.isna(v) else f"{v:.1f}")
    shown["used MB"] = with_spread("memory_used_mb", "memory_used_mb_std")
    shown["rss mean"] = with_spread("rss_mean_mb", "rss_mean_mb_std")
    shown["rss peak"] = with_spread("rss_peak_mb", "rss_peak_mb_std")
    shown["peak−base"] = with_spread("rss_footprint_mb", "rss_footprint_mb_std")
    shown["predicted"] = table["predicted_mb"].map(lambda v: "" if pd.isna(v) else f"{v:.1f}")
    for column in extra:
        shown[column] = [cell(v) for v in table[column]]
    return shown


def _driver_lines(findings):
    """One sentence per ranked term of each fit, the top-ranked first: what it does, with its interval."""
    lines = []
    for _, row in findings.iterrows():
        where = f"{row['scope']}, {TARGETS.get(row['target'], row['target'])}"
        share = "" if pd.isna(row["share"]) else f"partial η² {row['share']:.2f}"
        p = "" if pd.isna(row["p"]) else f"p {row['p']:.3g}"
        figures_ = ", ".join(x for x in (share, p) if x)
        # A one-part sentence already carries its verdict; a term of several
        # parts gets the term's own.
        said = row["sentence"].endswith("(not distinguishable from noise)")
        verdict = "; as a whole, not distinguishable from noise" if row["verdict"] == stats.NOISE and not said else ""
        lines.append(f"{where}: #{int(row['rank'])} {row['term']} ({figures_}): {row['sentence']}{verdict}")
    return lines


def _verdict_lines(correlations):
    """Plain sentences: what the rank correlations say with their interval, then what cannot be told from noise."""
    lines = []
    noise = []
    for _, row in correlations.iterrows():
        where = f"{row['scope']}, {TARGETS.get(row['target'], row['target'])}"
        if row["verdict"].startswith("larger"):
            name = figures.LABELS.get(row["parameter"], row["parameter"])
            interval = _interval(row["ci_low"], row["ci_high"]) or "(no interval at |rho| = 1)"
            lines.append(f"{where}: {name}: Spearman rho {row['rho']:.2f} {interval}, p {row['p']:.3g}, "
                         f"n {int(row['n'])} -> {row['verdict']}")
        elif row["verdict"] == "not distinguishable from noise":
            noise.append(f"{figures.LABELS.get(row['parameter'], row['parameter'])} ({where})")
    if noise:
        lines.append("not distinguishable from noise (rank correlation's 95% interval includes 0): " +
                     "; ".join(noise))
    return lines


def _interval(low, high):
    return "" if pd.isna(low) or pd.isna(high) else f"[{low:.2f}, {high:.2f}]"


def _correlation_table(frame):
    shown = frame[["scope", "target", "parameter", "n", "rho", "ci_low", "ci_high", "p", "verdict"]].copy()
    shown["95% CI"] = [_interval(lo, hi) for lo, hi in zip(shown.pop("ci_low"), shown.pop("ci_high"))]
    return shown[["scope", "target", "parameter", "n", "rho", "95% CI", "p", "verdict"]]


def _anova_table(terms):
    shown = pd.DataFrame({
        "scope": terms["scope"], "target": terms["target"].map(lambda t: TARGETS.get(t, t)), "term": terms["term"],
        "df": terms["df"], "SS (MiB²)": terms["sum_sq"] / MIB ** 2, "F": terms["F"], "p": terms["p"],
        "partial η²": terms["partial_eta2"], "R²": terms["r2"], "n": terms["n"]})
    kept = terms["note"].fillna("") == ""
    return shown[kept]


def _dropped_notes(terms, notes):
    """One line per fit: the terms it could not identify, then the choices it made (log2 or linear)."""
    lines = []
    dropped = terms[terms["note"].fillna("") != ""]
    for (scope, target, note), group in dropped.groupby(["scope", "target", "note"], sort=False):
        lines.append(f"{scope}, {TARGETS.get(target, target)}: {', '.join(group['term'])}: {note}")
    for scope, target, note in notes:
        lines.append(f"{scope}, {TARGETS.get(target, target)}: {note}")
    return lines


def _varied_parameters(trials):
    """(hyperparameters that vary within some dataset's ok trials, those that do not): a figure of memory
    against a value that never changes shows nothing, and each one costs a large part of a report's time.
    The built-in fields (figures.LABELS), then the free parameters that are numbers (`bptt`, `emsize`)."""
    ok = tables.ok_rows(trials)
    varied, constant = [], []
    for parameter in list(figures.LABELS) + tables.numeric_param_columns(trials):
        values = ok[["dataset", parameter]].dropna()
        if values.empty:  # blank for every trial (a program's file leaves it unset): nothing to plot against
            constant.append(parameter)
            continue
        spread = values.groupby("dataset")[parameter].nunique()
        (varied if (spread > 1).any() else constant).append(parameter)
    return varied, constant


def _chosen_trials(trials, asked):
    """The trials to plot over time: those asked for, else each dataset's largest ok footprint."""
    if asked:
        known = set(trials["trial_id"])
        unknown = [t for t in asked if t not in known]
        if unknown:
            raise InputError(f"--trials: no trial {', '.join(unknown)} in the results files")
        return list(asked)
    ok = tables.ok_rows(trials)
    if ok.empty:
        return []
    largest = ok.sort_values("rss_footprint", ascending=False).groupby("dataset", sort=True).head(1)
    return list(largest["trial_id"])


def _show_figure(doc, drawn, alt, written):
    """The figure in the document with the notes drawn on it (a shared node), or a line saying why there is
    none: a figure with nothing to draw is not written (figures.py returns the reason instead)."""
    if not isinstance(drawn, figures.Drawn):
        doc.paragraph(f"No figure of {alt}: {drawn}.", note=True)
        return
    doc.image(drawn.path, alt)
    written.append(drawn.path)
    # The same warning on every figure of a sweep (a shared node) is said once, under the first.
    for note in drawn.notes:
        if ("paragraph", True, note) not in doc.blocks:
            doc.paragraph(note, note=True)


def _estimate_section(doc, results, trials, out_dir, chosen, figure_paths):
    # memsweep's estimate is of its own trainer's footprint; a program's predicted_bytes is the Q&A rule on
    # the counts it reported, beside a footprint that is its whole peak: not the same question.
    programs = trials[trials["trainer"].map(trainers.trainer_name) != trainers.BUILTIN_TRAINER] \
        if "trainer" in trials.columns else trials.iloc[0:0]
    trials = trials.drop(programs.index)
    ok = tables.ok_rows(trials)
    errors = estimate.estimate_errors(ok)
    doc.heading("The estimate against the measurement")
    doc.paragraph("ratio = measured footprint (peak − baseline) / estimate; error = estimate − footprint. "
                  "The estimate is memsweep's own (docs/estimate.md): the trial's oneDNN plans, dry.")
    if not programs.empty:
        doc.paragraph(_programs_left_out(programs), note=True)
    if not errors.empty:
        summary = errors.groupby("dataset").agg(
            trials=("ratio", "size"), ratio_median=("ratio", "median"),
            ratio_q1=("ratio", lambda r: r.quantile(0.25)), ratio_q3=("ratio", lambda r: r.quantile(0.75)),
            error_median_mib=("error_bytes", lambda e: e.median() / MIB)).reset_index()
        doc.table(summary)
    fits = estimate.calibrate(trials)
    calibration_path = os.path.join(out_dir, "calibration.json")
    written = estimate.save_calibration(fits, calibration_path)
    doc.paragraph(f"Calibrated fits, footprint ≈ a + b × estimate, per dataset and host ({written} written to "
                  "`calibration.json` for `memsweep plan`):")
    if not fits.empty:
        shown = fits.copy()
        shown["a (MiB)"] = shown.pop("a_bytes") / MIB
        doc.table(shown[["dataset", "host", "a (MiB)", "b", "n", "r2", "note"]])
    picture = figures.estimate_vs_measured(trials, fits, os.path.join(out_dir, "estimate-vs-measured.png"))
    _show_figure(doc, picture, "estimate against measured footprint", figure_paths)
    parts = estimate.estimate_components(results, trial_ids=chosen[:COMPONENT_TRIALS])
    if not parts.empty:
        doc.paragraph("The estimate's parts for the trials plotted over time, beside the measured footprint:")
        shown = parts[["trial_id", "dataset", "part", "bytes", "rss_footprint", "share_of_footprint"]].copy()
        shown["MiB"] = shown.pop("bytes") / MIB
        shown["footprint MiB"] = shown.pop("rss_footprint") / MIB
        doc.table(shown[["trial_id", "dataset", "part", "MiB", "footprint MiB", "share_of_footprint"]])
    for note in parts.attrs.get("notes", []):
        doc.paragraph(note, note=True)
    return calibration_path


def _programs_left_out(programs):
    """Why the program trials are not in the estimate's tables, as their rows say: a `predicted_bytes` exists
    only for those that reported their model's size (an events line `{"parameters": N, ...}`)."""
    reported = programs[(programs["predicted_bytes"] > 0) | programs.get(
        "parameters", pd.Series(float("nan"), index=programs.index)).notna()]
    names = ", ".join(trainers.trainers(programs))
    said = (f"{len(programs)} trial(s) of programs ({names}) are left out here and of `calibration.json`: "
            "memsweep's estimate is of its own trainer, and a program's footprint is its whole process tree's "
            "peak")
    if reported.empty:
        return said + "; none of them reported its model's size, so none has an estimate."
    return (said + f"; {len(reported)} of them reported its model's size, and their `predicted_bytes` is the Q&A "
            "rule on it, not memsweep's estimate of the program.")


def _program_notes(doc, trials):
    """What the trials of programs need a reader to know: the lines memsweep could not read."""
    if "bad_event_lines" not in trials.columns:
        return
    bad = trials[trials["bad_event_lines"] > 0]
    if not bad.empty:
        doc.paragraph(f"{len(bad)} trial attempt(s) wrote {int(bad['bad_event_lines'].sum())} line(s) to memsweep's "
                      "events channel that were not understood (`bad_event_lines`): their program and memsweep "
                      "disagree on the events format, and what those lines said is missing from their rows: "
                      + ", ".join(sorted(set(bad["trial_id"]))) + ".", note=True)


def gpu_memory_table(trials):
    """The trials with any GPU memory figure (schema 7): NVML's peak, where it came from and on which devices,
    and the program's own PyTorch peaks, in MiB. Empty when no trial has one (no NVIDIA driver, CPU trials)."""
    figures = [c for c in ("gpu_peak", "torch_reserved_peak", "torch_allocated_peak") if c in trials.columns]
    if not figures:
        return pd.DataFrame()
    has = trials[figures].notna().any(axis=1)
    shown = trials.loc[has, ["trial_id", "trainer", "batch_size", *figures, "gpu_peak_source", "gpu_devices"]].copy()
    for column in figures:
        shown[column] = shown[column] / MIB
    return shown.rename(columns={"gpu_peak": "NVML peak MiB", "torch_reserved_peak": "torch reserved MiB",
                                 "torch_allocated_peak": "torch allocated MiB", "gpu_peak_source": "source",
                                 "gpu_devices": "devices"}).reset_index(drop=True)


def _gpu_section(doc, trials):
    """GPU memory, only where some trial has it."""
    table = gpu_memory_table(trials)
    if table.empty:
        return
    doc.heading("GPU memory")
    doc.paragraph("NVML's peak: the largest GPU memory of the trial's process tree (source `tree`), or the devices' "
                  "rise above the trial's start where the driver gave no per-process figures (`device_delta`); it "
                  "includes the CUDA context. The torch columns are the program's own `max_memory_reserved()` and "
                  "`max_memory_allocated()` (its `{\"gpu\": ...}` events line). docs/runner.md, \"GPU memory\".")
    doc.table(table)


def _trainers_section(doc, trials, out_dir, written):
    """Trainers compared on the same hyperparameters: the pairs, the difference's slope against batch size in
    one sentence per trainer pair, dataset and figure, and peak against batch size per trainer."""
    pairs = trainers.paired_configurations(trials)
    reference = pairs.attrs["reference"]
    others = [t for t in trainers.trainers(trials) if t != reference]
    doc.heading("Trainers compared")
    doc.paragraph(f"Trials of {', '.join(others)} beside {reference}'s on identical hyperparameters (every field "
                  "of the trial's definition but its trainer, seed and repeat, and its free parameters), each "
                  "configuration's ok repeats averaged; difference = trainer − reference, MiB. A program's peak "
                  "is the sampled peak of its whole process tree's summed RSS and its footprint is that whole "
                  "peak (a program has no ready point: baseline 0); memsweep's footprint is its peak above the "
                  "baseline of a process that has loaded its libraries and the dataset. Whether a difference is "
                  "about constant: the least-squares slope of the difference against batch size within "
                  "configurations that differ only in batch size, 95% interval by Student's t.")
    slopes = trainers.difference_slopes(pairs)
    peak = slopes[slopes["figure"] == "peak"]
    doc.bullets(peak["sentence"].tolist())
    if pairs.empty:
        doc.paragraph("No configuration has an ok trial of two trainers: nothing to compare.", note=True)
    else:
        doc.table(_pairs_layout(pairs))
        shown = pd.DataFrame({
            "trainer": slopes["trainer"], "dataset": slopes["dataset"], "figure": slopes["figure"],
            "n": slopes["n"], "batch": [f"{lo}–{hi}" for lo, hi in zip(slopes["batch_min"], slopes["batch_max"])],
            "mean diff MiB": slopes["mean_difference"] / MIB, "SD MiB": slopes["sd_difference"] / MIB,
            "slope MiB/example": slopes["slope"] / MIB,
            "95% CI": [_interval_per_example(lo, hi) for lo, hi in zip(slopes["ci_low"], slopes["ci_high"])],
            "verdict": slopes["verdict"]})
        doc.table(shown)
    alone = {t: n for t, n in pairs.attrs["unpaired"].items() if n}
    if alone:
        doc.paragraph("Configurations with ok trials of one side only (not compared): " +
                      ", ".join(f"{t} {n}" for t, n in sorted(alone.items())) + ".", note=True)
    drawn = figures.peak_vs_batch_by_trainer(trainers.peaks_by_trainer(pairs),
                                             os.path.join(out_dir, "trainers-peak-vs-batch.png"), reference)
    _show_figure(doc, drawn, "peak RSS against batch size per trainer", written)


def _interval_per_example(low, high):
    return "" if pd.isna(low) or pd.isna(high) else f"[{low / MIB:+.3g}, {high / MIB:+.3g}]"


def _pairs_layout(pairs):
    """The paired configurations as a reader sees them: MiB, repeats as "n ref/n trainer"; model, optimizer,
    memory plan and channels only when they tell rows apart."""
    shown = pd.DataFrame({"trainer": pairs["trainer"], "dataset": pairs["dataset"]})
    for column in ("model", "optimizer", "memory_plan"):
        if column in pairs.columns and pairs[column].nunique() > 1:
            shown[column] = pairs[column]
    shown["lr"] = pairs["learning_rate"].map(lambda v: "" if pd.isna(v) else f"{v:g}")
    shown["epochs"] = pairs["epochs"]
    shown["batch"] = pairs["batch_size"]
    shown["hidden"] = pairs["hidden"]
    if (pairs["channels"] != "").any():
        shown["channels"] = pairs["channels"]
    for column in pairs.attrs.get("param_columns", {}).values():
        if column in pairs.columns and pairs[column].notna().any():
            shown[column] = [cell(v) for v in pairs[column]]
    # With one trainer beside the reference the columns name both; with several, "trainer" is the row's.
    reference = pairs.attrs.get("reference", "reference")
    names = sorted(set(pairs["trainer"]))
    other = names[0] if len(names) == 1 else "trainer"
    shown[f"runs {reference}/{other}"] = [f"{a}/{b}" for a, b in zip(pairs["n_reference"], pairs["n_trainer"])]
    for name in ("peak", "footprint"):
        shown[f"{name} {reference}"] = pairs[f"{name}_reference"] / MIB
        shown[f"{name} {other}"] = pairs[f"{name}_trainer"] / MIB
        shown[f"{name} {other} − {reference}"] = pairs[f"{name}_difference"] / MIB
    return shown


def _capacity_layout(table):
    """The capacity table as a reader reads it: the configuration (its number in the plan and id), what sets it
    apart, the limit in MiB or GiB, the axis, the answer (verified: trained its full epochs), the smallest value
    seen not to fit, the peak's MiB per unit of the axis, the trials and the status; the file when several."""
    def answer(value, verified):
        if pd.isna(value):
            return "none"
        return f"{int(value)} ({'verified' if verified else 'unverified'})"

    shown = pd.DataFrame({"configuration": [f"#{n} {i}" for n, i in zip(table["configuration"],
                                                                        table["configuration_id"])]})
    if table["file"].nunique() > 1:
        shown.insert(0, "file", table["file"].map(os.path.basename))
    shown["setup"] = table["setup"]
    shown["limit"] = table["limit"].map(tables.size_text)
    shown["axis"] = table["axis"]
    shown["answer"] = [answer(v, ok) for v, ok in zip(table["answer"], table["verified"])]
    shown["smallest not fitting"] = ["" if pd.isna(v) else str(int(v)) for v in table["does_not_fit"]]
    shown["MiB per unit"] = ["" if pd.isna(v) else cell(float(v)) for v in table["mib_per_unit"]]
    if table["predicted"].notna().any():
        shown["estimate's answer"] = ["" if pd.isna(v) else str(int(v)) for v in table["predicted"]]
    shown["trials"] = table["trials"]
    shown["status"] = table["status"]
    return shown


def _capacity_section(doc, results, trials, out_dir, written):
    """The searches (schema 6): per configuration and memory limit, the largest axis value that trained within
    the limit, and a figure of the searches' trials."""
    searches = results.searches
    table = tables.capacity_table(searches)
    doc.heading("Capacity")
    doc.paragraph("Per configuration and memory limit ([search]), the largest value of the axis that trained "
                  "within the limit (the answer; verified: it trained the configuration's own epochs), the "
                  "smallest value seen not to fit, and the peak's slope along the axis (peak = a + b × value, "
                  "fitted on the values that fit; b in MiB per unit). Limits in MiB or GiB (2^30 bytes).")
    doc.table(_capacity_layout(table))
    said = [f"#{n} at {tables.size_text(limit)}: {status}: {message}" for n, limit, status, message in
            zip(table["configuration"], table["limit"], table["status"], table["message"])
            if status not in ("found",) and message]
    doc.bullets(said)
    for line in tables.answer_disagreements(searches, trials):
        doc.paragraph(f"The file's tables disagree: {line}.", note=True)
    setups = dict(zip(searches.index, tables.search_setups(searches)))
    drawn = figures.search_capacity(searches, trials, os.path.join(out_dir, "capacity.png"), setups=setups)
    _show_figure(doc, drawn, "peak RSS against the searched value", written)


def _hosts_layout(table):
    """The hosts table as a reader reads it: ok/trials, the ranks as "0, 2", MiB to one decimal."""
    def mib(values):
        return ["" if pd.isna(v) else f"{v:.1f}" for v in values]

    return pd.DataFrame({
        "host": table["host"],
        "ok/trials": [f"{ok}/{n}" for ok, n in zip(table["ok"], table["trials"])],
        "ranks": [", ".join(str(r) for r in ranks) for ranks in table["ranks"]],
        "used MiB (mean)": mib(table["sys_used_mean_mib"]),
        "largest peak MiB": mib(table["rss_peak_max_mib"]),
        "node total MiB": mib(table["node_total_mib"]),
    })


def _hosts_section(doc, results, out_dir, written):
    """Trials on more than one host: per host the trials, ranks and memory, and the node's used memory over
    time, one line per host."""
    points = hosts.node_samples(results)
    table = hosts.hosts_table(results.trials, points, results.runs)
    doc.heading("Hosts")
    doc.paragraph("Per host: trial attempts (rows) that ran there and how many ended ok, the ranks that ran them, "
                  "the mean of their `used MB` (the node's used memory averaged over each trial's samples), the "
                  "largest peak RSS, and the node's total memory (MemTotal, from its samples; empty where none "
                  "says). A row without a host (a resume's row for an attempt cut short) is counted on the host "
                  "that `/runs` names for its rank in its run.")
    doc.table(_hosts_layout(table))
    unplaced = points.attrs.get("unplaced_attempts", 0)
    if unplaced:
        doc.paragraph(f"{unplaced} trial attempt(s) have samples but no known start time or host (no trial row, "
                      "or a resume's row with start time 0): they are not in the figure.", note=True)
    drawn = figures.node_memory_by_host(points, os.path.join(out_dir, "node-memory-by-host.png"))
    _show_figure(doc, drawn, "node memory used over time per host", written)


def _counters_section(doc, results, out_dir, train_examples, written):
    doc.heading("Counters against batch size")
    per_step = counters.counters_per_step(results, train_examples=train_examples)
    events, unit = figures.counter_rate_columns(per_step)
    names = ", ".join(c[: -len(f" per {unit}")] for c in events) or "none"
    if unit == "step":
        doc.paragraph(f"Counters recorded: {names}. Each is the trial's count divided by its training steps "
                      "(epochs × ⌈examples / batch⌉), for ok trials.")
    else:
        doc.paragraph(f"Counters recorded: {names}. Each is the trial's count divided by its wall time in "
                      "seconds, for ok trials: some trials have no training steps to count (a program that "
                      "reports no epochs, or whose batch size the file does not set).")
    provenance = counters.counter_provenance(results)
    if provenance:
        served = "; ".join(f"{name}: {' and '.join(answers)}" for name, answers in provenance.items())
        doc.paragraph(f"Counted by (source and perf_event encoding; docs/sampler.md, Counter sources): {served}.")
    for source in _examples_sources(per_step):
        doc.paragraph(f"training examples: {source}", note=True)
    summary = counters.counters_vs_batch(per_step, unit=counters.PER_STEP if unit == "step" else counters.PER_SECOND)
    if not summary.empty:
        # One column per counter: the table stays as long as the batch sizes, not batch sizes x counters.
        keys = counters.line_keys(per_step) + ["batch_size", "n"]
        wide = summary.pivot_table(index=keys, columns="counter",
                                   values=f"per_{unit}_mean").reset_index()
        wide.columns = [str(c) for c in wide.columns]
        doc.table(wide)
    drawn = figures.counters_vs_batch(per_step, os.path.join(out_dir, "counters-vs-batch.png"))
    _show_figure(doc, drawn, f"counters per {unit} against batch size", written)


def _examples_sources(per_step):
    """Where the training examples came from, for the trials whose steps they count: those with epochs done
    and a batch size. A trial without them (a program that reports no epochs) is counted per second
    whatever the examples, so a note to pass train_examples would say nothing about it."""
    if per_step.empty:
        return []
    batch = pd.to_numeric(per_step["batch_size"], errors="coerce")
    counted = per_step[(per_step["epochs_done"] > 0) & (batch > 0)]
    return sorted(set(counted["train_examples_source"].dropna()))


def build_report(paths, out_dir, trials=None, paper_csv=None, train_examples=None):
    """The report as a Document, its figures written into out_dir; returns (document, figures, calibration)."""
    results = load(*paths)
    all_trials = results.trials
    # Bad input (an unknown trial id, an unreadable paper table) is refused before anything is written.
    chosen = _chosen_trials(all_trials, trials)
    try:
        paper = tables.paper_table(results, paper_csv=paper_csv)
    except (OSError, ValueError, KeyError) as error:
        raise InputError(f"--paper-csv: {error}") from error
    os.makedirs(out_dir, exist_ok=True)
    written = []
    doc = Document("memsweep report")
    doc.paragraph("Memory in MiB (2^20 bytes, the paper's MB). `used MB` is the paper's figure: the machine's "
                  "total − (free + buffers + cached), averaged over the trial's samples (formulas 1 and 2); "
                  "`rss` columns are the training process's own; `peak−base` is the trial's footprint (a user's "
                  "program has no ready point: its baseline is 0 and its footprint its whole peak). "
                  "With repeats: mean ± SD over the ok runs of a configuration.")
    doc.heading("Files")
    doc.table(files_table(results))

    extra = tables.extra_columns(paper)
    for dataset, table in paper.groupby("dataset", sort=True):
        doc.heading(f"{dataset}: trials", level=2)
        doc.table(_paper_layout(table.reset_index(drop=True), extra))
    _program_notes(doc, all_trials)
    metrics.report_metrics(doc, results)
    _gpu_section(doc, all_trials)

    failed = not_ok_table(all_trials)
    if not failed.empty:
        doc.heading("Trials that did not end ok")
        doc.table(failed)

    if hosts.host_count(all_trials, results.runs) > 1:
        _hosts_section(doc, results, out_dir, written)

    if not results.searches.empty:
        _capacity_section(doc, results, all_trials, out_dir, written)

    if len(trainers.trainers(all_trials)) > 1:
        _trainers_section(doc, all_trials, out_dir, written)

    doc.heading("What drives memory")
    doc.paragraph("A linear model of each figure per dataset and pooled (the dataset one more factor), one point "
                  "per configuration (its repeats averaged), fitted with statsmodels: the fields that vary as "
                  "factors (model, optimizer, …) or numeric terms (learning rate as log10; batch size and widths "
                  "linear, or log2 where they are powers of two and that fits better), with the interactions of "
                  "each factor with each numeric term and of factor pairs that the configurations can identify. "
                  "Terms ranked by partial η² (ANOVA type 2: each term after every other term not containing it); "
                  "a numeric term that interacts with a factor is stated as its slope within each level of the "
                  "factor, ranked by the share of that statement (no slope in any level). 95% intervals by "
                  "Student's t; \"not distinguishable from noise\" where the interval includes 0 or p > 0.05.")
    if len(trainers.trainers(all_trials)) > 1:
        doc.paragraph("These statistics take every trainer's trials together: a trainer's own overhead is "
                      "read as an effect of whatever hyperparameter goes with it. \"Trainers compared\" above "
                      "separates them.", note=True)
    terms, findings, _ = drivers.drivers(all_trials)
    correlations = stats.rank_correlations(all_trials)
    doc.bullets(_driver_lines(findings) + _verdict_lines(correlations))
    for note in _dropped_notes(terms, findings.attrs.get("notes", [])):
        doc.paragraph(note, note=True)
    doc.paragraph("ANOVA (type 2) of each fit:")
    doc.table(_anova_table(terms))
    doc.paragraph("Spearman rank correlations per dataset and pooled (pooled mixes datasets: read the model above, "
                  "with dataset as a factor, for effects within datasets), 95% intervals by Fisher's z, p exact up "
                  f"to {stats.EXACT_MAX_POINTS} points:")
    doc.table(_correlation_table(correlations))
    varied, constant = _varied_parameters(all_trials)
    if tables.ok_rows(all_trials).empty:
        doc.paragraph("No trial ended ok: there is no measured memory to plot.", note=True)
    elif constant:
        doc.paragraph("No figure for " + ", ".join(figures.LABELS.get(p, p) for p in constant) +
                      ": the same in every ok trial of each dataset.", note=True)
    for parameter in varied:
        drawn = figures.memory_vs_hyperparameter(
            all_trials, parameter, os.path.join(out_dir, f"memory-vs-{parameter.replace('_', '-')}.png"))
        _show_figure(doc, drawn, f"memory against {figures.LABELS.get(parameter, parameter)}", written)

    doc.heading("RSS over time")
    if not chosen:
        doc.paragraph("No ok trial to plot.", note=True)
    for trial_id in chosen:
        drawn = figures.rss_over_time(results, trial_id, os.path.join(out_dir, f"rss-{trial_id}.png"))
        _show_figure(doc, drawn, f"RSS over time of trial {trial_id}", written)

    calibration = _estimate_section(doc, results, all_trials, out_dir, chosen, written)
    _counters_section(doc, results, out_dir, train_examples, written)
    return doc, written, calibration


def write_report(paths, out_dir, trials=None, paper_csv=None, train_examples=None):
    """Writes report.md, report.html (self-contained), the PNGs and calibration.json into out_dir.

    `train_examples`: {dataset: examples} when a run trained on fewer than the published split (a subset's
    files, --max-train-examples), for the counters per step."""
    doc, written, calibration = build_report(paths, out_dir, trials=trials, paper_csv=paper_csv,
                                             train_examples=train_examples)
    markdown = os.path.join(out_dir, "report.md")
    page = os.path.join(out_dir, "report.html")
    with open(markdown, "w", encoding="utf-8") as out:
        out.write(doc.to_markdown())
    with open(page, "w", encoding="utf-8") as out:
        out.write(doc.to_html())
    return {"markdown": markdown, "html": page, "figures": written, "calibration": calibration}


def tables_text(paths):
    """The per-dataset tables and the correlations as plain text (the `tables` command)."""
    results = load(*paths)
    paper = tables.paper_table(results)
    extra = tables.extra_columns(paper)
    parts = []
    for dataset, table in paper.groupby("dataset", sort=True):
        parts.append(f"{dataset}\n" + _paper_layout(table.reset_index(drop=True), extra).to_string(index=False))
    if hosts.host_count(results.trials, results.runs) > 1:
        parts.append("hosts\n" + _hosts_layout(hosts.hosts_table(results)).to_string(index=False))
    _, findings, _ = drivers.drivers(results.trials)
    if not findings.empty:
        parts.append("what drives memory (ranked)\n" + "\n".join(_driver_lines(findings)))
    correlations = stats.rank_correlations(results.trials)
    if not correlations.empty:
        parts.append("rank correlations\n" + _correlation_table(correlations).to_string(index=False))
    return "\n\n".join(parts)


__all__ = ["InputError", "build_report", "write_report", "tables_text", "not_ok_table", "process_end"]
