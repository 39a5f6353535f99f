"""The CNN memory study (jobs/examples/cnn-memory-study.toml, analysis/examples/cnn-study), tiny: the same sweep
file cut down to two batch sizes of the basic CNN on both synthetic shapes, one repeat and a few examples, run by
the real memsweep with the real PyTorch reference program, then reported. What the committed study shows must
come out of it: both trainers measured side by side, PyTorch's process above memsweep's, and the trainers'
comparison in the report.

Needs the memsweep binary ($MEMSWEEP_EXECUTABLE) and Debian's python3-torch: without torch the test fails in CI
(CI=true) and skips loudly elsewhere.
"""

import os
import re
import subprocess

import pytest

from memsweep_analysis import load
from real_memsweep import REPO, memsweep_binary, torch_or_skip

STUDY = os.path.join(REPO, "jobs", "examples", "cnn-memory-study.toml")


def tiny_study_text():
    """The study's own file, every section kept, with its grid and sizes cut down."""
    text = open(STUDY).read()
    replacements = [
        (r"repeats = 3", "repeats = 1"),
        (r"train_size = 1024, test_size = 256", "train_size = 96, test_size = 32"),
        (r'model = \["cnn", "alexnet"\]', 'model = ["cnn"]'),
        (r"batch_size = \[8, 16, 32, 64, 128, 256, 512\]", "batch_size = [8, 32]"),
    ]
    for pattern, replacement in replacements:
        text, count = re.subn(pattern, replacement, text)
        assert count >= 1, f"the study's file no longer has {pattern!r}: update this test with it"
    return text


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    torch_or_skip("the CNN study's program trials")
    binary = memsweep_binary()
    scratch = tmp_path_factory.mktemp("cnn-study")
    sweep = scratch / "cnn-study-tiny.toml"
    sweep.write_text(tiny_study_text())
    results = scratch / "cnn-study.h5"
    # From the repository's top folder: the program's path in the file is relative to it.
    run = subprocess.run([binary, "run", str(sweep), "-o", str(results), "--threads", "1", "-q"], cwd=REPO,
                         capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert run.returncode == 0, run.stderr
    report = scratch / "report"
    made = subprocess.run(["/usr/bin/python3", "-m", "memsweep_analysis", "report", str(results), "-o", str(report)],
                          capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
    assert made.returncode == 0, made.stderr
    return results, report


def test_both_trainers_measured_side_by_side(study):
    results, _ = study
    trials = load(str(results)).trials
    trials["shape"] = trials["definition"].str.extract(r"synthetic=(\d+x\d+x\d+)", expand=False)
    assert len(trials) == 8, "2 shapes x 2 batch sizes x 2 trainers"
    assert (trials["status"] == "ok").all(), trials[["trainer", "status", "message"]]
    assert sorted(set(trials["trainer"])) == ["memsweep", "pytorch"]
    torch_trials = trials[trials["trainer"] == "pytorch"]
    builtin = trials[trials["trainer"] == "memsweep"]
    # The program said what its model is and how it learnt.
    assert (torch_trials["epochs_done"] == 1).all()
    assert torch_trials["predicted_bytes"].notna().all(), "the Q&A rule from the program's own counts"
    assert (torch_trials["processes"] >= 1).all()
    # An interpreter and a framework on top of the same network: PyTorch's process holds more than memsweep's.
    for (shape, batch), group in trials.groupby(["shape", "batch_size"]):
        by_trainer = group.set_index("trainer")["rss_peak"]
        assert by_trainer["pytorch"] > by_trainer["memsweep"] + 50 * 2**20, (shape, batch, by_trainer)
    # The same seeds, the same network and data: both trainers end the epoch at about the same accuracy.
    for (shape, batch), group in trials.groupby(["shape", "batch_size"]):
        accuracy = group.set_index("trainer")["test_accuracy"]
        assert abs(accuracy["pytorch"] - accuracy["memsweep"]) <= 0.07, (shape, batch, accuracy)
    assert len(builtin) == 4


def test_report_compares_the_trainers(study):
    _, report = study
    text = (report / "report.md").read_text()
    assert "Trainers compared" in text
    assert (report / "trainers-peak-vs-batch.png").stat().st_size > 1000
    section = text.split("Trainers compared", 1)[1]
    assert "pytorch" in section and "memsweep" in section
    # A framework's own page faults are not the model's: counters per step are told apart by trainer, and
    # memsweep's estimate is compared with its own trainer's trials only.
    counters = text.split("## Counters against batch size", 1)[1]
    assert "| dataset | trainer | batch_size | n |" in counters
    estimate = text.split("## The estimate against the measurement", 1)[1].split("\n## ", 1)[0]
    assert "4 trial(s) of programs (pytorch) are left out here" in estimate
