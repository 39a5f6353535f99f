"""GPU memory (schema 7): older files read it as not measured, and the report's GPU section appears only when
some trial has a figure."""

import math

import pandas as pd

from memsweep_analysis import load
from memsweep_analysis.report import gpu_memory_table
from results_builder import write_results_file

MIB = 2 ** 20


def test_an_older_file_reads_gpu_memory_as_not_measured(tmp_path):
    path = tmp_path / "old.h5"
    write_results_file(path, [dict(batch_size=8), dict(batch_size=16)], samples=[dict(t=0.0), dict(t=0.01)],
                       schema_version=6)
    results = load(path)
    trials, samples = results.trials, results.samples
    for column in ("gpu_peak", "torch_allocated_peak", "torch_reserved_peak"):
        assert trials[column].map(math.isnan).all(), column
    assert (trials["gpu_devices"] == "").all() and (trials["gpu_peak_source"] == "").all()
    assert samples["gpu_used"].map(math.isnan).all() and samples["gpu_tree_used"].map(math.isnan).all()
    assert gpu_memory_table(trials).empty


def test_the_gpu_table_has_only_the_trials_with_a_figure():
    trials = pd.DataFrame({
        "trial_id": ["a", "b", "c"], "trainer": ["pytorch"] * 3, "batch_size": [64, 1024, 8],
        "gpu_peak": [1536.0 * MIB, math.nan, math.nan], "gpu_peak_source": ["tree", "", ""],
        "gpu_devices": ["0", "", ""], "torch_reserved_peak": [1024.0 * MIB, 2048.0 * MIB, math.nan],
        "torch_allocated_peak": [512.0 * MIB, 900.0 * MIB, math.nan]})
    table = gpu_memory_table(trials)
    assert list(table["trial_id"]) == ["a", "b"]
    assert table.loc[0, "NVML peak MiB"] == 1536.0
    assert table.loc[1, "torch reserved MiB"] == 2048.0
    assert table.loc[0, "source"] == "tree" and table.loc[0, "devices"] == "0"
