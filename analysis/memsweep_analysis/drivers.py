"""What drives memory: a linear model of each target with the varying fields as factors, numeric terms and
their interactions, fitted with statsmodels' formula interface, its terms ranked by partial eta².

Points are stats.points: the ok rows, one per configuration (the mean over its repeats) unless
per_config=False. Per scope (each dataset, and "pooled" when there are several, where the dataset is one more
factor):

- factors: the categorical fields (derived.CATEGORICAL_COLUMNS and the free parameters' text columns) with at
  least 2 levels in the scope, treatment-coded against their first level in plan order;
- numeric terms: learning rate as log10; batch size and the widths linear, or log2 when every value is a power
  of two and log2 fits better (lower AIC of the whole model; a tie stays linear); the rest linear;
- interactions: each factor with each numeric term, then each pair of factors. A term is kept only if it adds
  as many independent columns to the design matrix as it has (its rank), and leaves at least MIN_RESIDUAL_DF
  residual degrees of freedom; otherwise it is dropped and `note` says why.

ANOVA type 2 (statsmodels.stats.anova.anova_lm): each term is tested after every other term that does not
contain it. Type 2 respects marginality and does not depend on how the factors are coded; type 3 under
treatment coding would test a main effect at the reference level of every factor it interacts with only.
partial eta² = SS_term / (SS_term + SS_residual).

Findings (what the report says, ranked): a numeric term that interacts with a factor is stated through the
interaction, as its slope within each level of the factor; that finding's share is the partial eta² of the
numeric field's whole slope (its main effect and its interactions, tested together: "no slope in any level").
Every other term is a finding of its own with its type 2 partial eta². Each effect has its 95% interval
(statsmodels' t_test of a contrast of the coefficients).
"""

import math
import re

from ._deps import require

require("numpy", "pandas", "statsmodels")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import patsy  # noqa: E402
import statsmodels.formula.api as smf  # noqa: E402
from statsmodels.stats.anova import anova_lm  # noqa: E402

from .derived import CATEGORICAL_COLUMNS, param_columns  # noqa: E402
from .stats import MIN_POINTS, NOISE, _scopes, _targets, points  # noqa: E402
from .tables import trials_of  # noqa: E402

MIB = 2 ** 20
MIN_RESIDUAL_DF = 2
FACTOR_LABELS = {"dataset": "dataset", "model": "model", "optimizer": "optimizer", "trainer": "trainer",
                 "channels_text": "channels", "shape": "synthetic shape", "memory_plan": "memory plan"}
# column: (label, unit of one step when linear, scales to try)
NUMERIC = {
    "learning_rate": ("learning rate", None, ("log10",)),
    "epochs": ("epochs", "epoch", ("linear",)),
    "batch_size": ("batch size", "example of batch size", ("linear", "log2")),
    "depth": ("depth", "hidden layer", ("linear",)),
    "max_width": ("widest hidden layer", "unit of the widest hidden layer", ("linear", "log2")),
    "total_units": ("hidden units", "hidden unit", ("linear", "log2")),
}
TERM_COLUMNS = ["scope", "target", "term", "kind", "df", "sum_sq", "F", "p", "partial_eta2", "n", "r2", "note"]
FINDING_COLUMNS = ["scope", "target", "rank", "term", "share", "p", "sentence", "verdict"]
EFFECT_COLUMNS = ["scope", "target", "term", "level", "effect", "ci_low", "ci_high", "p", "unit", "verdict"]


class Fit:
    """One scope's and target's fit: `terms` (the ANOVA rows and the dropped terms), `findings` (ranked), `effects`
    (every stated effect with its interval), `notes` (the choices made), or `why` when nothing could be fitted."""

    def __init__(self, scope, target):
        self.scope, self.target = scope, target
        self.terms, self.findings, self.effects, self.notes, self.why = [], [], [], [], None


