"""estimate_errors, calibrate / save_calibration, and the components: recorded in the file (schema 10), or from
`memsweep estimate` for an older file."""

import json
import math
import stat

import pytest

from memsweep_analysis import load
from memsweep_analysis.estimate import (calibrate, estimate_components, estimate_errors, load_calibration,
                                        parse_estimate_output, save_calibration)
from results_builder import write_results_file

MIB = 2 ** 20


def measured(predicted, footprint, **more):
    return dict(predicted_bytes=predicted, rss_baseline=10 * MIB, rss_peak=10 * MIB + footprint, **more)


def test_error_and_ratio_per_ok_trial(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [measured(4 * MIB, 6 * MIB, batch_size=1), measured(8 * MIB, 2 * MIB, batch_size=2),
                              measured(8 * MIB, 2 * MIB, batch_size=3, status="failed"),
                              measured(-1, 2 * MIB, batch_size=4)])  # no estimate
    table = estimate_errors(load(path))
    assert table["batch_size"].tolist() == [1, 2]
    assert table["error_bytes"].tolist() == [-2 * MIB, 6 * MIB]
    assert table["ratio"].tolist() == [1.5, 0.25]


def test_calibration_recovers_an_exact_line_per_dataset_and_host(tmp_path):
    path = str(tmp_path / "r.h5")
    rows = []
    for i, predicted in enumerate([1 * MIB, 2 * MIB, 5 * MIB]):  # mnist on node-a: 3 MiB + 1.5 x
        rows.append(measured(predicted, 3 * MIB + predicted * 3 // 2, dataset="mnist", host="node-a", batch_size=i + 1))
    for i, predicted in enumerate([2 * MIB, 6 * MIB]):  # mnist on node-b: two points, 1 MiB + 0.5 x
        rows.append(measured(predicted, MIB + predicted // 2, dataset="mnist", host="node-b", batch_size=i + 1))
    rows.append(measured(4 * MIB, 5 * MIB, dataset="cifar-10", host="node-a"))  # one point: no line
    rows.append(measured(4 * MIB, 99 * MIB, dataset="mnist", host="node-a", status="killed"))  # not ok: left out
    write_results_file(path, rows)
    fits = calibrate(load(path).trials)
    assert fits[["dataset", "host", "n"]].values.tolist() == [["cifar-10", "node-a", 1], ["mnist", "node-a", 3],
                                                              ["mnist", "node-b", 2]]
    a = fits.iloc[1]
    assert a["a_bytes"] == pytest.approx(3 * MIB, rel=1e-9) and a["b"] == pytest.approx(1.5, rel=1e-12)
    assert a["r2"] == pytest.approx(1.0, abs=1e-12)
    b = fits.iloc[2]
    assert b["a_bytes"] == pytest.approx(MIB, rel=1e-9) and b["b"] == pytest.approx(0.5, rel=1e-12)
    alone = fits.iloc[0]
    assert math.isnan(alone["a_bytes"]) and math.isnan(alone["b"]) and "one trial" in alone["note"]

    out = tmp_path / "calibration.json"
    assert save_calibration(fits, out) == 2
    document = json.loads(out.read_text())
    assert document["format"] == "memsweep-calibration" and document["version"] == 1
    assert [sorted(f) for f in document["fits"]] == [["a_bytes", "b", "dataset", "host", "n", "r2"]] * 2
    assert [(f["dataset"], f["host"], f["n"]) for f in document["fits"]] == [("mnist", "node-a", 3),
                                                                           ("mnist", "node-b", 2)]
    assert document["fits"][0]["b"] == pytest.approx(1.5, rel=1e-12)
    back = load_calibration(out)
    assert back["a_bytes"].tolist() == [f["a_bytes"] for f in document["fits"]]


def test_calibration_refuses_a_flat_estimate(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [measured(4 * MIB, 5 * MIB, batch_size=1), measured(4 * MIB, 7 * MIB, batch_size=2)])
    fit = calibrate(load(path).trials).iloc[0]
    assert fit["n"] == 2 and math.isnan(fit["b"]) and "same estimate" in fit["note"]


ESTIMATE_TEXT = """\
trial {id} (sweep.toml:9 grid[0]): synthetic, mlp 784-64-10, sgd, batch 32, 6000 + 1000 examples
part                     size        bytes     where it comes from
parameters               200.31 KiB  205120    weights and biases
optimizer state          0 B         0         copies of the parameters: SGD 0, momentum 1, Adam 2
total                    200.31 KiB  205120    the trial's own memory
resident dataset         20.96 MiB   21980000  6000 + 1000 float32 images

"""


def test_parse_estimate_output_cuts_columns_at_the_header():
    blocks = parse_estimate_output(ESTIMATE_TEXT.format(id="aaaaaaaaaaaa") + ESTIMATE_TEXT.format(id="bbbbbbbbbbbb"))
    assert sorted(blocks) == ["aaaaaaaaaaaa", "bbbbbbbbbbbb"]
    parts = blocks["aaaaaaaaaaaa"]
    assert [p["part"] for p in parts] == ["parameters", "optimizer state", "total", "resident dataset"]
    assert [p["bytes"] for p in parts] == [205120, 0, 205120, 21980000]
    assert parts[1]["size"] == "0 B"
    assert parts[1]["where"] == "copies of the parameters: SGD 0, momentum 1, Adam 2"


def fake_memsweep(tmp_path, body):
    script = tmp_path / "memsweep"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_components_beside_the_footprint_and_repeats_share_them(tmp_path):
    path = str(tmp_path / "r.h5")
    command = "memsweep run s.toml --max-train-examples 100"
    first, second = write_results_file(path, [measured(205120, 410240, repeat=0), measured(205120, 102560, repeat=1)],
                                       attrs={"sweep_text": "[sweep]\nname = \"fake\"\n", "command_line": command},
                                       runs=[run_row(0, command, max_train_examples=100)], schema_version=9)
    # prints the block of the first repeat only, as memsweep does, and records its arguments
    text = ESTIMATE_TEXT.format(id=first["trial_id"])
    log = tmp_path / "args"
    binary = fake_memsweep(tmp_path, f'echo "$@" > {log}\ncat "$2" >> {log}\ncat <<\'EOF\'\n{text}EOF\n')
    table = estimate_components(load(path), memsweep=binary)
    assert table.attrs["notes"] == []
    assert table["trial_id"].tolist() == [first["trial_id"]] * 4 + [second["trial_id"]] * 4
    params = table[table["part"] == "parameters"]
    assert params["bytes"].tolist() == [205120, 205120]
    assert params["rss_footprint"].tolist() == [410240, 102560]
    assert params["share_of_footprint"].tolist() == [0.5, 2.0]
    called = log.read_text().splitlines()
    assert called[0].startswith("estimate ") and called[0].endswith(" --train-examples 100")
    assert called[1:] == ["[sweep]", 'name = "fake"']  # the sweep file it was given is the file's sweep_text


def run_row(run, command_line, **limits):
    return dict(run=run, start_time=1.7e9 + run, ranks=1, hosts="h", command_line=command_line,
                memsweep_version="x", **limits)


def test_components_of_a_run_resumed_with_other_limits_use_its_limits(tmp_path):
    # --allow-changed-options let run 1 train on 50 examples; its command line is what memsweep records for it
    path = str(tmp_path / "r.h5")
    command = "memsweep run s.toml --max-train-examples 100 --max-test-examples 20"
    first, second = write_results_file(path, [measured(205120, 410240, batch_size=1),
                                              measured(205120, 410240, batch_size=2, run=1)],
                                       attrs={"sweep_text": "[sweep]\n", "command_line": command},
                                       runs=[run_row(0, command, max_train_examples=100, max_test_examples=20),
                                             run_row(1, "memsweep run s.toml --resume --max-train-examples 50 "
                                                        "--allow-changed-options",
                                                     max_train_examples=50, max_test_examples=20)],
                                       schema_version=9)
    log = tmp_path / "args"
    # each call answers for the trial it was asked about (its last argument's limit tells the calls apart)
    body = (f'echo "$@" >> {log}\n'
            f'case "$*" in *"--train-examples 100"*) id={first["trial_id"]};; *) id={second["trial_id"]};; esac\n'
            f'cat <<EOF\n{ESTIMATE_TEXT.format(id="$id")}EOF\n')
    table = estimate_components(load(path), memsweep=fake_memsweep(tmp_path, body))
    calls = sorted(line.split(" ", 2)[2] for line in log.read_text().splitlines())
    assert calls == ["--train-examples 100 --test-examples 20", "--train-examples 50 --test-examples 20"]
    assert sorted(set(table["trial_id"])) == sorted([first["trial_id"], second["trial_id"]])


def test_components_of_a_run_resumed_with_other_threads_use_its_threads(tmp_path):
    # issue 44: oneDNN sizes its scratchpad for the threads, and a resume with --allow-changed-options --threads 4
    # trained on 4: each run's estimate is asked with /runs' threads of that run, not the first command line's
    path = str(tmp_path / "r.h5")
    command = "memsweep run s.toml --threads 2"
    first, second = write_results_file(path, [measured(205120, 410240, batch_size=1),
                                              measured(205120, 410240, batch_size=2, run=1)],
                                       attrs={"sweep_text": "[sweep]\n", "command_line": command},
                                       runs=[run_row(0, command, threads=2),
                                             run_row(1, "memsweep run s.toml --resume --threads 4 "
                                                        "--allow-changed-options", threads=4)],
                                       schema_version=9)
    log = tmp_path / "args"
    body = (f'echo "$OMP_NUM_THREADS" >> {log}\n'
            f'case "$OMP_NUM_THREADS" in 2) id={first["trial_id"]};; *) id={second["trial_id"]};; esac\n'
            f'cat <<EOF\n{ESTIMATE_TEXT.format(id="$id")}EOF\n')
    table = estimate_components(load(path), memsweep=fake_memsweep(tmp_path, body))
    assert sorted(log.read_text().split()) == ["2", "4"]
    assert sorted(set(table["trial_id"])) == sorted([first["trial_id"], second["trial_id"]])


def test_components_of_a_resume_that_inherits_its_threads_use_the_stored_ones(tmp_path):
    # the resume's command line names no --threads: it ran with the 3 it inherited, which /runs keeps
    path = str(tmp_path / "r.h5")
    write_results_file(path, [measured(205120, 410240, batch_size=1), measured(205120, 410240, batch_size=2, run=1)],
                       attrs={"sweep_text": "[sweep]\n", "command_line": "memsweep run s.toml --threads 3"},
                       runs=[run_row(0, "memsweep run s.toml --threads 3", threads=3),
                             run_row(1, "memsweep run s.toml --resume", threads=3)],
                       schema_version=9)
    log = tmp_path / "args"
    estimate_components(load(path), memsweep=fake_memsweep(tmp_path, f'echo "$OMP_NUM_THREADS" >> {log}\n'))
    assert log.read_text().split() == ["3"]


def test_components_of_a_file_before_run_limits_read_the_command_line(tmp_path):
    # schema 4's /runs has no max_train_examples: the command line is all there is
    path = str(tmp_path / "r.h5")
    command = "memsweep run s.toml --max-train-examples=300"
    write_results_file(path, [measured(205120, 410240)], attrs={"sweep_text": "[sweep]\n", "command_line": command},
                       runs=[run_row(0, command)], schema_version=4)
    log = tmp_path / "args"
    estimate_components(load(path), memsweep=fake_memsweep(tmp_path, f'echo "$@" > {log}\n'))
    assert log.read_text().split()[2:] == ["--train-examples", "300"]


def test_components_with_a_few_trials_ask_for_each(tmp_path):
    path = str(tmp_path / "r.h5")
    first, _ = write_results_file(path, [measured(1, MIB, batch_size=1), measured(1, MIB, batch_size=2)],
                                  schema_version=9)
    log = tmp_path / "args"
    text = ESTIMATE_TEXT.format(id=first["trial_id"])
    binary = fake_memsweep(tmp_path, f'echo "$@" >> {log}\ncat <<\'EOF\'\n{text}EOF\n')
    table = estimate_components(load(path), trial_ids=[first["trial_id"]], memsweep=binary)
    assert set(table["trial_id"]) == {first["trial_id"]}
    assert log.read_text().split()[2:] == ["--trial", first["trial_id"]]
    assert any("not the predicted_bytes" in note for note in table.attrs["notes"])  # 205120 here, 1 recorded


def test_components_without_memsweep_or_when_it_fails_say_so(tmp_path, monkeypatch):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [measured(MIB, MIB)], schema_version=9)
    results = load(path)
    monkeypatch.delenv("MEMSWEEP", raising=False)
    monkeypatch.delenv("MEMSWEEP_EXECUTABLE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    table = estimate_components(results)
    assert table.empty and "before schema 10 left out: no memsweep binary" in table.attrs["notes"][0]
    failing = fake_memsweep(tmp_path, 'echo "memsweep: error: something precise" >&2\nexit 2\n')
    monkeypatch.setenv("MEMSWEEP", failing)
    table = estimate_components(results)
    assert table.empty
    assert table.attrs["notes"] == [f"{path}: components left out: memsweep estimate failed: "
                                    "memsweep: error: something precise"]


def test_components_recorded_in_the_file_are_read_from_it_without_memsweep(tmp_path):
    # schema 10: the run recorded each part (-1: not a part of the trial's estimate); no binary is asked
    path = str(tmp_path / "r.h5")
    recorded = dict(estimate_parameters=2 * MIB, estimate_optimizer_state=MIB, estimate_onednn_scratchpad=4096,
                    estimate_trial_process=5 * MIB, estimate_resident_dataset=9 * MIB)
    predicted = 2 * MIB + MIB + 4096 + 5 * MIB
    first, second, _ = write_results_file(path, [measured(predicted, 16 * MIB, batch_size=1, **recorded),
                                                 measured(predicted, 8 * MIB, batch_size=2, **recorded),
                                                 measured(predicted, 8 * MIB, batch_size=3)])
    log = tmp_path / "called"
    table = estimate_components(load(path), memsweep=fake_memsweep(tmp_path, f"touch {log}\nexit 2\n"))
    assert not log.exists()
    mine = table[table["trial_id"] == first["trial_id"]]
    # the file's column order, the sum, then the part outside the footprint; each labelled as memsweep estimate says
    assert mine["part"].tolist() == ["parameters", "optimizer state", "oneDNN scratchpad", "trial process", "total",
                                     "resident dataset"]
    assert mine["bytes"].tolist() == [2 * MIB, MIB, 4096, 5 * MIB, predicted, 9 * MIB]
    assert set(mine["where"]) == {"recorded by the run"}
    assert table[table["trial_id"] == second["trial_id"]]["share_of_footprint"].iloc[0] == 0.25
    # the third trial recorded no parts: said, not made up
    assert table.attrs["notes"] == [f"{path}: 1 trial(s) recorded no estimate parts"]
