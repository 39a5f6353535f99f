"""A program sweep analysed as itself (issue 43, items 7, 8 and the report's part of 13): pytorch/examples'
word_language_model swept over its sequence length (`bptt`), batch size and architecture (`arch`), run as
program trials with no `dataset` label.

- A blank dataset is one group, "no dataset": the trials table, "What drives memory", the figures and RSS over
  time all have its trials (before: no table, `n = 0`, "batch size is the same in every ok trial", "No ok
  trial to plot").
- A figure along every numeric free parameter (`memory-vs-bptt.png`), its points coloured by one categorical
  parameter (`arch`), never by the whole `params` JSON.
- The estimate section says what the programs reported (no model size), the counters section has no "pass
  train_examples" note for trials counted per second, the counters' bars are their trials' min–max (never
  below zero), and the counters' lines are per `arch` (not Transformer pooled with LSTM).

Files: builder-made ones for exact values, and one the real binary writes running a real PyTorch script
(jobs/examples/word_language_model.py, random tokens, a few seconds a trial) as program trials.
"""

import math
import os
import re
import subprocess

import pytest

from memsweep_analysis import figures, load
from memsweep_analysis.counters import PER_SECOND, counters_per_step, counters_vs_batch
from memsweep_analysis.load import NO_DATASET
from memsweep_analysis.report import write_report
from pngs import png_size
from real_memsweep import REPO, memsweep_binary, torch_or_skip
from results_builder import write_results_file

MIB = 2 ** 20
FAULTS = "perf::PAGE-FAULTS"
# A program trial whose sweep file sets only batch_size and params, as the runner writes it: no dataset, names
# empty, learning rate NaN, epochs 0, depth -1, no epochs reported, no model size (no predicted_bytes).
PROGRAM = dict(trainer="wlm", dataset="", model="", optimizer="", learning_rate=math.nan, epochs=0, depth=-1,
               hidden=(), epochs_done=0, rss_baseline=0, predicted_bytes=-1, wall_seconds=10.0)
BPTT = (35, 70, 140, 280)
ARCHS = ("LSTM", "Transformer")
# Page faults per second of each LSTM trial at batch 16, one per bptt: skewed, so mean − SD < 0.
LSTM_RATES = (10, 10, 10, 1000)
TRANSFORMER_RATE = 5000


def _peak_mib(arch, bptt, batch):
    """+1.80 MiB per step of bptt; a Transformer 40 MiB above an LSTM; +0.25 MiB per example of batch; a small
    fixed wobble so the fit has residuals."""
    wobble = (0.3, -0.2, 0.1, -0.2)[BPTT.index(bptt)] * (1 if batch == 16 else -1)
    return 300 + (40 if arch == "Transformer" else 0) + 1.8 * bptt + 0.25 * batch + wobble


def _rate(arch, bptt, batch):
    return LSTM_RATES[BPTT.index(bptt)] if arch == "LSTM" else TRANSFORMER_RATE


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """16 program trials (2 archs x 4 bptt x 2 batch sizes, emsize the same) with a counter each."""
    folder = tmp_path_factory.mktemp("built")
    path = str(folder / "wlm.h5")
    trials = [dict(PROGRAM, batch_size=batch, rss_peak=int(_peak_mib(arch, bptt, batch) * MIB),
                   rss_mean=_peak_mib(arch, bptt, batch) * MIB * 0.9, params={"arch": arch, "bptt": bptt,
                                                                            "emsize": 200})
              for arch in ARCHS for bptt in BPTT for batch in (16, 64)]
    rows = write_results_file(path, trials)
    samples = [{"trial_id": row["trial_id"], "t": 1.0,
                FAULTS: int(_rate(t["params"]["arch"], t["params"]["bptt"], t["batch_size"]) * 10)}
               for row, t in zip(rows, trials)]
    write_results_file(path, trials, samples=samples, counter_columns=(FAULTS,))
    return path, rows


@pytest.fixture(scope="module")
def built_report(built, tmp_path_factory):
    path, rows = built
    out = tmp_path_factory.mktemp("built-report")
    written = write_report([path], str(out))
    return out, (out / "report.md").read_text(), written, rows


def test_a_blank_dataset_is_one_group_named_no_dataset(built):
    path, rows = built
    trials = load(path).trials
    assert set(trials["dataset"].astype(str)) == {NO_DATASET}
    assert trials["model"].isna().all(), "the other blank names stay missing values"


