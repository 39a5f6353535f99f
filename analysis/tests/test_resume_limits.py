"""A sweep limited with --max-train-examples, stopped and resumed, as memsweep really does it: the analysis must give
the trials of every run the limit that run trained with.

A resume not given the option inherits the limit (src/results/run_record.cpp), so its command line does not name it;
one given it with --allow-changed-options trains on another. Four trials of about a second each: run 0 (limit 256)
is stopped after its first trial, run 1 (resumed with a limit of 128) after its first, run 2 (resumed with no
option) finishes. Needs the memsweep binary ($MEMSWEEP_EXECUTABLE, else build/memsweep).
"""

import os
import re
import signal
import subprocess

import pytest

from memsweep_analysis import load
from memsweep_analysis.counters import counters_per_step
from memsweep_analysis.estimate import estimate_components
from real_memsweep import memsweep_binary
TRAIN_SIZE = 2000
TEST_SIZE = 64
# Wide enough that an epoch of a few steps takes tens of milliseconds: a trial is still running when the signal
# that stops its run comes.
SWEEP = f"""[sweep]
name = "resume-limits"
[defaults]
dataset = "synthetic"
synthetic = {{ shape = [1, 28, 28], classes = 10, train_size = {TRAIN_SIZE}, test_size = {TEST_SIZE} }}
learning_rate = 0.01
epochs = 100
hidden = [1024, 1024]
[grid]
batch_size = [32, 48, 64, 96]
"""
# The line memsweep prints as a trial ends ok ("[...] <trial id> ok ..."): the run has a trial done.
FINISHED = re.compile(r"\] [0-9a-f]{12} ok")
STOPPED = 3  # a run stopped by a signal with trials left (docs/sweep.md, "Signals and exit status 3")
TIMEOUT_S = 300


def run_until_a_trial_is_done(command, cwd):
    """Run `command` and stop it with SIGINT (Ctrl-C) once it has finished a trial; its stderr."""
    process = subprocess.Popen(command, cwd=cwd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                               env=dict(os.environ, OMP_NUM_THREADS="1"))
    err = []
    try:
        for line in process.stderr:
            err.append(line)
            if FINISHED.search(line):
                process.send_signal(signal.SIGINT)
                break
        _, rest = process.communicate(timeout=TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = "".join(err) + rest
    assert process.returncode == STOPPED, f"the run was not stopped with trials left (exit {process.returncode}):\n" \
                                          f"{text}"
    return text


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    binary = memsweep_binary()
    scratch = tmp_path_factory.mktemp("resume-limits")
    (scratch / "limits.toml").write_text(SWEEP)
    run = [binary, "run", "limits.toml", "-o", "limits.h5", "--threads", "1"]
    run_until_a_trial_is_done(run + ["--max-train-examples", "256"], scratch)
    run_until_a_trial_is_done(run + ["--resume", "--max-train-examples", "128", "--allow-changed-options"], scratch)
    last = subprocess.run(run + ["--resume", "-q"], cwd=scratch, capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert last.returncode == 0, last.stderr
    return load(str(scratch / "limits.h5")), binary


def test_the_file_is_the_case_described(resumed):
    results, _ = resumed
    runs = results.runs
    assert runs["max_train_examples"].tolist() == [256, 128, 128]
    # the resume that inherited the limit does not name it: the analysis cannot find it there
    assert "--max-train-examples" not in runs["command_line"].iloc[2]
    ok = results.trials[results.trials["status"] == "ok"]
    assert len(ok) == 4 and set(ok["run"]) == {0, 1, 2}


def test_counters_per_step_use_each_runs_limit(resumed):
    results, _ = resumed
    table = counters_per_step(results).merge(results.trials[["trial_id", "attempt", "run"]], on=["trial_id",
                                                                                                   "attempt"])
    limit = dict(zip(results.runs["run"], results.runs["max_train_examples"]))
    assert table["train_examples"].tolist() == [limit[r] for r in table["run"]]
    assert table["steps"].tolist() == [epochs * -(-limit[r] // batch) for epochs, batch, r in
                                       zip(table["epochs_done"], table["batch_size"], table["run"])]
    # schema 12: each trial's row records what it trained on, and the analysis reads it from there
    assert set(table["train_examples_source"]) == {"recorded by the run"}
    ok = results.trials[results.trials["status"] == "ok"]
    assert ok["train_examples"].tolist() == [limit[r] for r in ok["run"]]


def test_estimate_components_use_each_runs_limit(resumed):
    results, binary = resumed
    table = estimate_components(results, memsweep=binary)
    assert table.attrs["notes"] == []  # among them: a total that is not what the run predicted
    trials = results.trials.set_index(["trial_id", "attempt"])
    limit = dict(zip(results.runs["run"], results.runs["max_train_examples"]))
    resident = table[table["part"] == "resident dataset"]
    assert len(resident) == 4
    for trial_id, attempt, recorded in zip(resident["trial_id"], resident["attempt"], resident["bytes"]):
        # each run recorded the examples it held resident: its limit, then the test split, as float32 images and
        # int32 labels
        examples = limit[trials.loc[(trial_id, attempt), "run"]] + TEST_SIZE
        assert recorded == examples * (28 * 28 * 4 + 4), (trial_id, attempt)
    total = table[table["part"] == "total"]
    assert (total["bytes"] == total["predicted_bytes"]).all()
