"""Searches (schema 6): the capacity table from /searches' rows, the probes' outcomes, the figure of the
searches' trials, and the report's Capacity section (absent for files without searches)."""

import os

import pandas as pd
import pytest

from memsweep_analysis import figures, load, tables
from memsweep_analysis.report import write_report
from pngs import png_colours_present, png_size
from results_builder import write_results_file

MIB = 2 ** 20
GIB = 2 ** 30
BASE = 40 * MIB


def probe(search, value, peak_mib, limit, status="ok", full=0, **extra):
    """A search's trial row: batch size `value` (the axis), its peak in MiB (None: not measured)."""
    peak = -1 if peak_mib is None else int(peak_mib * MIB)
    return dict(batch_size=value, search=search, axis_value=value, search_limit=limit, full_run=full,
                rss_peak=peak, rss_baseline=BASE if peak_mib is not None else -1,
                rss_footprint=peak - BASE if peak_mib is not None else -1, status=status, **extra)


# Configuration 0 (hidden 128) at 128 MiB and at 1.5 GiB, configuration 1 (hidden 256) at 128 MiB; written out of
# order, so that the table's order is its own.
LOW, HIGH = 128 * MIB, 3 * GIB // 2
SEARCHES = [
    dict(search=2, configuration=1, limit_index=0, hidden=[256], limit=LOW, status="failed", fits=-1,
         does_not_fit=16, trials=2, seconds=3.0, message="a trial failed: the loss became nan"),
    dict(search=0, configuration=0, limit_index=0, hidden=[128], limit=LOW, status="found", fits=64, fits_verified=1,
         does_not_fit=96, fit_a_mib=60.0, fit_b_mib=0.5, predicted=70, trials=6, seconds=10.0),
    dict(search=1, configuration=0, limit_index=1, hidden=[128], limit=HIGH, status="above_range", fits=1024,
         fits_verified=0, fit_a_mib=60.0, fit_b_mib=0.5, trials=2, seconds=4.0),
]
TRIALS = [
    probe(0, 16, 68, LOW), probe(0, 32, 76, LOW), probe(0, 64, 92, LOW),
    probe(0, 128, 140, LOW, status="over_budget"),
    probe(0, 96, None, LOW, status="killed", oom_killed=1),  # the OOM killer: no peak read
    probe(0, 64, 93, LOW, full=1),
    probe(1, 512, 316, HIGH), probe(1, 1024, 572, HIGH),
    probe(2, 16, 130, LOW, hidden=[256]),  # ok, but past the limit
    probe(2, 32, 20, LOW, hidden=[256], status="diverged"),
    dict(batch_size=8),  # a trial outside searches
]


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("searched") / "searched.h5")
    write_results_file(path, TRIALS, searches=SEARCHES)
    return path


def test_the_capacity_table_from_the_rows(searched):
    table = tables.capacity_table(load(searched).searches)
    # the plan's order: configuration, then limit; configurations numbered from 1
    assert table["search"].tolist() == [0, 1, 2]
    assert table["configuration"].tolist() == [1, 1, 2]
    assert table["limit"].tolist() == [LOW, HIGH, LOW]
    assert table["axis"].tolist() == ["batch_size"] * 3
    assert table["answer"].tolist() == [64, 1024, pd.NA]
    assert table["verified"].tolist() == [True, False, False]
    assert table["does_not_fit"].tolist() == [96, pd.NA, 16]
    assert table["mib_per_unit"].tolist()[:2] == [0.5, 0.5] and pd.isna(table["mib_per_unit"].iloc[2])
    assert table["predicted"].tolist() == [70, pd.NA, pd.NA]
    assert table["trials"].tolist() == [6, 2, 2]
    assert table["status"].tolist() == ["found", "above_range", "failed"]
    # what tells the configurations apart (hidden), not the axis they are searched along
    assert table["setup"].tolist() == ["hidden 128", "hidden 128", "hidden 256"]


def test_the_setup_leaves_out_the_axis_field():
    configurations = [("mnist", 8), ("cifar-10", 16)]
    searches = pd.DataFrame([dict(file="f", search=i, configuration=i, limit_index=0, axis="width", dataset=d,
                                  model="mlp", hidden=[w]) for i, (d, w) in enumerate(configurations)])
    assert tables.search_setups(searches).tolist() == ["dataset mnist", "dataset cifar-10"]


