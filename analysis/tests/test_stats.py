"""rank_correlations and regression on sweeps built with a known relation (or none)."""

import math
import statistics

import pytest

from memsweep_analysis import load
from memsweep_analysis.stats import rank_correlations, regression
from results_builder import write_results_file

MIB = 2 ** 20
K = 3 * MIB  # bytes per unit of batch size
BATCHES = [8, 16, 32, 64, 128]


def sweep(tmp_path, rows, name="r.h5"):
    path = str(tmp_path / name)
    write_results_file(path, rows)
    return load(path).trials


def footprint(value):
    return dict(rss_baseline=50 * MIB, rss_peak=50 * MIB + int(value))


def one(table, **where):
    for key, value in where.items():
        table = table[table[key] == value]
    assert len(table) == 1, where
    return table.iloc[0]


def test_footprint_proportional_to_batch_gives_rho_one(tmp_path):
    trials = sweep(tmp_path, [dict(dataset="mnist", batch_size=b, sys_used_mean=900.0 * MIB + b, **footprint(K * b))
                              for b in BATCHES])
    table = rank_correlations(trials, "rss_footprint")
    assert set(table["scope"]) == {"mnist"}  # one dataset: no pooled rows
    row = one(table, parameter="batch_size")
    # Exact p: of the 5! = 120 orderings, the increasing and the decreasing one are as extreme.
    assert row["n"] == 5 and row["rho"] == pytest.approx(1.0) and row["p"] == pytest.approx(2 / 120)
    # Fisher's z is infinite at rho = 1: no interval is claimed.
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    assert row["verdict"] == "larger batch_size, more memory"
    for constant in ("learning_rate", "epochs", "depth", "total_units", "max_width", "parameters"):
        assert one(table, parameter=constant)["verdict"] == f"cannot tell: {constant} is the same in every point"
    both = rank_correlations(trials)
    assert set(both["target"]) == {"rss_footprint", "sys_used_mean"}
    assert one(both, target="sys_used_mean", parameter="batch_size")["rho"] == pytest.approx(1.0)


def test_footprint_proportional_to_batch_regression_is_exact(tmp_path):
    trials = sweep(tmp_path, [dict(dataset="mnist", batch_size=b, **footprint(K * b)) for b in BATCHES])
    table = regression(trials, "rss_footprint")
    slope = one(table, term="batch_size")
    sd = statistics.stdev(BATCHES)
    # y = K * b = K * mean + (K * sd) * z: bytes per SD of batch size is K * sd
    assert slope["coef"] == pytest.approx(K * sd, rel=1e-9)
    assert slope["predictor_sd"] == pytest.approx(sd, rel=1e-12)
    assert slope["unit"] == "bytes per SD"
    assert slope["r2"] == pytest.approx(1.0, abs=1e-12)
    assert slope["n"] == 5 and slope["df"] == 3
    assert slope["verdict"] == "larger batch_size, more memory"
    assert one(table, term="intercept")["coef"] == pytest.approx(K * statistics.mean(BATCHES), rel=1e-9)
    for dropped in ("log10(learning_rate)", "epochs", "depth", "total_units", "max_width"):
        row = one(table, term=dropped)
        assert row["verdict"] == "cannot tell: dropped" and "the same in every point" in row["note"]


def test_footprint_unrelated_to_batch_is_noise(tmp_path):
    # footprint ranks 2 5 3 1 4 against batch ranks 1..5: sum of squared rank differences 20, rho exactly 0
    values = [2, 5, 3, 1, 4]
    trials = sweep(tmp_path, [dict(dataset="mnist", batch_size=b, **footprint(v * MIB))
                              for b, v in zip(BATCHES, values)])
    row = one(rank_correlations(trials, "rss_footprint"), parameter="batch_size")
    assert row["rho"] == pytest.approx(0.0, abs=1e-12)
    assert row["p"] == pytest.approx(1.0)
    assert row["ci_low"] < 0 < row["ci_high"]
    assert row["verdict"] == "not distinguishable from noise"
    fitted = one(regression(trials, "rss_footprint"), term="batch_size")
    assert fitted["ci_low"] < 0 < fitted["ci_high"]
    assert fitted["verdict"] == "not distinguishable from noise"


