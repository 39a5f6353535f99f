"""compare: pairing by id, then by configuration and repeat; B/A ratios; what only one side has."""

import math

import pytest

from memsweep_analysis.__main__ import main
from memsweep_analysis.compare import compare, to_markdown
from results_builder import write_results_file

MIB = 2 ** 20
A = dict(dataset="mnist", learning_rate=0.1, epochs=2, batch_size=8, hidden=[10, 5])
B = dict(dataset="mnist", learning_rate=0.01, epochs=2, batch_size=32, hidden=[20])
C = dict(dataset="fashion-mnist", learning_rate=0.05, epochs=1, batch_size=16, hidden=[4, 4])


def memory(peak_mib, baseline_mib, sys_mib=1000, predicted_mib=9, wall=2.0):
    return dict(rss_peak=peak_mib * MIB, rss_baseline=baseline_mib * MIB, sys_used_mean=sys_mib * MIB,
                predicted_bytes=predicted_mib * MIB, wall_seconds=wall)


@pytest.fixture
def two_files(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    in_a = write_results_file(a, [
        # The same trial twice: attempt 0 was interrupted (its figures are not the result), attempt 1 is.
        dict(A, attempt=0, status="interrupted", **memory(500, 50)),
        dict(A, attempt=1, **memory(64, 50, sys_mib=1000, predicted_mib=-1, wall=2.0)),
        dict(B, **memory(80, 60)),
    ])
    in_b = write_results_file(b, [
        dict(A, **memory(71, 50, sys_mib=-1, predicted_mib=9, wall=3.0)),
        dict(C, **memory(40, 36)),
    ])
    return a, b, in_a, in_b


def test_trials_in_both_are_divided_b_by_a_and_the_others_listed(two_files):
    a, b, in_a, in_b = two_files
    result = compare(a, b)
    assert len(result.table) == 1
    row = result.table.iloc[0]
    assert row["trial_id"] == in_a[1]["trial_id"] and row["matched_by"] == "trial_id"
    assert row["footprint_a"] == 14 * MIB and row["footprint_b"] == 21 * MIB
    assert row["footprint B/A"] == pytest.approx(21 / 14)
    assert row["peak B/A"] == pytest.approx(71 / 64)
    assert row["wall_s B/A"] == pytest.approx(1.5)
    # -1 in a file is "not measured": no figure, and no ratio made of it.
    assert math.isnan(row["predicted_a"]) and math.isnan(row["predicted B/A"])
    assert math.isnan(row["sys_used_b"]) and math.isnan(row["sys_used B/A"])
    assert result.only_in_a == [in_a[2]["trial_id"]]
    assert result.only_in_b == [in_b[1]["trial_id"]]


def test_trials_with_other_ids_pair_by_configuration_and_repeat(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    in_a = write_results_file(a, [dict(A, repeat=0, **memory(60, 50)), dict(A, repeat=1, **memory(70, 50))])
    # Another seed: other trial ids, the same trials.
    in_b = write_results_file(b, [dict(A, seed=7, repeat=1, **memory(90, 50)),
                                  dict(A, seed=7, repeat=0, **memory(55, 50))])
    assert {t["trial_id"] for t in in_a}.isdisjoint(t["trial_id"] for t in in_b)
    table = compare(a, b).table.set_index("repeat")
    assert list(table["matched_by"]) == ["config", "config"]
    assert table.loc[0, "footprint B/A"] == pytest.approx(5 / 10)
    assert table.loc[1, "footprint B/A"] == pytest.approx(40 / 20)
    assert table.loc[1, "trial_id_b"] == in_b[0]["trial_id"]


def test_the_command_prints_the_table_and_writes_markdown(two_files, tmp_path, capsys):
    a, b, in_a, in_b = two_files
    out = tmp_path / "comparison.md"
    assert main(["compare", a, b, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"only in A (1): {in_a[2]['trial_id']}" in printed
    assert f"only in B (1): {in_b[1]['trial_id']}" in printed
    assert "median 1.5," in printed                       # the one footprint ratio, 21 / 14
    markdown = out.read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| trial_id"))
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {in_a[1]['trial_id']}"))
    cells = dict(zip([c.strip() for c in header.split("|")], [c.strip() for c in row.split("|")]))
    assert cells["footprint A MiB"] == "14" and cells["footprint B MiB"] == "21"
    assert cells["footprint B/A"] == "1.5"
    assert cells["hidden"] == "10-5"
    assert "trainer" not in cells  # every trial memsweep's own: no column for it


def test_a_programs_trials_pair_with_their_own_and_say_their_trainer(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    # the same sweep on two machines: memsweep's and pytorch's trials of A's hyperparameters in each
    in_a = write_results_file(a, [dict(A, **memory(60, 50)), dict(A, trainer="pytorch", **memory(300, 0))])
    write_results_file(b, [dict(A, trainer="pytorch", **memory(330, 0)), dict(A, **memory(66, 50))])
    result = compare(a, b)
    table = result.table.set_index("trainer")
    assert table.loc["pytorch", "trial_id"] == in_a[1]["trial_id"]
    assert table.loc["pytorch", "peak B/A"] == pytest.approx(1.1)
    assert table.loc["memsweep", "footprint B/A"] == pytest.approx(16 / 10)
    header = next(line for line in to_markdown(result).splitlines() if line.startswith("| trial_id"))
    assert "| trainer |" in header
