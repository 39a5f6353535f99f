"""A user's program as itself: its blank built-in fields are missing values, never memsweep's defaults;
its counters are per second when it has no steps; the labels say peak, not peak − baseline."""

import math

from memsweep_analysis import figures, load
from memsweep_analysis.counters import counters_per_step, counters_vs_batch, PER_SECOND
from pngs import png_size
from results_builder import write_results_file

FAULTS = "perf::PAGE-FAULTS"

# As the runner writes a program trial whose file sets only `dataset` (a label) and `batch_size`: names
# empty, learning rate NaN, epochs 0, depth -1 (docs/sweep-file.md, Programs). It wrote no events: no
# epoch done.
PROGRAM = dict(trainer="torch_mnist", dataset="mnist", model="", optimizer="", learning_rate=math.nan, epochs=0,
               batch_size=64, depth=-1, hidden=(), epochs_done=0, wall_seconds=10.0, rss_baseline=0)


def _file(tmp_path, *trials):
    path = str(tmp_path / "p.h5")
    rows = write_results_file(path, list(trials))
    write_results_file(path, rows, counter_columns=(FAULTS,),
                       samples=[{"trial_id": row["trial_id"], "t": 1.0, FAULTS: 1000} for row in rows])
    return path, rows


def test_a_programs_blank_fields_are_missing_values_and_a_built_in_trials_are_kept(tmp_path):
    path, (program, builtin) = _file(tmp_path, PROGRAM, dict(dataset="synthetic", batch_size=32))
    trials = load(path).trials.set_index("trial_id")
    mine = trials.loc[program["trial_id"]]
    assert mine["model"] is None or (isinstance(mine["model"], float) and math.isnan(mine["model"]))
    assert mine["optimizer"] is None or (isinstance(mine["optimizer"], float) and math.isnan(mine["optimizer"]))
    for name in ("learning_rate", "epochs", "depth", "total_units", "max_width", "parameters"):
        assert math.isnan(mine[name]), name
    assert mine["hidden"] is None
    assert mine["dataset"] == "mnist" and mine["batch_size"] == 64
    other = trials.loc[builtin["trial_id"]]
    assert other["model"] == "mlp" and other["optimizer"] == "sgd"
    assert other["epochs"] == 1 and other["hidden"] == [128] and other["learning_rate"] == 0.01


def test_counters_of_a_program_without_steps_are_per_second_and_drawn(tmp_path):
    path, (program,) = _file(tmp_path, PROGRAM)
    table = counters_per_step(load(path))
    assert math.isnan(table["steps"].iloc[0])
    assert math.isnan(table[FAULTS + " per step"].iloc[0])
    assert table[FAULTS + PER_SECOND].iloc[0] == 100.0  # 1000 over its 10 s
    assert figures.counter_rate_columns(table) == ([FAULTS + PER_SECOND], "second")
    summary = counters_vs_batch(table, unit=PER_SECOND)
    assert summary["per_second_mean"].tolist() == [100.0]
    drawn = figures.counters_vs_batch(table, tmp_path / "c.png")
    assert not isinstance(drawn, str), drawn
    assert png_size(drawn) == (800, 500)


def test_counters_with_steps_stay_per_step(tmp_path):
    path, _ = _file(tmp_path, dict(dataset="synthetic", synthetic={"train_size": 64}, batch_size=32))
    table = counters_per_step(load(path))
    assert figures.counter_rate_columns(table) == ([FAULTS + " per step"], "step")


def test_the_footprint_label_says_peak_for_programs(tmp_path):
    path, _ = _file(tmp_path, PROGRAM)
    programs = load(path).trials
    assert figures.footprint_label(programs) == "peak (the program's process tree)"
    path, _ = _file(tmp_path, dict(dataset="synthetic"))
    assert figures.footprint_label(load(path).trials) == "footprint (peak − baseline)"


def test_a_report_of_programs_whose_files_leave_the_built_in_fields_blank(tmp_path):
    # The PyTorch MNIST example's sweep as a user runs it: the program's blank hidden widths crashed the
    # trials table, and no dataset's trials varying a blank field the figures' choice.
    from memsweep_analysis.report import write_report
    trials = [dict(PROGRAM, batch_size=batch, learning_rate=rate, epochs=1, rss_peak=peak * 2**20,
                   rss_footprint=peak * 2**20, params='{"gamma":0.7}')
              for batch, rate, peak in ((64, 1.0, 910), (64, 0.5, 904), (256, 1.0, 944), (256, 0.5, 925))]
    path, rows = _file(tmp_path, *trials)
    out = tmp_path / "report"
    write_report([path], str(out))
    text = (out / "report.md").read_text()
    assert "| mnist_main" not in text  # the builder's trainer name is torch_mnist
    table = [line for line in text.splitlines() if rows[0]["trial_id"] in line]
    assert table, "the trials table lists the program's trial"
    assert "| 64 |  |" in table[0], "its hidden widths blank, not 128 or []"
    assert (out / "memory-vs-batch-size.png").exists()
    assert png_size(out / "counters-vs-batch.png") == (800, 500)
