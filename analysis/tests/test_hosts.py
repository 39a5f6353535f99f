"""Per host (issue 42): the hosts table from the trials' rows and the samples, the node-memory figure with one line
per host, the report's Hosts section (absent with one host), and rows without a host placed through /runs.hosts.
Expected values are worked out here from the rows written, not read back from the code."""

import importlib
import math
import os
import re

import pytest

from memsweep_analysis import figures, hosts, load
from memsweep_analysis.report import tables_text, write_report
from pngs import png_size
from results_builder import complete_trial, write_results_file

MIB = 2 ** 20
GIB = 2 ** 30
T0 = 1.7e9
# Each node's MemTotal, as its samples record it.
TOTAL = {"node-a": 16 * GIB, "node-b": 32 * GIB, "node-c": 64 * GIB}
# (host, rank, status, sys_used_mean MiB (None: not measured), rss_peak MiB, start seconds after T0)
TRIALS = [
    ("node-a", 0, "ok", 1000, 64, 0.0),
    ("node-a", 1, "ok", 1100, 80, 0.25),
    ("node-a", 0, "failed", 1300, 90, 3.0),
    ("node-b", 2, "ok", 2000, 70, 0.1),
    ("node-b", 2, "ok", None, 75, 3.0),
    ("node-c", 3, "over_budget", 3000, 120, 1.0),
]
TIMES = (0.0, 0.5, 1.0, 1.5)


def trial_row(index, host, rank, status, used_mib, peak_mib, start):
    # a batch size of its own: every row is a trial of its own (its own id)
    return dict(batch_size=8 * (index + 1), host=host, rank=rank, status=status,
                sys_used_mean=-1.0 if used_mib is None else used_mib * MIB, rss_peak=peak_mib * MIB,
                rss_baseline=40 * MIB, start_time=T0 + start, end_time=T0 + start + 2.0, wall_seconds=2.0)


def sample_used_mib(index, step):
    """The node's used memory of trial `index`'s sample `step`, distinct for every sample."""
    return 500 + 100 * index + 7 * step


def trial_id(row):
    """The id memsweep gives the row's hyperparameters (what write_results_file will write)."""
    return complete_trial(dict(row))["trial_id"]