def test_sizes_in_mib_below_a_gib_and_gib_from_there():
    assert tables.size_text(512 * MIB) == "512 MiB"
    assert tables.size_text(GIB) == "1 GiB"
    assert tables.size_text(3 * GIB // 2) == "1.5 GiB"


def test_probe_outcomes_follow_the_search_rule(searched):
    trials = load(searched).trials
    outcome = tables.probe_outcomes(trials)
    expected = ["fits", "fits", "fits", "does not fit", "does not fit", "fits", "fits", "fits", "does not fit",
                "other", "other"]
    assert outcome.tolist() == expected
    reported = pd.DataFrame([dict(status="failed", rss_peak=10.0, search_limit=100.0, oom_killed=0,
                                  reported_oom=1)])
    assert tables.probe_outcomes(reported).tolist() == ["does not fit"]  # a program's own out-of-memory


def test_the_trials_of_one_search_only(searched):
    results = load(searched)
    first = results.searches[results.searches["search"] == 1].iloc[0]
    assert tables.search_trials(results.trials, first)["axis_value"].tolist() == [512, 1024]


def test_answers_checked_against_the_trials(searched):
    results = load(searched)
    assert tables.answer_disagreements(results.searches, results.trials) == []
    wrong = results.searches.copy()
    wrong.loc[wrong["search"] == 0, "fits"] = 80
    lines = tables.answer_disagreements(wrong, results.trials)
    assert len(lines) == 1 and "fits 80" in lines[0] and "show 64 and 96" in lines[0]


def test_the_figure_draws_each_search(searched, tmp_path):
    results = load(searched)
    drawn = figures.search_capacity(results.searches, results.trials, tmp_path / "capacity.png")
    assert png_size(drawn) == (800, 500)
    assert png_colours_present(drawn, ["tab:green", "tab:red", "tab:purple"]) == \
        {"tab:green", "tab:red", "tab:purple"}
    assert [p["search"] for p in drawn.panels] == [0, 1, 2]
    first, _, failed = drawn.panels
    assert first["fits"] == [(16, 68), (32, 76), (64, 92), (64, 93)]
    # the OOM-killed probe had no peak: drawn at the limit
    assert first["does not fit"] == [(96, 128), (128, 140)]
    assert first["limit"] == 128 and first["answer"] == 64
    assert first["fit"] == [(16, 68), (128, 124)]  # 60 + 0.5 x over the values seen
    assert failed["fit"] is None and failed["answer"] is None
    assert failed["does not fit"] == [(16, 130)] and failed["other"] == [(32, 20)]
    assert not drawn.notes and "first" not in drawn.title


def test_the_figure_caps_its_panels_and_says_so(tmp_path):
    path = str(tmp_path / "many.h5")
    count = figures.MAX_SEARCH_PANELS + 2
    write_results_file(path, [probe(i, 8, 50, LOW, hidden=[8 * (i + 1)]) for i in range(count)],
                       searches=[dict(search=i, configuration=i, hidden=[8 * (i + 1)], fits=8) for i in range(count)])
    results = load(path)
    drawn = figures.search_capacity(results.searches, results.trials, tmp_path / "capacity.png")
    assert len(drawn.panels) == figures.MAX_SEARCH_PANELS
    assert f"first {figures.MAX_SEARCH_PANELS} of {count} searches" in drawn.title
    assert drawn.notes and str(count) in drawn.notes[0]


def test_no_search_no_figure(tmp_path):
    path = str(tmp_path / "plain.h5")
    write_results_file(path, [{}])
    results = load(path)
    drawn = figures.search_capacity(results.searches, results.trials, tmp_path / "capacity.png")
    assert isinstance(drawn, str) and not os.path.exists(tmp_path / "capacity.png")


def test_the_report_has_a_capacity_section(searched, tmp_path):
    written = write_report([searched], str(tmp_path / "report"))
    markdown = open(written["markdown"], encoding="utf-8").read()
    assert "## Capacity" in markdown
    section = markdown.split("## Capacity", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| #")]
    assert len(rows) == 3
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    header = [c.strip() for c in section.split("\n| configuration", 1)[1].splitlines()[0].strip("|").split("|")]
    header = ["configuration"] + header[1:]
    by_name = [dict(zip(header, row)) for row in cells]
    assert [r["limit"] for r in by_name] == ["128 MiB", "1.5 GiB", "128 MiB"]
    assert [r["answer"] for r in by_name] == ["64 (verified)", "1024 (unverified)", "none"]
    assert [r["smallest not fitting"] for r in by_name] == ["96", "", "16"]
    assert [r["MiB per unit"] for r in by_name] == ["0.5", "0.5", ""]
    assert [r["status"] for r in by_name] == ["found", "above_range", "failed"]
    assert [r["trials"] for r in by_name] == ["6", "2", "2"]
    assert by_name[0]["estimate's answer"] == "70"
    assert "#2 at 128 MiB: failed: a trial failed: the loss became nan" in section
    assert "![peak RSS against the searched value](capacity.png)" in section
    capacity = os.path.join(str(tmp_path / "report"), "capacity.png")
    assert capacity in written["figures"] and png_size(capacity) == (800, 500)
    assert "The file's tables disagree" not in section


@pytest.mark.parametrize("version", [4, 5, 6])
def test_no_capacity_section_without_searches(tmp_path, version):
    path = str(tmp_path / f"v{version}.h5")
    write_results_file(path, [dict(batch_size=8), dict(batch_size=16)], schema_version=version)
    written = write_report([path], str(tmp_path / "report"))
    markdown = open(written["markdown"], encoding="utf-8").read()
    assert "## Capacity" not in markdown and "Capacity" not in open(written["html"], encoding="utf-8").read()
    assert not any(os.path.basename(f) == "capacity.png" for f in written["figures"])
    assert "## Files" in markdown  # the rest of the report is there
