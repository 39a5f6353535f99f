"""drivers (statsmodels, factors, interactions) and the report built on it, on sweeps with a known structure."""

import re

import numpy as np
import pandas as pd
import pytest

from memsweep_analysis import load
from memsweep_analysis.drivers import drivers
from memsweep_analysis.report import tables_text, write_report
from results_builder import write_results_file

MIB = 2 ** 20
A = 20 * MIB            # footprint at batch 0
B = 0.3 * MIB           # CNN: bytes per example of batch size
C = 0.01 * MIB          # MLP: bytes per example, C << B
NOISE_SD = 0.5 * MIB    # between repeats
BATCHES = [16, 32, 64, 128, 256]
MODELS = ["mlp", "cnn"]        # plan order: mlp first, so the reference level
OPTIMIZERS = ["sgd", "adam"]
REPEATS = 3


def interaction_rows(seed=7):
    """model x optimizer x batch x repeats in plan order, footprint = A + (B for cnn, C for mlp) x batch + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for optimizer in OPTIMIZERS:
            for batch in BATCHES:
                for repeat in range(REPEATS):
                    footprint = A + (B if model == "cnn" else C) * batch + rng.normal(0, NOISE_SD)
                    rows.append(dict(model=model, optimizer=optimizer, batch_size=batch, repeat=repeat,
                                     channels=[8] if model == "cnn" else [], rss_baseline=50 * MIB,
                                     rss_peak=int(50 * MIB + footprint), sys_used_mean=1000.0 * MIB))
    return rows


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("drivers")
    path = str(folder / "interaction.h5")
    rows = write_results_file(path, interaction_rows())
    return path, rows, folder


def test_the_model_by_batch_interaction_ranks_first_with_intervals_covering_b_and_c(built):
    path, _, _ = built
    terms, findings, effects = drivers(load(path).trials, "rss_footprint")
    top = findings[findings["rank"] == 1].iloc[0]
    assert top["term"] == "model × batch size" and top["verdict"] == "an effect"
    stated = effects[effects["term"] == "model × batch size"]
    # the model's difference at the mean batch is stated with the interaction too (marginality)
    assert stated["level"].tolist()[-1] == "cnn − mlp"
    slopes = stated[stated["unit"].str.startswith("per ")].set_index("level")
    assert list(slopes.index) == ["mlp", "cnn"]
    assert (slopes["unit"] == "per example of batch size").all()  # linear: the truth is linear, AIC says so
    for level, truth in (("cnn", B), ("mlp", C)):
        assert slopes.loc[level, "ci_low"] <= truth <= slopes.loc[level, "ci_high"], level
    # the intervals are tight enough to tell the two slopes apart (what a wrong model would blur)
    assert slopes.loc["mlp", "ci_high"] < slopes.loc["cnn", "ci_low"]
    # the optimizer does nothing: its finding says noise
    optimizer = findings[findings["term"] == "optimizer"].iloc[0]
    assert optimizer["verdict"] == "not distinguishable from noise"
    # repeats averaged: 20 configurations; channels go with the model, so they cannot be identified beside it
    assert set(terms["n"]) == {2 * 2 * 5}
    assert "cannot be identified" in terms.set_index("term").loc["channels", "note"]
    assert set(terms.loc[terms["note"] == "", "term"]) >= {"model", "optimizer", "batch size", "model × batch size"}


def test_a_constant_target_or_too_few_points_cannot_tell(tmp_path):
    path = str(tmp_path / "flat.h5")
    write_results_file(path, [dict(batch_size=b, rss_baseline=0, rss_peak=5 * MIB) for b in BATCHES])
    _, findings, _ = drivers(load(path).trials, "rss_footprint")
    assert findings.empty
    assert any("the same in every point" in note for _, _, note in findings.attrs["notes"])
    path = str(tmp_path / "few.h5")
    write_results_file(path, [dict(batch_size=b, rss_baseline=0, rss_peak=b * MIB) for b in BATCHES[:3]])
    _, findings, _ = drivers(load(path).trials, "rss_footprint")
    assert any("fewer than 4 points" in note for _, _, note in findings.attrs["notes"])


def test_a_slope_in_powers_of_two_that_grows_per_doubling_is_entered_as_log2(tmp_path):
    path = str(tmp_path / "log.h5")
    rng = np.random.default_rng(3)
    rows = [dict(batch_size=b, repeat=r, rss_baseline=0, rss_peak=int(10 * MIB + 4 * MIB * np.log2(b)
                                                                       + rng.normal(0, 0.1 * MIB)))
            for b in BATCHES + [512, 1024] for r in range(2)]
    write_results_file(path, rows)
    _, findings, effects = drivers(load(path).trials, "rss_footprint")
    slope = effects[effects["term"] == "batch size"].iloc[0]
    assert slope["unit"] == "per doubling of batch size"
    assert slope["ci_low"] <= 4 * MIB <= slope["ci_high"]
    assert findings.iloc[0]["sentence"].startswith("per doubling of batch size: +4.")


@pytest.fixture(scope="module")
def report(built):
    path, rows, folder = built
    written = write_report([path], str(folder / "out"))
    with open(written["markdown"], encoding="utf-8") as file:
        return file.read(), rows


def test_the_reports_first_finding_is_the_interaction_in_words(report):
    markdown, _ = report
    section = markdown[markdown.index("## What drives memory"):]
    first = next(line for line in section.splitlines() if line.startswith("- "))
    assert first.startswith("- synthetic, footprint: #1 model × batch size (partial η² ")
    match = re.search(r"per example of batch size: \+(\S+) MiB \[\+(\S+), \+(\S+)\] for mlp, "
                      r"\+(\S+) MiB \[\+(\S+), \+(\S+)\] for cnn", first)
    assert match, first
    mlp_low, mlp_high, cnn_low, cnn_high = (float(match.group(i)) for i in (2, 3, 5, 6))
    # rounded to what the sentence shows: the intervals hold b and c in MiB
    assert mlp_low <= C / MIB <= mlp_high and cnn_low <= B / MIB <= cnn_high
    assert "channels, channels × batch size" in section and "cannot be identified" in section


def test_report_tables_show_model_and_optimizer_in_plan_order_and_the_summarys_numbers(report):
    markdown, rows = report
    lines = markdown.splitlines()
    header = next(line for line in lines if line.startswith("| trial |"))
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[:3] == ["trial", "id", "lr"]
    # the builder's default dataset is synthetic: its shape is shown too
    assert cells[-4:] == ["model", "optimizer", "channels", "shape"]
    start = lines.index(header) + 2
    body = lines[start:start + next(i for i, line in enumerate(lines[start:]) if not line.startswith("| "))]
    assert len(body) == 20
    shown = [[c.strip() for c in line.strip("|").split("|")] for line in body]
    # configurations in plan order: mlp's before cnn's, sgd before adam, batches increasing
    assert [r[-4] for r in shown] == ["mlp"] * 10 + ["cnn"] * 10
    assert [r[-3] for r in shown][:10] == ["sgd"] * 5 + ["adam"] * 5
    assert [r[-2] for r in shown] == [""] * 10 + ["8"] * 10
    # no plan_index in this file: trials are numbered in the order load() gives them (from 1), the repeats of
    # the first configuration are 1, 2, 3 with their ids beside
    assert shown[0][0] == "1, 2, 3" and shown[0][1] == ", ".join(r["trial_id"] for r in rows[:3])
    assert shown[19][0] == "58, 59, 60"


def test_categorical_columns_are_ordered_as_the_plan_sets_them(built):
    path, _, _ = built
    trials = load(path).trials
    for column, order in (("model", MODELS), ("optimizer", OPTIMIZERS), ("channels_text", ["", "8"])):
        assert isinstance(trials[column].dtype, pd.CategoricalDtype), column
        assert list(trials[column].cat.categories) == order, column
    assert trials["trial_number"].tolist() == list(range(1, 61))


def test_trial_number_is_plan_index_plus_one_where_the_file_has_it(tmp_path):
    path = str(tmp_path / "plan.h5")
    rows = [dict(batch_size=b, model=m) for b, m in ((8, "cnn"), (16, "mlp"), (32, "cnn"))]
    write_results_file(path, rows)
    trials = load(path).trials
    # the builder's schema may not have plan_index yet: then give the loader the column by hand
    from memsweep_analysis.load import categorical_columns, trial_numbers
    trials = trials.assign(plan_index=[4, 0, -1])
    numbers = trial_numbers(trials)
    # -1 (unknown): numbered in load order among the file's trials, as an older file would be
    assert numbers.tolist() == [5, 1, 3]
    ordered = categorical_columns(trials.assign(trial_number=numbers))
    assert list(ordered["model"].cat.categories) == ["mlp", "cnn"]  # plan order: plan_index 0 is the mlp


def test_the_tables_command_shows_model_optimizer_and_the_ranking(built):
    path, _, _ = built
    text = tables_text([path])
    header = next(line for line in text.splitlines() if line.strip().startswith("trial"))
    assert header.split()[:2] == ["trial", "id"] and header.split()[-4:] == ["model", "optimizer", "channels", "shape"]
    assert "what drives memory (ranked)" in text
    assert "#1 model × batch size" in text


def test_a_files_plan_index_numbers_the_trials_in_load_and_in_the_reports_tables(tmp_path):
    path = str(tmp_path / "planned.h5")
    # written in another order than planned (ranks finish out of order): plan positions 2, 0, 1
    rows = write_results_file(path, [dict(batch_size=b, rss_baseline=0, rss_peak=b * MIB, plan_index=i)
                                     for b, i in ((64, 2), (16, 0), (32, 1))])
    trials = load(path).trials
    assert trials["trial_number"].tolist() == [3, 1, 2]
    written = write_report([path], str(tmp_path / "out"))
    with open(written["markdown"], encoding="utf-8") as file:
        lines = file.read().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| trial |"))
    numbers = {line.split("|")[2].strip(): line.split("|")[1].strip() for line in lines[header + 2:header + 5]}
    assert numbers == {rows[0]["trial_id"]: "3", rows[1]["trial_id"]: "1", rows[2]["trial_id"]: "2"}
