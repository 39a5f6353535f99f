"""The memory-plans study (jobs/examples/memory-plans.toml and memory-plans-limits.toml,
analysis/examples/memory-plans), tiny: the study's own files cut down to the basic CNN at one batch size, one
repeat and a few examples, run by the real memsweep with the real PyTorch reference, then tabled by the study's
tables.py. What the committed study rests on must come out of it: each plan is a trial of its own in both
trainers, the same arithmetic under every plan, reuse below keep, and the tables and the searches read back.

Needs the memsweep binary ($MEMSWEEP_EXECUTABLE) and Debian's python3-torch: without torch the test fails in CI
(CI=true) and skips loudly elsewhere.
"""

import os
import re
import subprocess
import sys

import pytest

from memsweep_analysis import load
from memsweep_analysis.tables import plan_text
from real_memsweep import REPO, memsweep_binary, torch_or_skip

EXAMPLES = os.path.join(REPO, "jobs", "examples")
TABLES = os.path.join(REPO, "analysis", "examples", "memory-plans", "tables.py")
PLANS = ["keep", "reuse", "recompute", "recompute:2"]


def cut_down(name, replacements):
    text = open(os.path.join(EXAMPLES, name)).read()
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, replacement, text)
        assert count >= 1, f"{name} no longer has {pattern!r}: update this test with it"
    return text


def run_sweep(binary, text, scratch, name):
    sweep = scratch / f"{name}.toml"
    sweep.write_text(text)
    results = scratch / f"{name}.h5"
    # From the repository's top folder: the program's path in the files is relative to it.
    run = subprocess.run([binary, "run", str(sweep), "-o", str(results), "--threads", "1"], cwd=REPO,
                         capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert run.returncode == 0, run.stderr
    return results, run.stderr


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    torch_or_skip("the study's program trials")
    binary = memsweep_binary()
    scratch = tmp_path_factory.mktemp("memory-plans")
    grid, notes = run_sweep(binary, cut_down("memory-plans.toml", [
        (r"repeats = 3", "repeats = 1"),
        (r"train_size = 512, test_size = 64", "train_size = 64, test_size = 16"),
        (r'model = \["alexnet", "cnn", "mlp"\]', 'model = ["cnn"]'),
        (r"batch_size = \[512, 256, 128, 64, 32, 16, 8\]", "batch_size = [16]"),
    ]), scratch, "plans")
    limits, _ = run_sweep(binary, cut_down("memory-plans-limits.toml", [
        (r"train_size = 4096, test_size = 64", "train_size = 96, test_size = 16"),
        (r'model = "alexnet"', 'model = "cnn"\nchannels = [4]'),
        (r"range = \[16, 4096\]", "range = [8, 96]"),
        (r'limit = \["1GiB", "2GiB"\]', 'limit = ["300MiB"]'),
        (r"max_trials = 8", "max_trials = 2"),
        # memsweep's four plans only: PyTorch's probes cost seconds each, and its plans ran above.
        (r'\[\[trial\]\]\nprogram = "pytorch"\n[^\[]*', ""),
    ]), scratch, "limits")
    tables = subprocess.run([sys.executable, TABLES, str(grid), str(limits)], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "analysis")))
    assert tables.returncode == 0, tables.stderr
    return grid, notes, tables.stdout


def plan_of(row):
    return plan_text(str(row["memory_plan"]), row["recompute_every"])


def test_each_plan_is_a_trial_of_its_own_in_both_trainers(study):
    grid, notes, _ = study
    trials = load(str(grid)).trials
    trials["plan"] = [plan_of(r) for r in trials.to_dict("records")]
    assert (trials["status"] == "ok").all(), trials[["trainer", "plan", "status", "message"]]
    # 2 trainers x 4 plans: the grid's keep and reuse points with recompute_every = 2 ran once.
    assert len(trials) == 8
    for trainer in ("memsweep", "pytorch"):
        ours = trials[trials["trainer"].astype(str) == trainer]
        assert sorted(ours["plan"]) == sorted(PLANS), trainer
    assert "4 trial definitions set recompute_every under memory_plan keep or reuse" in notes


def test_every_plan_trains_the_same_arithmetic(study):
    grid, _, _ = study
    trials = load(str(grid)).trials
    for (trainer, batch), group in trials.groupby([trials["trainer"].astype(str), "batch_size"]):
        assert group["final_train_loss"].nunique() == 1, (trainer, batch, list(group["final_train_loss"]))
        assert group["test_accuracy"].nunique() == 1, (trainer, batch)


def test_the_tables_show_reuse_below_keep_and_the_searches(study):
    grid, _, text = study
    assert "8 trials ok of 8" in text
    ratios = text.split("## Footprint as a fraction of keep's", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in ratios.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0] == "cnn":
            rows[cells[2]] = [float(c) for c in cells[3:]]
    assert set(rows) == set(PLANS), ratios
    assert rows["keep"] == [1.0]
    assert all(value < 1.0 for value in rows["reuse"]), rows  # the arena never holds more than keep's buffers
    # A study without AlexNet at batch 512 says so instead of failing.
    assert "not all in this file" in text
    searches = text.split("## The largest batch within a limit", 1)[1]
    lines = [line for line in searches.splitlines() if line.startswith("| memsweep") or line.startswith("| pytorch")]
    assert len(lines) == 4, searches  # memsweep's 4 configurations of the limits file, at one limit
    assert any("recompute:2" in line for line in lines)


def test_both_trainers_count_the_same_parameters_for_every_model_of_the_study(tmp_path):
    # torch_train.py builds the study's networks from its own description of them (memsweep_torch/models.py):
    # the counts each trainer recorded (schema 10: memsweep's own, the program's reported one) must agree.
    torch_or_skip("the study's program trials")
    results, _ = run_sweep(memsweep_binary(), cut_down("memory-plans.toml", [
        (r"repeats = 3", "repeats = 1"),
        (r"epochs = 2", "epochs = 1"),
        (r"train_size = 512, test_size = 64", "train_size = 8, test_size = 4"),
        (r"batch_size = \[512, 256, 128, 64, 32, 16, 8\]", "batch_size = [4]"),
        (r'memory_plan = \["keep", "reuse", "recompute"\]', 'memory_plan = ["keep"]'),
        (r"recompute_every = \[0, 2\]", "recompute_every = [0]"),
    ]), tmp_path, "parameters")
    trials = load(str(results)).trials
    assert set(trials["status"]) == {"ok"}, trials[["model", "trainer", "message"]]
    counts = {(str(m), str(t)): p for m, t, p in zip(trials["model"], trials["trainer"], trials["parameters"])}
    assert sorted(counts) == sorted((m, t) for m in ("alexnet", "cnn", "mlp") for t in ("memsweep", "pytorch"))
    for model in ("alexnet", "cnn", "mlp"):
        assert counts[(model, "memsweep")] == counts[(model, "pytorch")] > 0, model
    assert counts[("mlp", "memsweep")] == 3 * 32 * 32 * 64 + 64 + 64 * 10 + 10  # 3072-64-10
