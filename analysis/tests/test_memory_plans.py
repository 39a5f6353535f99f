"""Memory plans (schema 8): the loader reads memory_plan and recompute_every, an older file's trials as keep and 0;
the plan is a factor (categorical in plan order, a driver candidate, a figure factor) and tells configurations
apart, and the report's tables show it when some trial left keep."""

import pandas as pd

from memsweep_analysis import drivers, figures, load, trainers
from memsweep_analysis.tables import extra_columns, paper_table
from results_builder import write_results_file


def _three_plans(batch_size=64):
    return [dict(batch_size=batch_size, memory_plan="keep"), dict(batch_size=batch_size, memory_plan="reuse"),
            dict(batch_size=batch_size, memory_plan="recompute", recompute_every=2)]


def test_the_columns_are_read(tmp_path):
    path = tmp_path / "plans.h5"
    write_results_file(path, _three_plans())
    trials = load(path).trials
    assert list(trials["memory_plan"].astype(str)) == ["keep", "reuse", "recompute"]
    assert list(trials["recompute_every"]) == [0, 0, 2]
    # A factor, its levels in plan order.
    assert isinstance(trials["memory_plan"].dtype, pd.CategoricalDtype)
    assert list(trials["memory_plan"].cat.categories) == ["keep", "reuse", "recompute"]


def test_an_older_file_reads_keep(tmp_path):
    path = tmp_path / "old.h5"
    write_results_file(path, [dict(batch_size=8), dict(batch_size=16)], schema_version=7)
    trials = load(path).trials
    assert (trials["memory_plan"].astype(str) == "keep").all()
    assert (trials["recompute_every"] == 0).all()


def test_each_plan_is_a_configuration_of_its_own(tmp_path):
    path = tmp_path / "plans.h5"
    write_results_file(path, _three_plans() + [dict(batch_size=64, memory_plan="reuse", repeat=1)])
    trials = load(path).trials
    configs = trials["config"]
    assert configs.nunique() == 3
    assert configs.iloc[1] == configs.iloc[3]  # the repeats of one plan
    table = paper_table(load(path))
    # The segment length is shown where it is set, as memsweep plan shows it: recompute and recompute:2 differ.
    assert list(table["memory_plan"].astype(str)) == ["keep", "reuse", "recompute:2"]
    assert "memory_plan" in extra_columns(table)


def test_recompute_with_the_default_segments_reads_recompute(tmp_path):
    path = tmp_path / "segments.h5"
    write_results_file(path, [dict(memory_plan="recompute"), dict(memory_plan="recompute", recompute_every=3)])
    assert list(paper_table(load(path))["memory_plan"].astype(str)) == ["recompute", "recompute:3"]


def test_a_sweep_that_keeps_shows_no_plan_column(tmp_path):
    path = tmp_path / "keep.h5"
    write_results_file(path, [dict(batch_size=8), dict(batch_size=16)])
    assert "memory_plan" not in extra_columns(paper_table(load(path)))


def test_the_plan_is_a_factor_for_the_drivers_and_the_figures(tmp_path):
    path = tmp_path / "plans.h5"
    write_results_file(path, _three_plans(64) + _three_plans(128))
    trials = load(path).trials
    factors, _ = drivers._candidate_columns(trials)
    assert "memory_plan" in factors
    assert "memory_plan" in figures.FACTORS and "memory_plan" in figures.CONFIG_COLUMNS
    assert drivers.FACTOR_LABELS["memory_plan"] == "memory plan"


def test_a_program_that_never_names_the_plan_reads_blank(tmp_path):
    path = tmp_path / "program.h5"
    write_results_file(path, [dict(trainer="pytorch", memory_plan=""), dict(memory_plan="reuse")])
    trials = load(path).trials
    assert pd.isna(trials["memory_plan"].iloc[0])
    assert trials["memory_plan"].iloc[1] == "reuse"


def test_searches_carry_the_plan_and_older_files_read_keep(tmp_path):
    path = tmp_path / "searches.h5"
    write_results_file(path, [dict(memory_plan="reuse")], searches=[dict(memory_plan="reuse"), dict()])
    searches = load(path).searches
    assert list(searches["memory_plan"].astype(str)) == ["reuse", "keep"]
    old = tmp_path / "old.h5"
    write_results_file(old, [dict()], searches=[dict()], schema_version=7)
    searches = load(old).searches
    assert list(searches["memory_plan"].astype(str)) == ["keep"] and list(searches["recompute_every"]) == [0]


def test_trainers_pair_like_plan_with_like(tmp_path):
    """memsweep's reuse trial pairs with the program trial that trained reuse too (its file names the plan), and
    keep with keep: the study's PyTorch as is against memsweep's keep, --checkpoint against recompute."""
    rows = []
    for plan, ours, theirs in (("keep", 100, 120), ("reuse", 80, 90)):
        rows.append(dict(memory_plan=plan, rss_peak=ours * 2 ** 20))
        rows.append(dict(memory_plan=plan, trainer="pytorch", rss_peak=theirs * 2 ** 20, rss_baseline=0))
    path = tmp_path / "pairs.h5"
    write_results_file(path, rows)
    pairs = trainers.paired_configurations(load(path).trials)
    assert len(pairs) == 2
    by_plan = {str(plan): row for plan, (_, row) in zip(pairs["memory_plan"], pairs.iterrows())}
    assert set(by_plan) == {"keep", "reuse"}
    assert by_plan["keep"]["peak_reference"] == 100 * 2 ** 20 and by_plan["keep"]["peak_trainer"] == 120 * 2 ** 20
    assert by_plan["reuse"]["peak_reference"] == 80 * 2 ** 20 and by_plan["reuse"]["peak_trainer"] == 90 * 2 ** 20
