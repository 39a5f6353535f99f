"""Which hyperparameters drive memory: rank correlations and a multiple regression.

Both use the rows with status `ok` and, by default, one point per
configuration (the mean over its repeats): repeats measure the same
hyperparameters again, and counting them as independent points would make
an effect look surer than the number of configurations allows. Pass
`per_config=False` to use every repeat.

Each is computed per dataset and, when there are several datasets, pooled
(scope "pooled"). The `verdict` column says in words what the 95%
confidence interval allows: "larger X, more memory", "larger X, less
memory", "not distinguishable from noise" (the interval includes 0), or
"cannot tell: <why>" (too few points, a constant column).
"""

import itertools

from ._deps import require

require("numpy", "pandas", "scipy")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats as sps  # noqa: E402

from .tables import ok_rows, trials_of  # noqa: E402

TARGETS = ("rss_footprint", "sys_used_mean")
CORRELATED = ("learning_rate", "epochs", "batch_size", "depth", "total_units", "max_width", "parameters")
REGRESSORS = ("log10(learning_rate)", "epochs", "batch_size", "depth", "total_units", "max_width")
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
    if "log10(learning_rate)" in columns:
        rows = rows.assign(**{"log10(learning_rate)": np.log10(rows["learning_rate"].astype(float))})
    keep = ["dataset"] + [c for c in columns if c != target] + [target]
    if not per_config:
        return rows[keep].reset_index(drop=True)
    grouped = rows.groupby(["dataset", "config"], sort=False)
    frame = grouped[[c for c in keep if c not in ("dataset", target)]].first()
    frame[target] = grouped[target].mean()
    return frame.reset_index().drop(columns="config")[keep]


def _scopes(data):
    datasets = sorted(data["dataset"].unique())
    scopes = [(name, data[data["dataset"] == name]) for name in datasets]
    if len(datasets) > 1:
        scopes.append(("pooled", data))
    return scopes


def direction(value, parameter, tolerance=0.0):
    return f"larger {parameter}, {'more' if value > tolerance else 'less'} memory"


