"""trainers: pairing the same hyperparameters across trainers, the differences, and their slope against batch size,
on built files whose differences are known: a constant overhead, and one that grows by a known MiB per example."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from memsweep_analysis import load, trainers
from results_builder import write_results_file

MIB = 2 ** 20
BATCHES = [8, 16, 32, 64, 128]
WIDTHS = [32, 64]
BASELINE = 50  # memsweep's baseline, MiB; a program's is 0


def memsweep_peak(batch, width):
    """memsweep's mean peak of a configuration, MiB (its two repeats are 1 MiB below and above)."""
    return 100 + batch / 4 + width / 8


def sweep(overhead):
    """memsweep's and pytorch's trials of every (batch, width), two repeats each; pytorch's mean peak is
    memsweep's + overhead(batch) MiB, its repeats 2 MiB below and above."""
    rows = []
    for batch in BATCHES:
        for width in WIDTHS:
            mean = memsweep_peak(batch, width)
            for repeat, spread in ((0, -1), (1, 1)):
                rows.append(dict(batch_size=batch, hidden=[width], repeat=repeat,
                                 rss_peak=int((mean + spread) * MIB), rss_baseline=BASELINE * MIB))
            theirs = mean + overhead(batch)
            for repeat, spread in ((0, -2), (1, 2)):
                rows.append(dict(batch_size=batch, hidden=[width], repeat=repeat, trainer="pytorch", processes=3,
                                 rss_peak=int((theirs + spread) * MIB), rss_baseline=0, predicted_bytes=-1))
    return rows


def pairs_of(tmp_path, rows, name="r.h5"):
    path = str(tmp_path / name)
    write_results_file(path, rows)
    return trainers.paired_configurations(load(path).trials)


def test_a_constant_overhead_pairs_every_configuration_and_has_no_slope(tmp_path):
    pairs = pairs_of(tmp_path, sweep(lambda batch: 200))
    assert len(pairs) == len(BATCHES) * len(WIDTHS)
    assert set(pairs["trainer"]) == {"pytorch"} and set(pairs["reference"]) == {"memsweep"}
    assert pairs.attrs["reference"] == "memsweep" and pairs.attrs["unpaired"] == {"pytorch": 0, "memsweep": 0}
    assert (pairs["n_reference"] == 2).all() and (pairs["n_trainer"] == 2).all()
    for row in pairs.to_dict("records"):
        width = int(row["hidden"])
        mean = memsweep_peak(row["batch_size"], width)
        assert row["peak_reference"] == mean * MIB
        assert row["peak_trainer"] == (mean + 200) * MIB
        assert row["peak_difference"] == 200 * MIB
        # memsweep's footprint is its peak above its baseline; a program's is its whole peak
        assert row["footprint_reference"] == (mean - BASELINE) * MIB
        assert row["footprint_difference"] == (200 + BASELINE) * MIB
    slopes = trainers.difference_slopes(pairs).set_index("figure")
    for figure in ("peak", "footprint"):
        fit = slopes.loc[figure]
        assert fit["n"] == 10 and fit["groups"] == 2 and fit["df"] == 7
        assert fit["slope"] == pytest.approx(0, abs=1e-6)
        assert fit["ci_low"] <= 0 <= fit["ci_high"] or fit["ci_high"] - fit["ci_low"] < 1e-6
        assert fit["verdict"] == "about constant"
    assert slopes.loc["peak", "mean_difference"] == 200 * MIB
    assert slopes.loc["peak", "sentence"] == (
        "pytorch − memsweep peak RSS (synthetic, 10 paired configurations): about constant over batch sizes "
        "8–128, +200.0 MiB on average (slope +0 MiB per example, 95% CI [+0, +0]; spread SD 0.0 MiB).")


def test_an_overhead_growing_per_example_has_that_slope(tmp_path):
    pairs = pairs_of(tmp_path, sweep(lambda batch: 150 + 0.5 * batch))
    assert pairs["peak_difference"].tolist() == [(150 + 0.5 * b) * MIB for b in pairs["batch_size"]]
    slopes = trainers.difference_slopes(pairs).set_index("figure")
    for figure in ("peak", "footprint"):
        fit = slopes.loc[figure]
        assert fit["slope"] / MIB == pytest.approx(0.5, rel=1e-9)
        assert fit["ci_low"] / MIB == pytest.approx(0.5, rel=1e-6)
        assert fit["ci_high"] / MIB == pytest.approx(0.5, rel=1e-6)
        assert fit["verdict"] == "grows with batch size"
    sentence = slopes.loc["peak", "sentence"]
    assert sentence.startswith("pytorch − memsweep peak RSS (synthetic, 10 paired configurations): grows with batch "
                               "size, +0.5 MiB per example (95% CI [+0.5, +0.5]), +60.0 MiB from batch 8 to 128;")


