"""A program's own metrics (/metrics, schema 11) as the analysis reads them: a real memsweep run of a script that prints
word_language_model's lines, its [programs.NAME] metrics read by load_metrics and final_metrics, and the report's
line on them; a file of an older schema has none. Needs the memsweep binary ($MEMSWEEP_EXECUTABLE, else
build/memsweep)."""

import os
import re
import subprocess
import sys

import pytest

from memsweep_analysis import load
from memsweep_analysis.metrics import final_metrics, load_metrics
from memsweep_analysis.report import build_report
from real_memsweep import memsweep_binary
from results_builder import write_results_file

SCRIPT = r"""import sys
bptt = int(sys.argv[1])
for epoch in (1, 2):
    print(f"| epoch {epoch:3d} |   100/  200 batches | loss {6.0 - epoch + bptt / 100:5.2f} | ppl 400.00")
    print(f"| end of epoch {epoch:3d} | time:  0.01s | valid loss 5.00 | valid ppl {300 - 50 * epoch + bptt:8.2f}")
print(f"| End of training | test loss  4.90 | test ppl {190 + bptt / 7:8.2f}")
"""

SWEEP = """[sweep]
name = "metrics-analysis"
[programs.wlm]
command = ["{python}", "{script}", "{{bptt}}"]
metrics = {{ epoch = '^\\| (?:end of )?epoch +(\\d+)', valid_ppl = 'valid ppl +([0-9.]+)', test_ppl = 'test ppl +([0-9.]+)' }}
[defaults]
program = "wlm"
[grid]
params.bptt = [35, 70]
"""


def printed(log):
    """{(epoch, name): value} as the script printed it, read without the patterns."""
    values, epoch = {}, 0
    for line in open(log, encoding="utf-8"):
        found = re.match(r"\| (?:end of )?epoch +(\d+)", line)
        if found:
            epoch = int(found.group(1))
        for label, name in (("valid ppl", "valid_ppl"), ("test ppl", "test_ppl")):
            if label in line:
                values[(epoch, name)] = float(line.split(label)[1].split()[0])
    return values


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("metrics")
    (scratch / "wlm.py").write_text(SCRIPT)
    (scratch / "wlm.toml").write_text(SWEEP.format(python=sys.executable, script=scratch / "wlm.py"))
    done = subprocess.run([memsweep_binary(), "run", "wlm.toml", "-o", "wlm.h5", "-q"], cwd=scratch,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    return scratch


def test_load_metrics_gives_per_epoch_what_the_program_printed(run):
    results = load(str(run / "wlm.h5"))
    metrics = load_metrics(results)
    assert set(metrics["name"]) == {"valid_ppl", "test_ppl"}
    for trial_id in results.trials["trial_id"]:
        expected = printed(run / "wlm.logs" / f"{trial_id}-0.out")
        rows = metrics[metrics["trial_id"] == trial_id]
        assert {(int(e), n): v for e, n, v in zip(rows["epoch"], rows["name"], rows["value"])} == expected


def test_final_metrics_has_one_row_per_attempt_with_the_last_values(run):
    results = load(str(run / "wlm.h5"))
    finals = final_metrics(load_metrics(results))
    assert len(finals) == 2
    by_bptt = dict(zip(results.trials["trial_id"], results.trials["bptt"]))
    for _, row in finals.iterrows():
        bptt = by_bptt[row["trial_id"]]
        assert row["epoch"] == 2
        assert row["valid_ppl"] == pytest.approx(300 - 100 + bptt, abs=0.005)
        assert row["test_ppl"] == pytest.approx(190 + bptt / 7, abs=0.005)


def test_the_report_says_the_final_values(run, tmp_path):
    doc, _, _ = build_report([str(run / "wlm.h5")], str(tmp_path / "report"))
    text = doc.to_markdown()
    line = next(line for line in text.splitlines() if line.startswith("The programs' own metrics"))
    assert "`test_ppl` 195 to 200 (2 attempts)" in line
    assert "`valid_ppl` 235 to 270 (2 attempts)" in line


def test_a_file_of_an_older_schema_has_no_metrics(tmp_path):
    path = str(tmp_path / "old.h5")
    write_results_file(path, [{}], schema_version=10)
    results = load(path)
    assert load_metrics(results).empty
    assert final_metrics(load_metrics(results)).empty
    assert list(load_metrics(results).columns) == ["file", "sweep", "trial_id", "attempt", "epoch", "name", "value",
                                                   "seconds", "matches"]


def test_final_metrics_takes_each_attempts_last_row_and_keeps_a_nan(tmp_path):
    path = str(tmp_path / "built.h5")
    trials = write_results_file(path, [{}, {"attempt": 1}])
    first, again = trials[0]["trial_id"], trials[1]["trial_id"]
    write_results_file(path, [{}, {"attempt": 1}], metrics=[
        {"trial_id": first, "epoch": 1, "name": "loss", "value": 3.0},
        {"trial_id": first, "epoch": 2, "name": "loss", "value": 2.5},
        {"trial_id": first, "epoch": 2, "name": "ppl", "value": float("nan")},
        {"trial_id": again, "attempt": 1, "epoch": 0, "name": "loss", "value": 9.0}])
    finals = final_metrics(load_metrics(load(path))).set_index(["trial_id", "attempt"])
    assert finals.loc[(first, 0), "loss"] == 2.5 and finals.loc[(first, 0), "epoch"] == 2
    assert list(finals.columns[-2:]) == ["loss", "ppl"], "a metric that printed nan keeps its column"
    assert finals.loc[(again, 1), "loss"] == 9.0 and finals.loc[(again, 1), "epoch"] == 0