def rank_correlations(trials, target=None, per_config=True):
    """Spearman's rho of each hyperparameter with each target, per dataset and pooled.

    Columns: scope, target, parameter, n, rho, p (two-sided: exact over every
    ordering up to EXACT_MAX_POINTS points, scipy's beyond), ci_low,
    ci_high (95%, Fisher z with the variance 1.06 / (n - 3) of Fieller,
    Hartley and Pearson for Spearman's rho), verdict.
    """
    rows = []
    for name in _targets(target):
        data = points(trials, name, CORRELATED, per_config)
        for scope, subset in _scopes(data):
            for parameter in CORRELATED:
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
    perfect rank order of 5 points p = 1e-24, when 2 of the 120 orderings are as extreme (p = 0.017)."""
    rank_x = sps.rankdata(x)
    rank_y = sps.rankdata(y)
    orderings = np.array(list(itertools.permutations(rank_y)))
    centred_x = rank_x - rank_x.mean()
    centred = orderings - orderings.mean(axis=1, keepdims=True)
    rhos = centred @ centred_x / (np.linalg.norm(centred, axis=1) * np.linalg.norm(centred_x))
    return float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))


def regression(trials, target=None, per_config=True):
    """Ordinary least squares of each target on the standardized hyperparameters, per dataset and pooled.

    Predictors: log10(learning_rate), epochs, batch_size, depth, total_units,
    max_width, each as (x - mean) / SD (SD with ddof 1, given in
    `predictor_sd`), so a coefficient is bytes per standard deviation of its
    predictor and coefficients compare. The pooled fit adds one indicator per
    dataset but the first (alphabetically): its coefficient is bytes more
    than that dataset. A predictor constant in the scope, or a linear
    combination of the terms before it, is dropped: its row says so in
    `note`, with NaN figures.

    Columns: scope, target, term, coef, se, t, p, ci_low, ci_high (95%,
    Student's t with df = n - terms), unit, predictor_sd, r2, n, df, verdict,
    note.
    """
    rows = []
    for name in _targets(target):
        data = points(trials, name, REGRESSORS, per_config)
        for scope, subset in _scopes(data):
            rows.extend(_fit(scope, name, subset, pooled=scope == "pooled"))
    return pd.DataFrame(rows, columns=["scope", "target", "term", "coef", "se", "t", "p", "ci_low", "ci_high", "unit",
                                       "predictor_sd", "r2", "n", "df", "verdict", "note"])


def _design(data, pooled):
    """Columns of the design matrix: [(term, values, unit, sd)] and [(term, note)] for the dropped ones."""
    n = len(data)
    terms = [("intercept", np.ones(n), "bytes", np.nan)]
    dropped = []
    if pooled:
        datasets = sorted(data["dataset"].unique())
        for dataset in datasets[1:]:
            terms.append((f"dataset[{dataset}]", (data["dataset"] == dataset).to_numpy(float),
                          f"bytes more than {datasets[0]}", np.nan))
    for predictor in REGRESSORS:
        values = data[predictor].to_numpy(float)
        sd = values.std(ddof=1) if n > 1 else 0.0
        if not sd > 0:
            dropped.append((predictor, "the same in every point: dropped"))
            continue
        terms.append((predictor, (values - values.mean()) / sd, "bytes per SD", sd))
    kept = []
    for term in terms:
        trial = np.column_stack([t[1] for t in kept] + [term[1]])
        if np.linalg.matrix_rank(trial) == len(kept) + 1:
            kept.append(term)
        else:
            dropped.append((term[0], "a linear combination of the terms before it: dropped"))
    return kept, dropped


def _fit(scope, target, data, pooled):
    y = data[target].to_numpy(float)
    n = len(y)
    kept, dropped = _design(data, pooled)
    base = {"scope": scope, "target": target, "n": n, "r2": np.nan, "df": n - len(kept)}
    rows = [dict(base, term=term, coef=np.nan, se=np.nan, t=np.nan, p=np.nan, ci_low=np.nan, ci_high=np.nan,
                 unit="", predictor_sd=np.nan, verdict="cannot tell: dropped", note=note) for term, note in dropped]
    df = n - len(kept)
    why = None
    if n < MIN_POINTS:
        why = f"cannot tell: n = {n}, fewer than {MIN_POINTS} points"
    elif df < 1:
        why = f"cannot tell: {n} points for {len(kept)} terms"
    elif np.all(y == y[0]):
        why = f"cannot tell: {target} is the same in every point"
    if why:
        return [dict(base, term=term, coef=np.nan, se=np.nan, t=np.nan, p=np.nan, ci_low=np.nan, ci_high=np.nan,
                     unit=unit, predictor_sd=sd, verdict=why, note="")
                for term, _, unit, sd in kept] + rows
    x = np.column_stack([t[1] for t in kept])
    coef, _, _, _ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ coef
    rss = float(residual @ residual)
    tss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - rss / tss
    covariance = rss / df * np.linalg.inv(x.T @ x)
    se = np.sqrt(np.clip(np.diag(covariance), 0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = coef / se
    p = 2 * sps.t.sf(np.abs(t), df)
    half = sps.t.ppf(0.975, df) * se
    # An exact fit leaves rounding-sized coefficients with zero SE: read
    # anything below it as zero rather than as an effect.
    tolerance = 1e-9 * max(np.abs(y).max(), 1.0)
    fitted = []
    for index, (term, _, unit, sd) in enumerate(kept):
        low, high = coef[index] - half[index], coef[index] + half[index]
        if term == "intercept":
            verdict = ""
        elif low <= tolerance and high >= -tolerance:
            verdict = NOISE
        elif term.startswith("dataset["):
            verdict = f"{'more' if coef[index] > 0 else 'less'} memory than {unit.rsplit(' ', 1)[-1]}"
        else:
            verdict = direction(coef[index], term)
        fitted.append(dict(base, term=term, coef=float(coef[index]), se=float(se[index]), t=float(t[index]),
                           p=float(p[index]), ci_low=float(low), ci_high=float(high), unit=unit, predictor_sd=sd,
                           r2=r2, verdict=verdict, note=""))
    return fitted + rows
