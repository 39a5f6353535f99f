"""counters_per_step and counters_vs_batch on files with known counts."""

import math

import pytest

from memsweep_analysis import load
from memsweep_analysis.counters import counter_provenance, counters_per_step, counters_vs_batch
from results_builder import write_results_file

FAULTS = "perf::PAGE-FAULTS"
L1 = "PAPI_L1_DCM"


def sample(trial, attempt, t, faults, l1=0):
    return {"trial_id": trial["trial_id"], "attempt": attempt, "t": t, FAULTS: faults, L1: l1}


def run_row(run, command_line, **limits):
    return dict(run=run, start_time=float(run), ranks=1, hosts="h", command_line=command_line, memsweep_version="x",
                **limits)


def test_final_count_of_the_ok_attempt_over_the_steps(tmp_path):
    path = str(tmp_path / "r.h5")
    synthetic = dict(dataset="synthetic", synthetic={"train_size": 100}, batch_size=32, epochs=2)
    first, second, limited, cifar = write_results_file(path, [
        dict(synthetic, status="interrupted", epochs_done=1),
        dict(synthetic, attempt=1),
        dict(dataset="mnist", batch_size=64, epochs=3, run=2),
        dict(dataset="cifar-10", batch_size=100, epochs=1),
    ], samples=[])
    samples = [
        sample(first, 0, 0.1, 1000, 1000),  # the interrupted attempt: not the trial's count
        sample(second, 1, 0.2, 50, 7),
        sample(second, 1, 0.1, 10, 3),      # out of order: the count is the latest sample's
        sample(second, 1, 0.3, -1, 9),      # not counted in the last sample: the one before holds
        sample(limited, 0, 0.5, 480, -1),   # never counted
        sample(cifar, 0, 0.5, 1000, 5),
    ]
    # The command lines memsweep records: run 1 changed the limit (and was stopped before the mnist trial), run 2
    # inherited it without naming it, so only /runs' max_train_examples says the mnist trial trained on 1000.
    runs = [run_row(0, "memsweep run s.toml"),
            run_row(1, "memsweep run s.toml --resume --max-train-examples=1000 --allow-changed-options",
                    max_train_examples=1000),
            run_row(2, "memsweep run s.toml --resume", max_train_examples=1000)]
    write_results_file(path, [first, second, limited, cifar], samples=samples, runs=runs,
                       counter_columns=(L1, FAULTS))
    table = counters_per_step(load(path))
    assert table["trial_id"].tolist() == [second["trial_id"], limited["trial_id"], cifar["trial_id"]]
    assert table["attempt"].tolist() == [1, 0, 0]
    # 2 epochs x ceil(100 / 32) = 8; 3 x ceil(1000 / 64) = 48 (the run's limit); 1 x ceil(50000 / 100) = 500
    assert table["train_examples"].tolist() == [100, 1000, 50000]
    assert table["steps"].tolist() == [8, 48, 500]
    assert table["train_examples_source"].tolist()[:2] == ["the definition's train_size",
                                                           "--max-train-examples of the run"]
    assert "subset holds 4000" in table["train_examples_source"].iloc[2]
    assert table[FAULTS].tolist() == [50, 480, 1000]
    assert table[FAULTS + " per step"].tolist() == [50 / 8, 10.0, 2.0]
    assert table[L1].tolist()[0] == 9
    assert math.isnan(table[L1].iloc[1]) and math.isnan(table[L1 + " per step"].iloc[1])

    given = counters_per_step(load(path), train_examples={"cifar-10": 4000})
    assert given["steps"].iloc[2] == 40 and given["train_examples_source"].iloc[2] == "given"
    assert given[FAULTS + " per step"].iloc[2] == 25.0


