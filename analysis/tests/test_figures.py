"""figures: the numbers each figure draws, checked by hand, and every PNG's size."""

import math

import pandas as pd
import pytest

from memsweep_analysis import figures, load
from pngs import png_size
from results_builder import write_results_file

MIB = 2 ** 20


def trial(config, footprint_mib, status="ok", sys_mib=800.0, batch=32, dataset="mnist"):
    return dict(dataset=dataset, config=config, status=status, batch_size=batch, learning_rate=0.01,
                rss_footprint=footprint_mib * MIB, sys_used_mean=sys_mib * MIB, predicted_bytes=10 * MIB,
                host="h", trial_id=f"{config}-{footprint_mib}", attempt=0, final=True)


def test_points_average_the_ok_repeats_of_each_configuration():
    trials = pd.DataFrame([
        trial("a", 10, sys_mib=800, batch=8), trial("a", 14, sys_mib=810, batch=8),
        trial("a", 500, status="diverged", batch=8),          # a result, but not a footprint
        trial("a", math.nan, batch=8),                         # -1 in the file: not measured
        trial("b", 30, sys_mib=900, batch=64),
    ])
    points = figures.memory_points(trials, "batch_size")
    assert list(points["batch_size"]) == [8, 64]
    first, second = points.iloc[0], points.iloc[1]
    assert first["n"] == 2
    assert first["footprint_mean"] == 12 * MIB
    assert first["footprint_std"] == pytest.approx(math.sqrt(8) * MIB)   # (10, 14): deviations 2, 2; / (2 - 1)
    assert first["sys_used_mean"] == 805 * MIB
    assert second["n"] == 1 and math.isnan(second["footprint_std"])       # one repeat: no spread to show


def test_epoch_boundaries_are_the_first_samples_of_each_new_epoch_in_time_order():
    samples = pd.DataFrame({"t": [0.3, 0.0, 0.1, 0.4, 0.2], "epoch": [1, 0, 0, 2, 1]})
    assert figures.epoch_boundaries(samples) == [(0.2, 1), (0.4, 2)]
    assert figures.epoch_boundaries(samples[samples["epoch"] == 1]) == []


def test_every_figure_is_800_by_500_even_with_nothing_to_draw(tmp_path):
    trials = pd.DataFrame([trial("a", 10, batch=8), trial("a", 12, batch=8), trial("b", 20, batch=16),
                           trial("c", 5, batch=8, dataset="cifar-10")])
    fits = [dict(dataset="mnist", host="h", a_bytes=MIB, b=1.5, n=3, r2=1.0)]
    counters = pd.DataFrame({"dataset": ["mnist"] * 3, "batch_size": [8, 8, 16],
                             "perf::PAGE-FAULTS per step": [10.0, 12.0, 5.0]})
    nothing = trials.assign(status="failed")
    written = [
        figures.memory_vs_hyperparameter(trials, "batch_size", tmp_path / "m.png"),
        figures.memory_vs_hyperparameter(trials, "learning_rate", tmp_path / "sub" / "lr.png"),
        figures.estimate_vs_measured(trials, fits, tmp_path / "e.png"),
        figures.estimate_vs_measured(trials, [], tmp_path / "e0.png"),
        figures.counters_vs_batch(counters, tmp_path / "c.png"),
        figures.memory_vs_hyperparameter(nothing, "batch_size", tmp_path / "none.png"),
        figures.estimate_vs_measured(nothing, fits, tmp_path / "e-none.png"),
        figures.counters_vs_batch(counters[["dataset", "batch_size"]], tmp_path / "c-none.png"),
    ]
    for path in written:
        assert png_size(path) == (800, 500), path


def test_rss_over_time_plots_the_final_attempt_and_refuses_an_unknown_trial(tmp_path):
    path = str(tmp_path / "r.h5")
    rows = write_results_file(path, [dict(attempt=0, status="interrupted"), dict(attempt=1, status="ok")],
                              samples=[dict(attempt=1, epoch=e, t=0.01 * i, rss=(60 + i) * MIB)
                                       for i, e in enumerate([0, 1, 1, 2])])
    results = load(path)
    trial_id = rows[0]["trial_id"]
    assert figures._final_attempt(results.trials, trial_id)["attempt"] == 1
    assert png_size(figures.rss_over_time(results, trial_id, tmp_path / "rss.png")) == (800, 500)
    with pytest.raises(KeyError, match="ffffffffffff"):
        figures.rss_over_time(results, "ffffffffffff", tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_peak_against_batch_per_trainer_is_800_by_500_with_or_without_pairs(tmp_path):
    peaks = pd.DataFrame({"trainer": ["memsweep", "pytorch"] * 4, "dataset": ["mnist"] * 6 + ["cifar-10"] * 2,
                          "batch_size": [8, 8, 16, 16, 32, 32, 8, 8], "key": list("abcdefgh"),
                          "peak": [100 * MIB, 300 * MIB, 110 * MIB, 320 * MIB, 120 * MIB, 340 * MIB, 90 * MIB,
                                   200 * MIB]})
    written = [figures.peak_vs_batch_by_trainer(peaks, tmp_path / "t.png", "memsweep"),
               figures.peak_vs_batch_by_trainer(peaks.iloc[0:0], tmp_path / "t-none.png")]
    for path in written:
        assert png_size(path) == (800, 500), path