def build(path, trial_specs=TRIALS, **options):
    rows = [trial_row(i, *spec) for i, spec in enumerate(trial_specs)]
    samples = []
    for i, (spec, row) in enumerate(zip(trial_specs, rows)):
        host = spec[0]
        for step, t in enumerate(TIMES):
            sample = dict(trial_id=trial_id(row), rank=spec[1], t=t, sys_used=sample_used_mib(i, step) * MIB,
                          sys_total=TOTAL.get(host, 8 * GIB), sys_available=TOTAL.get(host, 8 * GIB) // 2)
            if i == 3 and step == 2:  # sys_used not measured: used = total - available
                sample.update(sys_used=-1, sys_available=TOTAL[host] - sample_used_mib(i, step) * MIB)
            samples.append(sample)
    return write_results_file(path, rows, samples=samples, counter_columns=(), **options)


@pytest.fixture(scope="module")
def three_hosts(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("hosts") / "three.h5")
    return path, build(path)


def expected_table():
    expected = {}
    for host in sorted({spec[0] for spec in TRIALS}):
        mine = [spec for spec in TRIALS if spec[0] == host]
        used = [spec[3] for spec in mine if spec[3] is not None]
        expected[host] = {"trials": len(mine), "ok": sum(spec[2] == "ok" for spec in mine),
                          "ranks": tuple(sorted({spec[1] for spec in mine})),
                          "sys_used_mean_mib": sum(used) / len(used), "rss_peak_max_mib": max(s[4] for s in mine),
                          "node_total_mib": TOTAL[host] / MIB}
    return expected


def test_the_hosts_table_holds_the_rows_figures(three_hosts):
    path, _ = three_hosts
    table = hosts.hosts_table(load(path))
    expected = expected_table()
    assert table["host"].tolist() == ["node-a", "node-b", "node-c"]
    for row in table.to_dict("records"):
        want = expected[row["host"]]
        assert (row["trials"], row["ok"], row["ranks"]) == (want["trials"], want["ok"], want["ranks"]), row["host"]
        for column in ("sys_used_mean_mib", "rss_peak_max_mib", "node_total_mib"):
            assert row[column] == pytest.approx(want[column]), (row["host"], column)
    # node-a: (1000 + 1100 + 1300) / 3; node-b's second trial did not measure it: 2000 alone
    assert table.loc[0, "sys_used_mean_mib"] == pytest.approx(3400 / 3)
    assert table.loc[1, "sys_used_mean_mib"] == pytest.approx(2000)
    # without samples, no node total
    assert table.columns.tolist() == hosts.HOSTS_COLUMNS
    alone = hosts.hosts_table(load(path).trials)
    assert alone["node_total_mib"].isna().all() and alone["trials"].tolist() == [3, 2, 1]


def expected_points():
    """{host: [(seconds since the first sample, used MiB)]} in time order, from the samples written."""
    points = {}
    for i, (host, _, _, _, _, start) in enumerate(TRIALS):
        for step, t in enumerate(TIMES):
            points.setdefault(host, []).append((start + t, sample_used_mib(i, step)))
    first = min(x for line in points.values() for x, _ in line)
    return {host: sorted((x - first, y) for x, y in line) for host, line in points.items()}


def test_the_figure_has_one_line_per_host_through_the_samples(three_hosts, tmp_path):
    path, _ = three_hosts
    results = load(path)
    points = hosts.node_samples(results)
    assert points.attrs["origin"] == pytest.approx(T0)
    assert points.attrs["unplaced_attempts"] == 0
    drawn = figures.node_memory_by_host(points, tmp_path / "nodes.png")
    assert isinstance(drawn, figures.Drawn)
    assert png_size(drawn) == (800, 500)
    assert sorted(drawn.lines) == ["node-a", "node-b", "node-c"]
    assert drawn.levels == ["node-a", "node-b", "node-c"] and drawn.factor == "host"
    for host, line in expected_points().items():
        assert len(drawn.lines[host]) == len(line), host
        for (x, y), (want_x, want_y) in zip(drawn.lines[host], line):
            assert x == pytest.approx(want_x, abs=1e-6) and y == pytest.approx(want_y), host
    # the sample without sys_used (node-b's first trial, started at 0.1 s, at t = 1.0) is drawn at
    # sys_total - sys_available
    assert any(x == pytest.approx(1.1, abs=1e-6) and y == sample_used_mib(3, 2) for x, y in drawn.lines["node-b"])
    # nothing to draw: a reason and no file
    reason = figures.node_memory_by_host(points.iloc[0:0], tmp_path / "none.png")
    assert isinstance(reason, str) and not (tmp_path / "none.png").exists()


def test_thinning_keeps_each_hosts_peak_and_trough_and_does_not_depend_on_blocks(tmp_path, monkeypatch):
    path = str(tmp_path / "many.h5")
    rows = [trial_row(0, "node-a", 0, "ok", 1000, 64, 0.0), trial_row(1, "node-b", 1, "ok", 1000, 64, 0.0)]
    count = 1500
    samples, used = [], {}
    for index, host in enumerate(("node-a", "node-b")):
        for step in range(count):
            # a wave with one high and one low sample, every value distinct
            value = 1000 * MIB + ((step * 7919 + index) % count) * 4096
            if step == 321 + index:
                value = 3000 * MIB
            if step == 999:
                value = 10 * MIB + index
            used.setdefault(host, []).append(value)
            samples.append(dict(trial_id=trial_id(rows[index]), rank=index, t=step * 2.0 / count,
                                sys_used=value, sys_total=TOTAL[host]))
    write_results_file(path, rows, samples=samples, counter_columns=())
    results = load(path)
    whole = hosts.node_samples(results, max_points=100)
    for host in ("node-a", "node-b"):
        mine = whole[whole["host"] == host]
        assert 2 <= len(mine) <= 100
        assert mine["used"].max() == max(used[host]) and mine["used"].min() == min(used[host])
        assert mine["time"].is_monotonic_increasing
    # read 128 rows at a time, the same points
    monkeypatch.setattr(importlib.import_module("memsweep_analysis.load"), "BLOCK_ROWS", 128)
    blocks = hosts.node_samples(load(path), max_points=100)
    assert blocks[["host", "time", "used"]].values.tolist() == whole[["host", "time", "used"]].values.tolist()
    # the table's node totals come through the thinned points
    table = hosts.hosts_table(results.trials, whole, results.runs)
    assert table["node_total_mib"].tolist() == [TOTAL["node-a"] / MIB, TOTAL["node-b"] / MIB]


def test_the_report_has_a_hosts_section_with_the_table_and_the_figure(three_hosts, tmp_path):
    path, _ = three_hosts
    written = write_report([path], str(tmp_path / "out"))
    with open(written["markdown"], encoding="utf-8") as file:
        markdown = file.read()
    assert "## Hosts" in markdown
    lines = markdown.splitlines()
    start = lines.index("## Hosts")
    header = next(line for line in lines[start:] if line.startswith("| host |"))
    assert header == "| host | ok/trials | ranks | used MiB (mean) | largest peak MiB | node total MiB |"
    rows = [line for line in lines[lines.index(header) + 2:] if line.startswith("| node-")][:3]
    expected = expected_table()
    for row, host in zip(rows, ("node-a", "node-b", "node-c")):
        want = expected[host]
        assert row == (f"| {host} | {want['ok']}/{want['trials']} | {', '.join(map(str, want['ranks']))} | "
                       f"{want['sys_used_mean_mib']:.1f} | {want['rss_peak_max_mib']:.1f} | "
                       f"{want['node_total_mib']:.1f} |")
    shown = re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", markdown)
    assert ("node memory used over time per host", "node-memory-by-host.png") in shown
    figure = os.path.join(str(tmp_path / "out"), "node-memory-by-host.png")
    assert figure in written["figures"] and png_size(figure) == (800, 500)
    # the HTML page embeds it like the others
    with open(written["html"], encoding="utf-8") as file:
        assert 'alt="node memory used over time per host" src="data:image/png;base64,' in file.read()
    text = tables_text([path])
    part = text.split("\n\nhosts\n", 1)[1]
    assert "node-a" in part and "node-c" in part and "ok/trials" in part


def test_one_host_has_no_hosts_section_and_reads_no_samples_for_it(tmp_path, monkeypatch):
    path = str(tmp_path / "one.h5")
    build(path, [("node-a", *spec[1:]) for spec in TRIALS])

    def refused(*args, **kwargs):
        raise AssertionError("node_samples read /samples for one host")

    monkeypatch.setattr(hosts, "node_samples", refused)
    written = write_report([path], str(tmp_path / "out"))
    with open(written["markdown"], encoding="utf-8") as file:
        markdown = file.read()
    assert "## Hosts" not in markdown and "node-memory-by-host.png" not in markdown
    assert not os.path.exists(os.path.join(str(tmp_path / "out"), "node-memory-by-host.png"))
    assert "\nhosts\n" not in tables_text([path])
    assert hosts.host_count(load(path).trials) == 1


def test_rows_without_a_host_take_their_ranks_host_from_runs(tmp_path):
    path = str(tmp_path / "nohost.h5")
    # run 0 ran ranks 0 and 1 on node-a and node-b; the resume, run 1, had rank 0 on node-c and rank 1 on node-a
    runs = [dict(run=0, start_time=T0, ranks=2, hosts="node-a,node-b", command_line="memsweep run",
                 memsweep_version="x"),
            dict(run=1, start_time=T0 + 10, ranks=2, hosts="node-c,node-a", command_line="memsweep run --resume",
                 memsweep_version="x")]
    specs = [("", 0, "ok", 1000, 64, 0.0), ("", 1, "ok", 1200, 70, 0.0), ("", 1, "interrupted", 1400, 90, 10.0),
             ("", 0, "ok", 900, 50, 10.0)]
    rows = [dict(trial_row(i, *spec), run=0 if i < 2 else 1) for i, spec in enumerate(specs)]
    samples = [dict(trial_id=trial_id(row), rank=spec[1], t=t, sys_used=(600 + 10 * i) * MIB)
               for i, (spec, row) in enumerate(zip(specs, rows)) for t in TIMES]
    write_results_file(path, rows, runs=runs, counter_columns=(), samples=samples,
                       attrs={"hosts": ["node-a", "node-b"], "ranks": 2})
    results = load(path)
    assert (results.trials["host"] == "").all()
    assert hosts.trial_hosts(results).tolist() == ["node-a", "node-b", "node-a", "node-c"]
    table = hosts.hosts_table(results)
    assert table["host"].tolist() == ["node-a", "node-b", "node-c"]
    assert table["trials"].tolist() == [2, 1, 1] and table["ok"].tolist() == [1, 1, 1]
    assert table["ranks"].tolist() == [(0, 1), (1,), (0,)]
    assert table["sys_used_mean_mib"].tolist() == pytest.approx([(1000 + 1400) / 2, 1200, 900])
    assert table["rss_peak_max_mib"].tolist() == [90, 70, 50]
    # the figure places every sample on its host too
    lines = figures.node_memory_by_host(hosts.node_samples(results), tmp_path / "n.png").lines
    assert {host: len(line) for host, line in lines.items()} == {"node-a": 8, "node-b": 4, "node-c": 4}
    written = write_report([path], str(tmp_path / "out"))
    with open(written["markdown"], encoding="utf-8") as file:
        assert "## Hosts" in file.read()


def test_a_row_whose_rank_runs_does_not_name_is_unknown_and_samples_without_start_are_not_drawn(tmp_path):
    path = str(tmp_path / "unknown.h5")
    runs = [dict(run=0, start_time=T0, ranks=1, hosts="node-a", command_line="memsweep run", memsweep_version="x")]
    specs = [("node-a", 0, "ok", 1000, 64, 0.0), ("node-b", 1, "ok", 1000, 64, 0.0), ("", 5, "killed", 1000, 64, 0.0)]
    rows = [trial_row(i, *spec) for i, spec in enumerate(specs)]
    rows[1].update(start_time=0.0, end_time=0.0)  # a resume's row: start unknown
    samples = [dict(trial_id=trial_id(row), rank=spec[1], t=t, sys_total=TOTAL[spec[0] or "node-c"])
               for spec, row in zip(specs, rows) for t in TIMES]
    write_results_file(path, rows, runs=runs, counter_columns=(), samples=samples)
    results = load(path)
    table = hosts.hosts_table(results)
    assert table["host"].tolist() == ["node-a", "node-b", hosts.UNKNOWN_HOST]
    points = hosts.node_samples(results)
    # node-b's trial has no start time and the third no host: only node-a's samples are placed
    assert set(points["host"]) == {"node-a"} and len(points) == len(TIMES)
    assert points.attrs["unplaced_attempts"] == 2
    # node-b's samples are not in the figure, but they still say its node's total; the unknown host has none
    totals = table.set_index("host")["node_total_mib"]
    assert totals["node-a"] == TOTAL["node-a"] / MIB and totals["node-b"] == TOTAL["node-b"] / MIB
    assert math.isnan(totals[hosts.UNKNOWN_HOST])


def test_an_old_file_without_sys_total_still_draws_and_has_no_total(tmp_path):
    path = str(tmp_path / "v1.h5")
    specs = [("node-a", 0, "ok", 1000, 64, 0.0), ("node-b", 1, "ok", 1100, 70, 0.0)]
    rows = [trial_row(i, *spec) for i, spec in enumerate(specs)]
    samples = [dict(trial_id=trial_id(row), rank=spec[1], t=t, sys_used=(700 + i) * MIB)
               for i, (spec, row) in enumerate(zip(specs, rows)) for t in TIMES]
    write_results_file(path, rows, counter_columns=(), schema_version=1, samples=samples)
    results = load(path)
    table = hosts.hosts_table(results)
    assert table["node_total_mib"].isna().all()
    lines = figures.node_memory_by_host(hosts.node_samples(results), tmp_path / "v1.png").lines
    assert sorted(lines) == ["node-a", "node-b"] and [y for _, y in lines["node-b"]] == [701.0] * len(TIMES)