def test_a_shrinking_overhead_is_said_to_shrink(tmp_path):
    pairs = pairs_of(tmp_path, sweep(lambda batch: 300 - 0.25 * batch))
    fit = trainers.difference_slopes(pairs).set_index("figure").loc["peak"]
    assert fit["slope"] / MIB == pytest.approx(-0.25, rel=1e-9)
    assert fit["verdict"] == "shrinks with batch size"


def test_the_slope_and_interval_are_least_squares_within_configurations(tmp_path):
    # Noise that does not follow batch size, and a difference that depends on the width: the slope is the one
    # of a fit with one intercept per width, and its interval Student's t with n - groups - 1 degrees of freedom.
    noise = {8: 3, 16: -5, 32: 4, 64: -1, 128: 2}
    rows = []
    for row in sweep(lambda batch: 0):
        if row.get("trainer") == "pytorch":
            extra = 200 + noise[row["batch_size"]] * (1 if row["hidden"] == [32] else -2) + row["hidden"][0]
            row = dict(row, rss_peak=row["rss_peak"] + extra * MIB)
        rows.append(row)
    pairs = pairs_of(tmp_path, rows)
    fit = trainers.difference_slopes(pairs).set_index("figure").loc["peak"]
    x = pairs["batch_size"].to_numpy(float)
    y = pairs["peak_difference"].to_numpy(float) / MIB
    wide = (pairs["hidden"] == "64").to_numpy(float)
    design = np.column_stack([np.ones_like(x), wide, x])
    coef, residual, _, _ = np.linalg.lstsq(design, y, rcond=None)
    df = len(y) - 3
    se = math.sqrt(residual[0] / df * np.linalg.inv(design.T @ design)[2, 2])
    half = sps.t.ppf(0.975, df) * se
    assert fit["slope"] / MIB == pytest.approx(coef[2], rel=1e-9)
    assert fit["ci_low"] / MIB == pytest.approx(coef[2] - half, rel=1e-9)
    assert fit["ci_high"] / MIB == pytest.approx(coef[2] + half, rel=1e-9)
    assert fit["df"] == df
    assert fit["verdict"] == "about constant"  # the noise does not follow batch size: the interval holds 0
    assert fit["ci_low"] < 0 < fit["ci_high"]


def test_only_identical_hyperparameters_pair(tmp_path):
    a = dict(dataset="mnist", learning_rate=0.1, epochs=2, batch_size=8, hidden=[10])
    rows = [
        dict(a, rss_peak=100 * MIB),
        dict(a, repeat=1, rss_peak=110 * MIB),
        # pytorch: another seed and repeat numbering (not hyperparameters), and a failed repeat (not averaged)
        dict(a, trainer="pytorch", seed=7, repeat=3, rss_peak=400 * MIB, rss_baseline=0),
        dict(a, trainer="pytorch", seed=7, repeat=4, status="failed", rss_peak=999 * MIB, rss_baseline=0),
        # free parameters are hyperparameters: this one has no memsweep twin
        dict(a, trainer="pytorch", params={"dropout": 0.1}, rss_peak=500 * MIB, rss_baseline=0),
        # another learning rate: no pytorch twin
        dict(a, learning_rate=0.2, rss_peak=120 * MIB),
        # a third trainer, compared with memsweep too
        dict(a, trainer="jax", rss_peak=300 * MIB, rss_baseline=0),
    ]
    pairs = pairs_of(tmp_path, rows)
    assert pairs["trainer"].tolist() == ["jax", "pytorch"]
    assert pairs["peak_reference"].tolist() == [105 * MIB, 105 * MIB]
    assert pairs["peak_trainer"].tolist() == [300 * MIB, 400 * MIB]
    assert pairs["peak_difference"].tolist() == [195 * MIB, 295 * MIB]
    assert pairs["n_reference"].tolist() == [2, 2] and pairs["n_trainer"].tolist() == [1, 1]
    assert pairs.attrs["unpaired"] == {"jax": 0, "pytorch": 1, "memsweep": 1}
    # one configuration: nothing to fit a slope on, and the sentence says so
    slopes = trainers.difference_slopes(pairs)
    peak = slopes[slopes["figure"] == "peak"].set_index("trainer")
    assert peak.loc["pytorch", "verdict"].startswith("cannot tell")
    assert peak.loc["pytorch", "sentence"] == (
        "pytorch − memsweep peak RSS (mnist, 1 paired configuration): +295.0 MiB; whether it changes with batch "
        "size cannot be told: no configuration was trained at two batch sizes by both.")