def test_too_few_points_cannot_tell(tmp_path):
    trials = sweep(tmp_path, [dict(batch_size=b, **footprint(K * b)) for b in BATCHES[:3]])
    row = one(rank_correlations(trials, "rss_footprint"), parameter="batch_size")
    assert row["n"] == 3 and row["verdict"] == "cannot tell: n = 3, fewer than 4 points"
    assert one(regression(trials, "rss_footprint"), term="batch_size")["verdict"].startswith("cannot tell: n = 3")


def test_repeats_are_averaged_into_one_point_per_configuration(tmp_path):
    rows = []
    for b in BATCHES:
        rows += [dict(batch_size=b, repeat=0, **footprint(K * b - MIB)), dict(batch_size=b, repeat=1,
                                                                               **footprint(K * b + MIB))]
    rows.append(dict(batch_size=8, repeat=2, status="failed", **footprint(1000 * MIB)))  # not ok: left out
    trials = sweep(tmp_path, rows)
    per_config = one(regression(trials, "rss_footprint"), term="batch_size")
    assert per_config["n"] == 5 and per_config["r2"] == pytest.approx(1.0, abs=1e-12)
    every = one(regression(trials, "rss_footprint", per_config=False), term="batch_size")
    assert every["n"] == 10 and every["r2"] < 1.0
    assert every["coef"] == pytest.approx(K * statistics.stdev(BATCHES * 2), rel=1e-9)


def test_collinear_predictors_are_dropped_with_a_note(tmp_path):
    # equal widths: total_units = 10 * depth, and max_width is constant
    rows = [dict(hidden=[10] * d, batch_size=b, **footprint(K * b + d * MIB))
            for d, b in [(1, 8), (2, 32), (3, 16), (1, 64), (2, 128), (3, 8)]]
    table = regression(sweep(tmp_path, rows), "rss_footprint")
    assert "linear combination" in one(table, term="total_units")["note"]
    assert "the same in every point" in one(table, term="max_width")["note"]
    assert one(table, term="depth")["coef"] == pytest.approx(
        MIB * statistics.stdev([1, 2, 3, 1, 2, 3]), rel=1e-9)
    assert one(table, term="batch_size")["coef"] == pytest.approx(
        K * statistics.stdev([8, 32, 16, 64, 128, 8]), rel=1e-9)


def test_pooled_with_dataset_as_a_factor(tmp_path):
    offset = 40 * MIB  # cifar-10 uses this much more at every batch size
    rows = [dict(dataset="mnist", batch_size=b, **footprint(K * b)) for b in BATCHES]
    rows += [dict(dataset="cifar-10", batch_size=b, **footprint(K * b + offset)) for b in BATCHES[1:]]
    trials = sweep(tmp_path, rows)
    table = regression(trials, "rss_footprint")
    assert set(table["scope"]) == {"mnist", "cifar-10", "pooled"}
    pooled = table[table["scope"] == "pooled"]
    # the first dataset alphabetically (cifar-10) is the reference
    factor = one(pooled, term="dataset[mnist]")
    assert factor["coef"] == pytest.approx(-offset, rel=1e-9)
    assert factor["unit"] == "bytes more than cifar-10"
    assert factor["verdict"] == "less memory than cifar-10"
    batches = BATCHES + BATCHES[1:]
    assert one(pooled, term="batch_size")["coef"] == pytest.approx(K * statistics.stdev(batches), rel=1e-9)
    assert one(pooled, term="batch_size")["n"] == 9
    correlations = rank_correlations(trials, "rss_footprint")
    assert one(correlations, scope="pooled", parameter="batch_size")["n"] == 9
    assert one(correlations, scope="cifar-10", parameter="batch_size")["rho"] == pytest.approx(1.0)
