"""Which hyperparameters drive memory: rank correlations and a linear model with factors and interactions.

Both use the rows with status `ok` and, by default, one point per
configuration (the mean over its repeats): repeats measure the same
hyperparameters again, and counting them as independent points would make
an effect look surer than the number of configurations allows. Pass
`per_config=False` to use every repeat.

Each is computed per dataset and, when there are several datasets, pooled
(scope "pooled", where the dataset is one more factor). `drivers` fits the
linear model with statsmodels' formula interface (docs/analysis.md,
"What drives memory"). The `verdict` column says in words what the 95%
confidence interval allows: "larger X, more memory", "larger X, less
memory", "not distinguishable from noise" (the interval includes 0), or
"cannot tell: <why>" (too few points, a constant column).
"""

import itertools

from ._deps import require

require("numpy", "pandas", "scipy", "statsmodels")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as sps  # noqa: E402

from .tables import numeric_param_columns, ok_rows, trials_of  # noqa: E402

TARGETS = ("rss_footprint", "sys_used_mean")
CORRELATED = ("learning_rate", "epochs", "batch_size", "depth", "total_units", "max_width", "parameters")
NOISE = "not distinguishable from noise"
MIN_POINTS = 4
# Up to this many points the p-value is exact (8! = 40,320 orderings).
EXACT_MAX_POINTS = 8
Z95 = sps.norm.ppf(0.975)


def _targets(target):
    if target is None:
        return list(TARGETS)
    return [target] if isinstance(target, str) else list(target)


def points(trials, target, columns, per_config=True):
    """The ok rows with a measured target: one per (dataset, config) with the mean target when per_config."""
    rows = ok_rows(trials_of(trials))
    rows = rows[rows[target].notna()]
    keep = list(dict.fromkeys(["dataset"] + [c for c in columns if c != target] + [target]))
    if not per_config:
        return rows[keep].reset_index(drop=True)
    # observed=True: a categorical dataset would otherwise give every (dataset, config) pair, most of them empty
    grouped = rows.groupby([rows["dataset"].astype(str), "config"], sort=False, observed=True)
    frame = rows.loc[grouped.head(1).index, keep].reset_index(drop=True)
    frame[target] = grouped[target].mean().to_numpy()
    return frame


def _scopes(data):
    datasets = sorted(set(data["dataset"].astype(str)))
    scopes = [(name, data[data["dataset"] == name]) for name in datasets]
    if len(datasets) > 1:
        scopes.append(("pooled", data))
    return scopes


def direction(value, parameter, tolerance=0.0):
    return f"larger {parameter}, {'more' if value > tolerance else 'less'} memory"


def rank_correlations(trials, target=None, per_config=True):
    """Spearman's rho of each hyperparameter (CORRELATED, then the free parameters that are numbers: `bptt`)
    with each target, per dataset and pooled. A parameter no point of a scope has (a program's blank field:
    its file sets no epochs, no hidden widths) gives no row there rather than "n = 0".

    Columns: scope, target, parameter, n, rho, p (two-sided: exact over every
    ordering up to EXACT_MAX_POINTS points, scipy's beyond), ci_low,
    ci_high (95%, Fisher z with the variance 1.06 / (n - 3) of Fieller,
    Hartley and Pearson for Spearman's rho), verdict.
    """
    rows = []
    parameters = list(CORRELATED) + [c for c in numeric_param_columns(trials_of(trials)) if c not in CORRELATED]
    for name in _targets(target):
        data = points(trials, name, parameters, per_config)
        for scope, subset in _scopes(data):
            for parameter in parameters:
                if subset[parameter].isna().all() and len(subset):
                    continue
                pair = subset[[parameter, name]].dropna()
                rows.append(_correlation(scope, name, parameter, pair[parameter].to_numpy(float),
                                         pair[name].to_numpy(float)))
    return pd.DataFrame(rows, columns=["scope", "target", "parameter", "n", "rho", "p", "ci_low", "ci_high",
                                       "verdict"])


def _correlation(scope, target, parameter, x, y):
    row = {"scope": scope, "target": target, "parameter": parameter, "n": len(x), "rho": np.nan, "p": np.nan,
           "ci_low": np.nan, "ci_high": np.nan}
    if len(x) < MIN_POINTS:
        return dict(row, verdict=f"cannot tell: n = {len(x)}, fewer than {MIN_POINTS} points")
    if np.all(x == x[0]):
        return dict(row, verdict=f"cannot tell: {parameter} is the same in every point")
    if np.all(y == y[0]):
        return dict(row, verdict=f"cannot tell: {target} is the same in every point")
    rho, p = sps.spearmanr(x, y)
    if len(x) <= EXACT_MAX_POINTS:
        p = _exact_p(x, y, rho)
    if abs(rho) >= 1.0 - 1e-12:
        # Fisher's z is infinite at |rho| = 1: no interval; the exact p alone decides.
        low = high = np.nan
        verdict = NOISE if p >= 0.05 else direction(rho, parameter)
    else:
        z = np.arctanh(rho)
        half = Z95 * np.sqrt(1.06 / (len(x) - 3))
        low, high = np.tanh(z - half), np.tanh(z + half)
        verdict = NOISE if (low <= 0 <= high or p >= 0.05) else direction(rho, parameter)
    return dict(row, rho=float(rho), p=float(p), ci_low=float(low), ci_high=float(high), verdict=verdict)


def _exact_p(x, y, rho):
    """Two-sided permutation p of Spearman's rho over every ordering of y: scipy's t approximation calls a
    perfect rank order of 5 points p = 1e-24, when 2 of the 120 orderings are as extreme (p = 0.017).

    Kept by hand beside the statsmodels fits (drivers.py) because statsmodels has no rank correlation at all,
    and scipy's p is the t approximation above, wrong by orders of magnitude at the few points a sweep has."""
    rank_x = sps.rankdata(x)
    rank_y = sps.rankdata(y)
    orderings = np.array(list(itertools.permutations(rank_y)))
    centred_x = rank_x - rank_x.mean()
    centred = orderings - orderings.mean(axis=1, keepdims=True)
    rhos = centred @ centred_x / (np.linalg.norm(centred, axis=1) * np.linalg.norm(centred_x))
    return float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