def test_the_report_of_a_sweep_without_a_dataset_has_its_trials(built_report):
    out, text, _, rows = built_report
    assert f"## {NO_DATASET}: trials" in text
    for row in rows:
        assert row["trial_id"] in text
    table = [line for line in text.splitlines() if rows[0]["trial_id"] in line][0]
    assert "nan" not in table, f"a blank learning rate is an empty cell: {table}"
    assert "n = 0" not in text and "fewer than 4 points" not in text
    assert "No ok trial to plot" not in text
    assert "batch size" not in _no_figure_line(text), "batch size was 16 and 64"
    # the model's points: one per configuration (16), the bptt slope within each arch
    drives = _section(text, "What drives memory")
    assert "no dataset, footprint: #1 bptt" in drives, drives
    assert "per unit of bptt: +1.80 MiB [+1.80, +1.80]" in drives, drives
    assert "larger bptt, more memory" in drives, "the rank correlations take the numeric parameters too"
    assert (out / f"rss-{_largest(rows)}.png").exists()


def test_a_figure_along_each_numeric_parameter_coloured_by_arch(built, built_report):
    out, text, written, _ = built_report
    assert png_size(out / "memory-vs-bptt.png") == (800, 500)
    assert png_size(out / "memory-vs-batch-size.png") == (800, 500)
    assert not (out / "memory-vs-emsize.png").exists()
    assert "emsize" in _no_figure_line(text), "emsize is the same in every trial: a note says so"
    path, _ = built
    trials = load(path).trials
    for parameter in ("bptt", "batch_size"):
        drawn = figures.memory_vs_hyperparameter(trials, parameter, out / f"again-{parameter}.png")
        assert drawn.factor == "arch" and drawn.levels == ["LSTM", "Transformer"], (drawn.factor, drawn.levels)
        assert not any("{" in t for t in drawn.texts + drawn.levels), "never the params JSON"
        assert len(drawn.colours) == 2


def test_the_estimate_section_says_the_programs_reported_no_model_size(built_report):
    _, text, _, _ = built_report
    section = _section(text, "The estimate against the measurement")
    assert "none of them reported its model's size" in section, section
    assert "the model size they reported" not in section
    assert "pass train_examples" not in text


def test_counters_bars_are_the_trials_range_and_lines_are_per_arch(built, built_report, tmp_path):
    path, _ = built
    table = counters_per_step(load(path))
    summary = counters_vs_batch(table, unit=PER_SECOND)
    lstm = summary[(summary["arch"] == "LSTM") & (summary["batch_size"] == 16)].iloc[0]
    assert lstm["per_second_mean"] == pytest.approx(257.5)
    assert lstm["per_second_mean"] - lstm["per_second_std"] < 0, "the case: mean − SD is below zero"
    assert (lstm["per_second_min"], lstm["per_second_max"]) == (10, 1000)
    transformer = summary[(summary["arch"] == "Transformer") & (summary["batch_size"] == 16)].iloc[0]
    assert transformer["per_second_mean"] == TRANSFORMER_RATE, "not pooled with the LSTM's"
    drawn = figures.counters_vs_batch(table, tmp_path / "c.png")
    assert drawn.levels == [f"{NO_DATASET} arch LSTM", f"{NO_DATASET} arch Transformer"]
    bars = {label: points for (_, label), points in drawn.bars.items()}
    assert bars[f"{NO_DATASET} arch LSTM"] == [(16.0, 10.0, 1000.0), (64.0, 10.0, 1000.0)]
    assert bars[f"{NO_DATASET} arch Transformer"] == [(16.0, 5000.0, 5000.0), (64.0, 5000.0, 5000.0)]
    assert all(low >= 0 for points in drawn.bars.values() for _, low, _ in points)
    assert "min–max" in drawn.title
    _, text, _, _ = built_report
    counted = _section(text, "Counters against batch size")
    assert "| arch |" in counted, "the counters table has a row per arch"


def _section(text, heading):
    start = text.index(f"## {heading}")
    following = text.find("\n## ", start + 3)
    return text[start:following if following >= 0 else len(text)]


def _no_figure_line(text):
    lines = [line for line in text.splitlines() if "No figure for" in line]
    return lines[0] if lines else ""


def _largest(rows):
    return max(rows, key=lambda r: r["rss_peak"])["trial_id"]


# --- the real binary running the real script -----------------------------------------------------------------