def test_params_a_caller_ignores_do_not_keep_trials_apart(tmp_path):
    rows = [dict(batch_size=8, rss_peak=100 * MIB),
            dict(batch_size=8, trainer="pytorch", params={"device": "cpu"}, rss_peak=150 * MIB, rss_baseline=0),
            dict(batch_size=8, trainer="jax", params={"device": "cpu", "jit": True}, rss_peak=170 * MIB)]
    path = str(tmp_path / "r.h5")
    write_results_file(path, rows)
    trials = load(path).trials
    assert trainers.paired_configurations(trials).empty
    by_device = trainers.paired_configurations(trials, ignore_params=["device"])
    assert by_device["trainer"].tolist() == ["pytorch"] and by_device["device"].tolist() == ["cpu"]
    assert by_device["peak_difference"].tolist() == [50 * MIB]
    every = trainers.paired_configurations(trials, ignore_params=True)
    assert every["trainer"].tolist() == ["jax", "pytorch"]


def test_the_pairing_does_not_rely_on_the_definition_naming_the_trainer(tmp_path):
    # The C++ definition may or may not name a program's trainer; the key leaves it (and seed, repeat) out.
    rows = write_results_file(str(tmp_path / "m.h5"), [dict(batch_size=8, rss_peak=100 * MIB)])
    same = dict(batch_size=8, trainer="pytorch", rss_peak=130 * MIB, rss_baseline=0,
                definition=rows[0]["definition"].replace("repeat=0", "repeat=1"), trial_id="0000000000aa")
    named = dict(batch_size=8, trainer="jax", rss_peak=140 * MIB, rss_baseline=0,
                 definition=rows[0]["definition"] + ";trainer=jax;program=/usr/bin/jax-train", trial_id="0000000000bb")
    pairs = pairs_of(tmp_path, [dict(batch_size=8, rss_peak=100 * MIB), same, named])
    assert pairs["trainer"].tolist() == ["jax", "pytorch"]
    assert pairs["peak_difference"].tolist() == [40 * MIB, 30 * MIB]


def test_params_columns_come_along_and_a_params_key_named_like_a_column_gets_param_(tmp_path):
    rows = []
    for batch in (8, 16):
        params = {"group": "g1", "dropout": 0.5}
        rows.append(dict(batch_size=batch, params=params, rss_peak=100 * MIB))
        rows.append(dict(batch_size=batch, params=params, trainer="pytorch", rss_peak=150 * MIB, rss_baseline=0))
    pairs = pairs_of(tmp_path, rows)
    assert pairs.attrs["param_columns"] == {"dropout": "dropout", "group": "param_group"}
    assert pairs["dropout"].tolist() == [0.5, 0.5] and pairs["param_group"].tolist() == ["g1", "g1"]
    assert pairs["group"].nunique() == 1  # the table's own: the configuration without batch size
    fit = trainers.difference_slopes(pairs).set_index("figure").loc["peak"]
    assert fit["n"] == 2 and fit["groups"] == 1 and fit["verdict"].startswith("cannot tell")  # df = 0
    assert fit["slope"] == pytest.approx(0, abs=1e-6)


def test_one_trainer_or_no_ok_trial_gives_no_pairs(tmp_path):
    only = pairs_of(tmp_path, [dict(batch_size=8), dict(batch_size=16)], "one.h5")
    assert only.empty and trainers.difference_slopes(only).empty
    failed = pairs_of(tmp_path, [dict(batch_size=8), dict(batch_size=8, trainer="pytorch", status="failed")],
                      "failed.h5")
    assert failed.empty and failed.attrs["unpaired"] == {"memsweep": 1, "pytorch": 0}  # pytorch's failed: no ok
    empty = trainers.paired_configurations(pd.DataFrame(columns=["status", "rss_peak"]))
    assert empty.empty and empty.attrs["reference"] is None


def test_peaks_by_trainer_lists_the_reference_once(tmp_path):
    rows = [dict(batch_size=8, rss_peak=100 * MIB), dict(batch_size=8, trainer="pytorch", rss_peak=150 * MIB),
            dict(batch_size=8, trainer="jax", rss_peak=170 * MIB)]
    peaks = trainers.peaks_by_trainer(pairs_of(tmp_path, rows))
    assert sorted(zip(peaks["trainer"], peaks["peak"] / MIB)) == [("jax", 170), ("memsweep", 100), ("pytorch", 150)]