def test_files_with_other_counters_and_the_table_against_batch(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    base = dict(dataset="synthetic", synthetic={"train_size": 64}, epochs=1)
    rows_a = write_results_file(a, [dict(base, batch_size=8), dict(base, batch_size=8, repeat=1),
                                    dict(base, batch_size=16)])
    write_results_file(a, rows_a, counter_columns=(FAULTS,), samples=[
        {"trial_id": rows_a[0]["trial_id"], FAULTS: 16}, {"trial_id": rows_a[1]["trial_id"], FAULTS: 32},
        {"trial_id": rows_a[2]["trial_id"], FAULTS: 40}])
    rows_b = write_results_file(b, [dict(base, batch_size=16)])
    write_results_file(b, rows_b, counter_columns=(L1,), samples=[{"trial_id": rows_b[0]["trial_id"], L1: 4}])
    table = counters_per_step(load(a, b))
    # steps: ceil(64 / 8) = 8 and ceil(64 / 16) = 4
    assert table["steps"].tolist() == [8, 8, 4, 4]
    assert table[FAULTS + " per step"].tolist()[:3] == [2.0, 4.0, 10.0]
    assert math.isnan(table[FAULTS].iloc[3]) and table[L1].iloc[3] == 4
    summary = counters_vs_batch(table)
    faults = summary[summary["counter"] == FAULTS]
    assert faults["batch_size"].tolist() == [8, 16]
    assert faults["n"].tolist() == [2, 1]
    assert faults["per_step_mean"].tolist() == [3.0, 10.0]
    assert faults["per_step_std"].iloc[0] == pytest.approx(math.sqrt(2.0))  # SD of 2 and 4
    assert math.isnan(faults["per_step_std"].iloc[1])
    l1 = summary[summary["counter"] == L1]
    assert l1["n"].tolist() == [0, 1] and l1["per_step_mean"].iloc[1] == 1.0


def test_provenance_names_the_source_of_each_counter_and_says_when_a_file_does_not(tmp_path):
    new, old = str(tmp_path / "new.h5"), str(tmp_path / "old.h5")
    write_results_file(new, [dict(dataset="synthetic")], counter_columns=(L1, FAULTS),
                       attrs={"counter_sources": ["papi", "kernel"],
                              "counter_encodings": ["type=4 config=0x430864", "type=1 config=0x2"]})
    write_results_file(old, [dict(dataset="mnist")], counter_columns=(FAULTS,),  # before sources were recorded
                       attrs={"counter_sources": None, "counter_encodings": None})
    provenance = counter_provenance(load(new, old))
    assert provenance[L1] == ["papi (type=4 config=0x430864)"]
    assert provenance[FAULTS][0] == "kernel (type=1 config=0x2)"
    assert provenance[FAULTS][1].startswith("papi (a file from before")
    assert len(provenance[FAULTS]) == 2


def test_a_file_before_run_limits_reads_the_limit_from_the_command_line(tmp_path):
    # schema 4's /runs has no max_train_examples: the run's command line is all there is
    path = str(tmp_path / "r.h5")
    (trial,) = write_results_file(path, [dict(dataset="mnist", batch_size=64, epochs=1)], schema_version=4,
                                  runs=[run_row(0, "memsweep run s.toml --max-train-examples 640")])
    table = counters_per_step(load(path))
    assert table["train_examples"].tolist() == [640] and table["steps"].tolist() == [10]
    assert table["train_examples_source"].tolist() == ["--max-train-examples of the run"]


def test_the_examples_a_trial_recorded_come_before_any_worked_out(tmp_path):
    # schema 12: the run wrote each trial's train_examples; a program's trial (-1) and an older file fall back
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(dataset="mnist", batch_size=100, epochs=1, train_examples=2500),
                              dict(dataset="mnist", batch_size=100, epochs=1)], samples=[])
    table = counters_per_step(load(path))
    assert table["train_examples"].tolist() == [2500, 60000]
    assert table["train_examples_source"].tolist() == ["recorded by the run", "published size"]
    assert table["steps"].tolist() == [25, 600]
    older = str(tmp_path / "v11.h5")
    write_results_file(older, [dict(dataset="mnist", batch_size=100, epochs=1)], samples=[], schema_version=11)
    assert math.isnan(load(older).trials["train_examples"].iloc[0])
    assert counters_per_step(load(older))["train_examples"].tolist() == [60000]