def drivers(trials, target=None, per_config=True):
    """(terms, findings, effects) DataFrames over every scope and target (module docstring); the notes of each
    fit (scales chosen, terms dropped, a fit that could not be made) in findings.attrs["notes"]."""
    trials = trials_of(trials)
    factors, numeric = _candidate_columns(trials)
    fits = []
    for name in _targets(target):
        data = points(trials, name, factors + numeric, per_config)
        for scope, subset in _scopes(data):
            fits.append(fit_scope(scope, name, subset.reset_index(drop=True), factors, numeric))
    terms = pd.DataFrame([t for f in fits for t in f.terms], columns=TERM_COLUMNS)
    findings = pd.DataFrame([t for f in fits for t in f.findings], columns=FINDING_COLUMNS)
    effects = pd.DataFrame([t for f in fits for t in f.effects], columns=EFFECT_COLUMNS)
    findings.attrs["notes"] = [(f.scope, f.target, note) for f in fits for note in f.notes] + \
        [(f.scope, f.target, f.why) for f in fits if f.why]
    return terms, findings, effects


def _candidate_columns(trials):
    factors = [c for c in CATEGORICAL_COLUMNS if c in trials.columns]
    numeric = [c for c in NUMERIC if c in trials.columns]
    for column in param_columns(trials).values():
        values = trials[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            factors.append(column)
        elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            numeric.append(column)
    return factors, numeric


def _label(column):
    if column in FACTOR_LABELS:
        return FACTOR_LABELS[column]
    return NUMERIC[column][0] if column in NUMERIC else column


def _safe(column):
    return re.sub(r"\W", "_", column)


def _is_powers_of_two(values):
    values = np.asarray(values, float)
    return bool(np.all(values > 0) and np.all(np.log2(values) == np.round(np.log2(values))))


def fit_scope(scope, target, data, factor_columns, numeric_columns):
    fit = Fit(scope, target)
    n = len(data)
    frame = pd.DataFrame({"y": data[target].to_numpy(float)})
    factors, numeric = {}, {}
    for column in factor_columns:
        if scope != "pooled" and column == "dataset":
            continue
        values = data[column].astype(object)
        if values.isna().any() or values.nunique() < 2:
            continue
        levels = list(dict.fromkeys(values))
        if isinstance(data[column].dtype, pd.CategoricalDtype):
            levels = [c for c in data[column].cat.categories if c in set(values)]
        name = "f_" + _safe(column)
        frame[name] = pd.Categorical(values, categories=levels)
        factors[name] = (column, levels)
    scales = {}
    for column in numeric_columns:
        values = pd.to_numeric(data[column], errors="coerce")
        if values.isna().any() or values.nunique() < 2:
            continue
        choices = NUMERIC.get(column, (column, f"unit of {column}", ("linear",)))[2]
        choices = [c for c in choices if c != "log2" or _is_powers_of_two(values)]
        if choices == ["log10"] and not np.all(values > 0):
            choices = ["linear"]
        numeric["x_" + _safe(column)] = (column, values)
        scales["x_" + _safe(column)] = choices
    for name, (column, values) in numeric.items():
        frame[name] = _scaled(values, scales[name][0])
    if n < MIN_POINTS:
        fit.why = f"cannot tell: n = {n}, fewer than {MIN_POINTS} points"
        return fit
    if not factors and not numeric:
        fit.why = "cannot tell: no field varies"
        return fit
    if np.all(frame["y"] == frame["y"].iloc[0]):
        fit.why = f"cannot tell: {target} is the same in every point"
        return fit
    kept = _identifiable_terms(fit, frame, factors, numeric)
    # log2 or linear: whichever the whole model fits better (a tie, as with two values, stays linear)
    for name in numeric:
        if len(scales[name]) > 1 and name in kept:
            best, best_aic = scales[name][0], _aic(frame, kept)
            for scale in scales[name][1:]:
                trial = frame.assign(**{name: _scaled(numeric[name][1], scale)})
                aic = _aic(trial, kept)
                if aic < best_aic - 1e-9:
                    best, best_aic = scale, aic
            frame[name] = _scaled(numeric[name][1], best)
            scales[name] = [best]
            fit.notes.append(f"{_label(numeric[name][0])} entered {_scale_words(best)}"
                             + (" (all powers of two; chosen by the lower AIC)" if len(NUMERIC.get(
                                 numeric[name][0], ("", "", ()))[2]) > 1 and _is_powers_of_two(numeric[name][1])
                                else ""))
    model = smf.ols("y ~ " + (" + ".join(kept) or "1"), data=frame).fit()
    _anova(fit, model, frame, kept, factors, numeric, scales)
    return fit


def _scaled(values, scale):
    values = np.asarray(values, float)
    return {"linear": values, "log2": np.log2(values) if np.all(values > 0) else values,
            "log10": np.log10(values) if np.all(values > 0) else values}[scale]


def _scale_words(scale):
    return {"linear": "linearly", "log2": "as log2", "log10": "as log10"}[scale]


def _aic(frame, kept):
    return smf.ols("y ~ " + (" + ".join(kept) or "1"), data=frame).fit().aic


def _term_name(term, factors, numeric):
    """"model × batch size" for C(f_model):x_batch_size."""
    parts = []
    for part in term.split(":"):
        name = part[2:-1] if part.startswith("C(") else part
        column = factors[name][0] if name in factors else numeric[name][0]
        parts.append(_label(column))
    return " × ".join(parts)


def _identifiable_terms(fit, frame, factors, numeric):
    """The candidate terms in order (factors, numeric terms, factor × numeric, factor × factor) that add their
    full rank to the design matrix and leave MIN_RESIDUAL_DF residual degrees of freedom."""
    candidates = [f"C({f})" for f in factors] + list(numeric)
    candidates += [f"C({f}):{x}" for f in factors for x in numeric]
    names = list(factors)
    candidates += [f"C({a}):C({b})" for i, a in enumerate(names) for b in names[i + 1:]]
    kept, rank, width_before = [], 1, 1
    n = len(frame)
    for term in candidates:
        matrix = patsy.dmatrix(" + ".join(kept + [term]), frame).view(np.ndarray)
        width = matrix.shape[1] - width_before
        added = np.linalg.matrix_rank(matrix) - rank
        label = _term_name(term, factors, numeric)
        if added < width:
            fit.terms.append(_dropped(fit, label, term, n, "cannot be identified from these configurations "
                                      "(aliased with the terms before it): dropped"))
        elif n - (rank + added) < MIN_RESIDUAL_DF:
            fit.terms.append(_dropped(fit, label, term, n, f"too few configurations ({n}) to fit it beside the "
                                      "terms before it: dropped"))
        else:
            kept.append(term)
            rank += added
            width_before = matrix.shape[1]
    return kept


def _dropped(fit, label, term, n, note):
    return {"scope": fit.scope, "target": fit.target, "term": label, "kind": _kind(term), "df": math.nan,
            "sum_sq": math.nan, "F": math.nan, "p": math.nan, "partial_eta2": math.nan, "n": n, "r2": math.nan,
            "note": note}


def _kind(term):
    if ":" in term:
        return "interaction"
    return "factor" if term.startswith("C(") else "numeric"


def _eta2(sum_sq, residual):
    if sum_sq + residual <= 0:
        return math.nan
    return sum_sq / (sum_sq + residual)


def _anova(fit, model, frame, kept, factors, numeric, scales):
    n = len(frame)
    table = anova_lm(model, typ=2)
    residual = float(model.ssr)
    # An exact fit leaves rounding-sized residuals: F and p are then meaningless, eta² is 1 for any real effect.
    exact = residual <= 1e-12 * max(float(((frame["y"] - frame["y"].mean()) ** 2).sum()), 1.0)
    for term in kept:
        row = table.loc[term]
        fit.terms.append({"scope": fit.scope, "target": fit.target, "term": _term_name(term, factors, numeric),
                          "kind": _kind(term), "df": float(row["df"]), "sum_sq": float(row["sum_sq"]),
                          "F": math.nan if exact else float(row["F"]), "p": math.nan if exact else float(row["PR(>F)"]),
                          "partial_eta2": _eta2(float(row["sum_sq"]), 0.0 if exact else residual),
                          "n": n, "r2": float(model.rsquared), "note": ""})
    fit.terms.append({"scope": fit.scope, "target": fit.target, "term": "residual", "kind": "residual",
                      "df": float(model.df_resid), "sum_sq": residual, "F": math.nan, "p": math.nan,
                      "partial_eta2": math.nan, "n": n, "r2": float(model.rsquared), "note": ""})
    findings = []
    by_label = {t["term"]: t for t in fit.terms}

    def real(term):  # an interaction the data tell from noise: only those change how a slope is stated
        row = by_label[_term_name(term, factors, numeric)]
        return row["p"] <= 0.05 if not pd.isna(row["p"]) else row["sum_sq"] > 1e-9 * max(residual, 1.0)

    interacting = {x: [t for t in kept if ":" in t and t.endswith(":" + x) and real(t)] for x in numeric}
    # A factor whose difference depends on a numeric term (a real factor × numeric interaction) is stated
    # with the strongest such interaction, not on its own: its difference at the numeric terms' means
    # mostly restates the slopes (marginality: no main effect read apart from its interaction).
    host = {}
    for term in kept:
        parts = term.split(":")
        if len(parts) == 2 and parts[1] in numeric and real(term):
            current = host.get(parts[0])
            own = by_label[_term_name(term, factors, numeric)]["partial_eta2"]
            if current is None or own > by_label[_term_name(current, factors, numeric)]["partial_eta2"]:
                host[parts[0]] = term
    for term in kept:
        label = _term_name(term, factors, numeric)
        parts = term.split(":")
        if term in numeric and interacting[term]:
            continue  # stated through its interaction(s), below
        if len(parts) == 1 and term in host:
            continue  # stated with its interaction, below
        own = by_label[label]["partial_eta2"]
        if len(parts) == 2 and parts[1] in numeric:
            x = parts[1]
            effects = _slopes(fit, model, frame, kept, factors, numeric, scales, x, by=parts[0][2:-1], label=label)
            differences = []
            if host.get(parts[0]) == term:
                differences = _differences(fit, model, frame, factors, numeric, parts[0][2:-1], by=None,
                                           label=label)
            if term in interacting[x]:
                # the sentence states x's slope within each level (and the factor's difference, when it is
                # stated here): its share is that of "no slope in any level, and no difference"
                share, p = _joint(model, np.vstack([e.pop("_contrast") for e in effects + differences]), exact)
            else:
                share, p = own, by_label[label]["p"]
            if differences:
                if exact:
                    p = math.nan
                noisy = all(e["verdict"] == NOISE for e in effects + differences) or (not pd.isna(p) and p > 0.05)
                findings.append({"scope": fit.scope, "target": fit.target, "term": label, "share": share,
                                 "own": own, "p": p,
                                 "sentence": _sentence(effects) + "; " + _sentence(differences),
                                 "verdict": NOISE if noisy else "an effect"})
                fit.effects.extend({k: v for k, v in e.items() if k != "_contrast"} for e in effects + differences)
                continue
        else:
            share, p = own, by_label[label]["p"]
            if term in numeric:
                effects = _slopes(fit, model, frame, kept, factors, numeric, scales, term, by=None, label=label)
            elif len(parts) == 1:
                effects = _differences(fit, model, frame, factors, numeric, parts[0][2:-1], by=None, label=label)
            else:
                effects = _differences(fit, model, frame, factors, numeric, parts[1][2:-1], by=parts[0][2:-1],
                                       label=label)
        if exact:
            p = math.nan
        noisy = all(e["verdict"] == NOISE for e in effects) or (not pd.isna(p) and p > 0.05)
        findings.append({"scope": fit.scope, "target": fit.target, "term": label, "share": share, "own": own, "p": p,
                         "sentence": _sentence(effects), "verdict": NOISE if noisy else "an effect"})
        fit.effects.extend({k: v for k, v in e.items() if k != "_contrast"} for e in effects)
    findings.sort(key=lambda f: (-(f["share"] if not pd.isna(f["share"]) else -1), -(f["own"] if not pd.isna(
        f["own"]) else -1)))
    for rank, finding in enumerate(findings, 1):
        finding["rank"] = rank
        del finding["own"]
    fit.findings = findings


def _joint(model, contrasts, exact):
    """(partial eta², p) of the hypothesis that every row of `contrasts` is 0 (statsmodels' Wald F test):
    eta² = F df1 / (F df1 + df2), the share of SS_hypothesis / (SS_hypothesis + SS_residual)."""
    if exact:
        return (1.0 if np.any(np.abs(contrasts @ model.params.to_numpy()) > 0) else math.nan), math.nan
    test = model.f_test(contrasts)
    f_value = float(np.squeeze(test.fvalue))
    return f_value * test.df_num / (f_value * test.df_num + test.df_denom), float(np.squeeze(test.pvalue))


def _grid(frame, factors, numeric, fixed):
    """Every combination of the factors' levels not in `fixed`, numeric terms at their mean, `fixed` set."""
    rows = [{}]
    for name, (_, levels) in factors.items():
        if name in fixed:
            continue
        rows = [dict(r, **{name: level}) for r in rows for level in levels]
    base = {x: float(frame[x].mean()) for x in numeric}
    return pd.DataFrame([dict(base, **r, **fixed) for r in rows])


def _mean_row(model, grid):
    matrix = patsy.build_design_matrices([model.model.data.design_info], grid, return_type="dataframe")[0]
    return matrix.mean(axis=0).to_numpy()


def _effect(fit, model, contrast, term, level, unit):
    test = model.t_test(contrast.reshape(1, -1))
    value = float(np.squeeze(test.effect))
    if model.df_resid > 0 and model.ssr > 0:
        low, high = (float(v) for v in np.squeeze(test.conf_int(alpha=0.05)))
        p = float(np.squeeze(test.pvalue))
    else:
        low = high = p = math.nan
    tolerance = 1e-9 * max(abs(value), 1.0)
    verdict = NOISE if (not pd.isna(low) and low <= tolerance and high >= -tolerance) else (
        "more memory" if value > 0 else "less memory")
    return {"scope": fit.scope, "target": fit.target, "term": term, "level": level, "effect": value,
            "ci_low": low, "ci_high": high, "p": p, "unit": unit, "verdict": verdict, "_contrast": contrast}


def _step_unit(column, scale):
    label, unit, _ = NUMERIC.get(column, (column, f"unit of {column}", ()))
    return {"linear": f"per {unit or label}", "log2": f"per doubling of {label}",
            "log10": f"per tenfold {label}"}[scale]


def _slopes(fit, model, frame, kept, factors, numeric, scales, x, by, label):
    """The slope of x (per step of its scale), within each level of `by`, or averaged over the factors."""
    unit = _step_unit(numeric[x][0], scales[x][0])
    levels = factors[by][1] if by else [None]
    effects = []
    for level in levels:
        fixed = {by: level} if by else {}
        at = _grid(frame, factors, numeric, fixed)
        mean = float(frame[x].mean())
        contrast = _mean_row(model, at.assign(**{x: mean + 1.0})) - _mean_row(model, at.assign(**{x: mean}))
        effects.append(_effect(fit, model, contrast, label, "" if level is None else str(level), unit))
    return effects


def _differences(fit, model, frame, factors, numeric, factor, by, label):
    """Each level of `factor` against its first, at the numeric terms' means, within each level of `by`."""
    levels = factors[factor][1]
    outer = factors[by][1] if by else [None]
    effects = []
    for where in outer:
        fixed = {by: where} if by else {}
        reference = _mean_row(model, _grid(frame, factors, numeric, dict(fixed, **{factor: levels[0]})))
        for level in levels[1:]:
            row = _mean_row(model, _grid(frame, factors, numeric, dict(fixed, **{factor: level})))
            name = f"{level} − {levels[0]}" + ("" if where is None else f" for {where}")
            effects.append(_effect(fit, model, row - reference, label, name, "at the mean of the numeric terms"))
    return effects


def _mib(value):
    value /= MIB
    if abs(value) >= 0.1 or value == 0:
        return f"{value:+.2f}"
    return f"{value:+.3f}" if abs(value) >= 0.001 else f"{value:+.2g}"


def _sentence(effects):
    """"per example of batch size: +0.30 MiB [+0.29, +0.31] for cnn, +0.010 MiB [...] for mlp"."""
    if not effects:
        return ""
    parts = []
    for effect in effects:
        interval = "" if pd.isna(effect["ci_low"]) else f" [{_mib(effect['ci_low'])}, {_mib(effect['ci_high'])}]"
        noise = " (not distinguishable from noise)" if effect["verdict"] == NOISE else ""
        parts.append((effect["level"], f"{_mib(effect['effect'])} MiB{interval}", noise))
    unit = effects[0]["unit"]
    if unit.startswith("at the mean"):
        return "; ".join(f"{level}: {text}{noise}" for level, text, noise in parts) + " (numeric terms at their mean)"
    return f"{unit}: " + ", ".join(text + (f" for {level}" if level else "") + noise for level, text, noise in parts)
