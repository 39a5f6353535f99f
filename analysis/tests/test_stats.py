"""rank_correlations and drivers (the statsmodels fit) on sweeps built with a known relation (or none)."""

import math

import pytest

from memsweep_analysis import load
from memsweep_analysis.drivers import drivers
from memsweep_analysis.stats import rank_correlations
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
    trials = sweep(tmp_path, [dict(dataset="mnist", batch_size=b, sys_used_mean=900.0 * MIB + b, parameters=101_770,
                                   **footprint(K * b)) for b in BATCHES])
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


def test_footprint_proportional_to_batch_fit_is_exact(tmp_path):
    trials = sweep(tmp_path, [dict(dataset="mnist", batch_size=b, **footprint(K * b)) for b in BATCHES])
    terms, findings, effects = drivers(trials, "rss_footprint")
    slope = one(effects, term="batch size")
    assert slope["effect"] == pytest.approx(K, rel=1e-9) and slope["unit"] == "per example of batch size"
    assert slope["verdict"] == "more memory"
    row = one(terms, term="batch size")
    assert row["r2"] == pytest.approx(1.0, abs=1e-12) and row["n"] == 5 and row["partial_eta2"] == 1.0
    assert one(terms, term="residual")["df"] == 3
    assert findings["term"].tolist() == ["batch size"]  # nothing else varies: nothing else is a term


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
    _, findings, effects = drivers(trials, "rss_footprint")
    fitted = one(effects, term="batch size")
    assert fitted["ci_low"] < 0 < fitted["ci_high"]
    assert fitted["verdict"] == "not distinguishable from noise"
    assert one(findings, term="batch size")["verdict"] == "not distinguishable from noise"


def test_too_few_points_cannot_tell(tmp_path):
    trials = sweep(tmp_path, [dict(batch_size=b, **footprint(K * b)) for b in BATCHES[:3]])
    row = one(rank_correlations(trials, "rss_footprint"), parameter="batch_size")
    assert row["n"] == 3 and row["verdict"] == "cannot tell: n = 3, fewer than 4 points"
    _, findings, _ = drivers(trials, "rss_footprint")
    assert findings.empty and findings.attrs["notes"] == [("synthetic", "rss_footprint",
                                                          "cannot tell: n = 3, fewer than 4 points")]


def test_repeats_are_averaged_into_one_point_per_configuration(tmp_path):
    rows = []
    for b in BATCHES:
        rows += [dict(batch_size=b, repeat=0, **footprint(K * b - MIB)), dict(batch_size=b, repeat=1,
                                                                               **footprint(K * b + MIB))]
    rows.append(dict(batch_size=8, repeat=2, status="failed", **footprint(1000 * MIB)))  # not ok: left out
    trials = sweep(tmp_path, rows)
    per_config = one(drivers(trials, "rss_footprint")[0], term="batch size")
    assert per_config["n"] == 5 and per_config["r2"] == pytest.approx(1.0, abs=1e-12)
    every = one(drivers(trials, "rss_footprint", per_config=False)[0], term="batch size")
    assert every["n"] == 10 and every["r2"] < 1.0
    slope = one(drivers(trials, "rss_footprint", per_config=False)[2], term="batch size")
    assert slope["effect"] == pytest.approx(K, rel=1e-9)  # the repeats' +-1 MiB cancel
    assert slope["ci_low"] < K < slope["ci_high"]


def test_collinear_predictors_are_dropped_with_a_note(tmp_path):
    # equal widths: total_units = 10 * depth, and max_width is constant
    rows = [dict(hidden=[10] * d, batch_size=b, **footprint(K * b + d * MIB))
            for d, b in [(1, 8), (2, 32), (3, 16), (1, 64), (2, 128), (3, 8)]]
    terms, _, effects = drivers(sweep(tmp_path, rows), "rss_footprint")
    assert "cannot be identified" in one(terms, term="hidden units")["note"]
    assert "widest hidden layer" not in set(terms["term"])  # the same in every point: not a term at all
    assert one(effects, term="depth")["effect"] == pytest.approx(MIB, rel=1e-6)
    assert one(effects, term="batch size")["effect"] == pytest.approx(K, rel=1e-6)


def test_pooled_with_dataset_as_a_factor(tmp_path):
    offset = 40 * MIB  # cifar-10 uses this much more at every batch size
    rows = [dict(dataset="mnist", batch_size=b, **footprint(K * b)) for b in BATCHES]
    rows += [dict(dataset="cifar-10", batch_size=b, **footprint(K * b + offset)) for b in BATCHES[1:]]
    trials = sweep(tmp_path, rows)
    terms, _, effects = drivers(trials, "rss_footprint")
    assert set(terms["scope"]) == {"mnist", "cifar-10", "pooled"}
    pooled = effects[effects["scope"] == "pooled"]
    # mnist comes first in the plan: the reference level
    factor = one(pooled, term="dataset")
    assert factor["level"] == "cifar-10 − mnist" and factor["effect"] == pytest.approx(offset, rel=1e-6)
    assert factor["verdict"] == "more memory"
    assert one(pooled, term="batch size")["effect"] == pytest.approx(K, rel=1e-6)
    assert one(terms[terms["scope"] == "pooled"], term="batch size")["n"] == 9
    correlations = rank_correlations(trials, "rss_footprint")
    assert one(correlations, scope="pooled", parameter="batch_size")["n"] == 9
    assert one(correlations, scope="cifar-10", parameter="batch_size")["rho"] == pytest.approx(1.0)