SCRIPT = os.path.join(REPO, "jobs", "examples", "word_language_model.py")
REAL_BPTT = (32, 256)
REAL_BATCH = (8, 32)
SWEEP = f"""
[sweep]
name = "wlm"
seed = 1

[sampler]
interval_ms = 5

[programs.wlm]
command = ["/usr/bin/python3", "{SCRIPT}", "--model", "{{arch}}", "--bptt", "{{bptt}}",
           "--batch_size", "{{batch_size}}", "--emsize", "{{emsize}}", "--nhid", "{{emsize}}", "--epochs", "1",
           "--train-tokens", "8192", "--valid-tokens", "1000", "--vocab", "2000", "--seed", "{{seed}}",
           "--threads", "1"]
env = {{ OMP_NUM_THREADS = "1" }}

[defaults]
program = "wlm"
params = {{ emsize = 32 }}

[grid]
params.arch = ["LSTM", "Transformer"]
params.bptt = [{REAL_BPTT[0]}, {REAL_BPTT[1]}]
batch_size = [{REAL_BATCH[0]}, {REAL_BATCH[1]}]
"""


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """The sweep above run by the real memsweep: 8 program trials of the real script, no dataset label."""
    torch_or_skip("the word_language_model program sweep")
    folder = tmp_path_factory.mktemp("wlm")
    (folder / "wlm.toml").write_text(SWEEP)
    out = folder / "wlm.h5"
    done = subprocess.run([memsweep_binary(), "run", str(folder / "wlm.toml"), "-o", str(out), "--threads", "1",
                           "-q"], cwd=folder, capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1"))
    assert done.returncode == 0, done.stderr
    report = folder / "report"
    write_report([str(out)], str(report))
    return str(out), report, (report / "report.md").read_text()


def test_the_real_sweep_is_what_the_user_ran(real):
    path, _, _ = real
    trials = load(path).trials
    assert len(trials) == 8 and (trials["status"] == "ok").all(), trials[["status", "message"]]
    assert set(trials["dataset"].astype(str)) == {NO_DATASET}
    assert set(trials["trainer"].astype(str)) == {"wlm"}
    assert set(trials["arch"].astype(str)) == set(ARCHS)
    # memory grows with the sequence length: every step keeps bptt x batch vocab-sized logits for backward
    peaks = trials.set_index(["arch", "bptt", "batch_size"])["rss_peak"] / MIB
    for arch in ARCHS:
        for batch in REAL_BATCH:
            assert peaks[(arch, REAL_BPTT[1], batch)] > peaks[(arch, REAL_BPTT[0], batch)] + 20, peaks


def test_the_real_report_has_the_trials_and_what_drives_memory(real):
    path, report, text = real
    trials = load(path).trials
    assert f"## {NO_DATASET}: trials" in text
    for trial_id in trials["trial_id"]:
        assert trial_id in text
    assert "n = 0" not in text and "No ok trial to plot" not in text
    assert "batch size" not in _no_figure_line(text)
    drives = _section(text, "What drives memory")
    assert re.search(r"no dataset, footprint: #\d+ [^\n]*bptt", drives), drives
    assert len(list(report.glob("rss-*.png"))) == 1
    for name in ("memory-vs-bptt.png", "memory-vs-batch-size.png"):
        assert png_size(report / name) == (800, 500), name
    assert not (report / "memory-vs-emsize.png").exists()


def test_the_real_figures_colour_by_arch_not_by_the_params_json(real, tmp_path):
    path, _, _ = real
    trials = load(path).trials
    drawn = figures.memory_vs_hyperparameter(trials, "bptt", tmp_path / "bptt.png")
    assert drawn.factor == "arch" and drawn.levels == ["LSTM", "Transformer"]
    assert not any("{" in t for t in drawn.texts + drawn.levels)


def test_the_real_reports_estimate_and_counters_sections(real, tmp_path):
    path, _, text = real
    section = _section(text, "The estimate against the measurement")
    assert "none of them reported its model's size" in section, section
    assert "pass train_examples" not in text
    results = load(path)
    table = counters_per_step(results)
    if not figures.counter_rate_columns(table)[0]:
        why = "no counter was recorded on this machine: the counters figure has nothing to draw"
        # The kernel's software events (page faults, context switches) exist on every machine CI runs on.
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip("LOUD SKIP: " + why)
    drawn = figures.counters_vs_batch(table, tmp_path / "c.png")
    assert drawn.levels == [f"{NO_DATASET} arch LSTM", f"{NO_DATASET} arch Transformer"]
    assert all(low >= 0 for points in drawn.bars.values() for _, low, _ in points)
