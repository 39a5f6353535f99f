"""report: the files it writes, the figures of its tables, and its plain-language findings, on one built file."""

import json
import os
import re

import pytest

from memsweep_analysis import load
from memsweep_analysis.report import not_ok_table, process_end, tables_text, write_report
from pngs import png_size
from results_builder import write_results_file

MIB = 2 ** 20
A = dict(dataset="mnist", learning_rate=0.1, epochs=2, batch_size=8, hidden=[10, 5])
B = dict(dataset="mnist", learning_rate=0.01, epochs=2, batch_size=32, hidden=[20])
C = dict(dataset="fashion-mnist", learning_rate=0.05, epochs=1, batch_size=16, hidden=[4, 4])
# cifar-10: five configurations that differ only in batch size, footprint = batch MiB exactly, and a system
# used that goes up and down with it: one clear finding and one that is noise.
BATCHES = [8, 16, 32, 64, 128]
SYSTEM = [1000, 990, 1010, 995, 1005]


def memory(sys_mib, peak_mib, baseline_mib, predicted_mib):
    return dict(sys_used_mean=sys_mib * MIB, rss_mean=(peak_mib - 1) * MIB, rss_peak=int(peak_mib * MIB),
                rss_baseline=int(baseline_mib * MIB), predicted_bytes=int(predicted_mib * MIB))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One report for every test here: a report takes seconds, and the tests only read it."""
    folder = tmp_path_factory.mktemp("report")
    path = str(folder / "built.h5")
    trials = write_results_file(path, [
        dict(A, repeat=0, **memory(1000, 64, 50, 9)),
        dict(A, repeat=1, **memory(1010, 70, 52, 9)),
        dict(B, repeat=0, **memory(1100, 80, 60, 12)),
        dict(B, repeat=1, **memory(1120, 84, 60, 12)),
        dict(C, repeat=0, **memory(2000, 40, 36, 2)),
        dict(C, repeat=1, status="diverged", message="the training loss became nan", **memory(2000, 40, 36, 2)),
    ] + [dict(dataset="cifar-10", learning_rate=0.01, epochs=1, batch_size=batch, hidden=[32],
              **memory(system, 100 + batch, 100, batch)) for batch, system in zip(BATCHES, SYSTEM)],
        samples=[
        # The first trial: setup (epoch 0), then two epochs; counters count since the trial's start.
        dict(epoch=0, t=0.00, rss=50 * MIB, sys_used=990 * MIB, **{"perf::PAGE-FAULTS": 0}),
        dict(epoch=1, t=0.01, rss=60 * MIB, sys_used=1000 * MIB, **{"perf::PAGE-FAULTS": 100}),
        dict(epoch=2, t=0.02, rss=64 * MIB, sys_used=1010 * MIB, **{"perf::PAGE-FAULTS": 150}),
    ])
    out = str(folder / "out")
    written = write_report([path], out)
    return out, written, trials


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def test_markdown_html_and_every_figure_of_the_right_size(report):
    out, written, trials = report
    markdown = read(written["markdown"])
    page = read(written["html"])
    for dataset in ("mnist", "fashion-mnist", "cifar-10"):
        assert f"## {dataset}: trials" in markdown
    # Every image the Markdown shows is a file beside it; the HTML carries them all inside itself.
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert sorted(os.path.join(out, name) for name in shown) == sorted(written["figures"])
    for name in shown:
        assert png_size(os.path.join(out, name)) == (800, 500), name
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == len(shown)
    assert all(source.startswith("data:image/png;base64,") for source in sources)
    assert "<link" not in page and "href=" not in page
    # Each dataset's largest ok footprint is chosen to plot over time: B's second repeat (84 - 60 = 24 MiB)
    # for mnist, C's ok run for fashion-mnist, batch 128 for cifar-10; none has samples (only the first trial
    # does): no file, and a line saying why.
    for index in (3, 4, 10):
        trial_id = trials[index]["trial_id"]
        assert f"rss-{trial_id}.png" not in shown and not os.path.exists(os.path.join(out, f"rss-{trial_id}.png"))
        assert f"_No figure of RSS over time of trial {trial_id}: " in markdown
        assert "no samples recorded" in markdown
    # mnist's system used moves 120 MiB over footprints within 10 MiB: a shared node, said once, under the
    # first figure of memory (the learning rate's, in LABELS' order)
    warnings = [line for line in markdown.splitlines() if line.startswith("_Shared node?")]
    assert len(warnings) == 1 and "mnist (SD" in warnings[0] and "cifar-10" not in warnings[0]
    after = markdown.split("memory-vs-learning-rate.png)", 1)[1].lstrip("\n")
    assert after.startswith("_Shared node?")
    # counters were recorded: their figure is there
    assert "counters-vs-batch.png" in shown
    # Epochs differ between datasets but not within one: no figure. The learning rate varies within mnist.
    assert "memory-vs-batch-size.png" in shown and "memory-vs-learning-rate.png" in shown
    assert "memory-vs-epochs.png" not in shown and "No figure for epochs" in markdown
    # one trainer: no comparison of trainers, and the paper's tables as they always were
    assert "Trainers compared" not in markdown and "trainers-peak-vs-batch.png" not in shown
    header = next(line for line in markdown.splitlines() if line.startswith("| trial |"))
    # the trials' numbers with their ids first; model and optimizer always shown, after the paper's columns
    assert header == ("| trial | id | lr | epochs | batch | hidden | ok/runs | used MB | rss mean | rss peak "
                      "| peak−base | predicted | model | optimizer |")


def test_calibration_file_holds_the_exact_fit(report):
    _, written, _ = report
    calibration = json.loads(read(written["calibration"]))
    assert calibration["format"] == "memsweep-calibration" and calibration["version"] == 1
    # cifar-10: footprint = batch MiB = the estimate exactly, so a = 0 and b = 1 over the five trials.
    fit = next(f for f in calibration["fits"] if f["dataset"] == "cifar-10")
    assert fit["host"] == "testhost" and fit["n"] == 5
    assert fit["a_bytes"] == pytest.approx(0, abs=1) and fit["b"] == pytest.approx(1)


def test_tables_hold_the_files_figures(report):
    _, written, _ = report
    markdown = read(written["markdown"])
    # A's repeats: used 1000 and 1010 MiB -> mean 1005.0, sample SD 7.07; footprints 14 and 18 -> 16.0 ± 2.8.
    row_a = next(line for line in markdown.splitlines() if "| 10-5 |" in line)
    assert "1005.0 ± 7.1" in row_a
    assert "16.0 ± 2.8" in row_a
    assert "2/2" in row_a
    # C: one ok run of two, so no spread; the diverged one is listed with its message.
    row_c = next(line for line in markdown.splitlines() if "| 4-4 |" in line)
    assert "1/2" in row_c and "2000.0 |" in row_c
    assert "the training loss became nan" in markdown


def test_findings_say_what_drives_memory_and_what_is_noise(report):
    _, written, _ = report
    findings = [line[2:] for line in read(written["markdown"]).splitlines() if line.startswith("- ")]
    # Footprint = batch MiB: a perfect rank order of 5 points, p = 2/120 exactly, and no Fisher interval.
    assert ("cifar-10, footprint: batch size: Spearman rho 1.00 (no interval at |rho| = 1), p 0.0167, n 5 "
            "-> larger batch_size, more memory") in findings
    noise = next(line for line in findings if line.startswith("not distinguishable from noise"))
    assert "batch size (cifar-10, system used)" in noise
    assert "batch size (cifar-10, footprint)" not in noise


def test_trials_not_ok_show_how_their_process_ended(tmp_path):
    path = str(tmp_path / "v3.h5")
    write_results_file(path, [
        dict(status="timeout", message="past its time limit", end_signal=9, end_cause="timeout"),
        dict(status="failed", message="out of memory", end_signal=9, oom_killed=1, end_cause="oom"),
        dict(status="failed", message="no result", end_cause="no_result", batch_size=4),
        dict(status="diverged", message="the training loss became nan", end_cause="exited", batch_size=2),
        dict(status="ok", end_cause="exited", batch_size=1),
    ])
    table = not_ok_table(load(path).trials)
    assert table["status"].tolist() == ["timeout", "failed", "failed", "diverged"]
    assert table.columns.tolist()[-2:] == ["process end", "message"]
    assert table["process end"].tolist() == ["killed: timeout, SIGKILL", "killed: oom, SIGKILL", "no_result", ""]
    # the trial's number (load order here; the first two rows have the same hyperparameters, so the same id: one
    # trial) and its model and optimizer, as in every table of the report
    assert table["trial"].tolist() == [1, 1, 2, 3]
    assert table["model"].astype(str).tolist() == ["mlp"] * 4 and "optimizer" in table.columns


def test_trials_not_ok_show_a_killed_trial_until_it_has_a_result(tmp_path):
    # killed is not final: the trial's killed row is what it has until a resume runs it to a result
    path = str(tmp_path / "r.h5")
    write_results_file(path, [
        dict(batch_size=1, status="killed", message="rank 1 died", end_cause="rank_lost"),
        dict(batch_size=2, status="killed", message="oom", end_signal=9, oom_killed=1, end_cause="oom"),
        dict(batch_size=2, attempt=1, status="ok", end_cause="exited"),
    ])
    table = not_ok_table(load(path).trials)
    assert table["status"].tolist() == ["killed"]
    assert table["message"].tolist() == ["rank 1 died"]


def test_trials_not_ok_of_an_older_file_have_no_process_column(tmp_path):
    path = str(tmp_path / "v2.h5")
    write_results_file(path, [dict(status="over_budget", message="RSS passed the budget"), dict(status="ok")],
                       schema_version=2)
    table = not_ok_table(load(path).trials)
    assert table["status"].tolist() == ["over_budget"]
    assert "process end" not in table.columns
    assert table["message"].tolist() == ["RSS passed the budget"]


def test_process_end_names_signals():
    assert process_end("crash", 11) == "killed: crash, SIGSEGV"
    assert process_end("", 15) == "killed: SIGTERM"
    assert process_end("exited", 0) == "" and process_end("", 0) == ""
    assert process_end("rank_lost", 0) == "rank_lost"


# Two trainers on the same hyperparameters: pytorch's peak is memsweep's + 100 MiB + 0.25 MiB per example.
TWO_BATCHES = [16, 32, 64, 128]


@pytest.fixture(scope="module")
def two_trainers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trainers")
    path = str(folder / "trainers.h5")
    rows = []
    for batch in TWO_BATCHES:
        common = dict(dataset="mnist", learning_rate=0.01, epochs=1, batch_size=batch, hidden=[32])
        for repeat in (0, 1):
            rows.append(dict(common, repeat=repeat, **memory(1000, 100 + batch / 8, 50, batch / 8)))
            rows.append(dict(common, repeat=repeat, trainer="pytorch", params={"workers": 2, "n": 1}, processes=3,
                             rss_peak=int((200 + batch / 8 + batch / 4) * MIB), rss_baseline=0,
                             rss_mean=150.0 * MIB, sys_used_mean=1100.0 * MIB, predicted_bytes=-1))
    rows.append(dict(dataset="mnist", learning_rate=0.01, epochs=1, batch_size=8, hidden=[32], trainer="pytorch",
                     params={"workers": 2, "n": 1}, status="failed", message="the program exited with status 1",
                     rss_baseline=0, bad_event_lines=4))
    built = write_results_file(path, rows)
    out = str(folder / "out")
    return path, out, write_report([path], out), built


def test_two_trainers_get_a_section_comparing_them(two_trainers):
    path, out, written, _ = two_trainers
    markdown = read(written["markdown"])
    assert "## Trainers compared" in markdown
    findings = [line[2:] for line in markdown.splitlines() if line.startswith("- ")]
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    # nothing paired (below): no figure of the pairs, no file, a line saying why
    assert "trainers-peak-vs-batch.png" not in shown
    assert not os.path.exists(os.path.join(out, "trainers-peak-vs-batch.png"))
    assert "_No figure of peak RSS against batch size per trainer: no configuration was trained by two" in markdown
    assert "These statistics take every trainer's trials together" in markdown
    # pytorch's trials carry parameters that memsweep's lack: not the same hyperparameters, nothing paired
    assert "No configuration has an ok trial of two trainers" in markdown
    assert "memsweep 4, pytorch 4" in markdown
    assert not any(line.startswith("pytorch − memsweep") for line in findings)


@pytest.fixture(scope="module")
def paired_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("paired")
    path = str(folder / "paired.h5")
    rows = []
    for batch in TWO_BATCHES:
        common = dict(dataset="mnist", learning_rate=0.01, epochs=1, batch_size=batch, hidden=[32],
                      params={"workers": 2, "n": 1})
        for repeat in (0, 1):
            rows.append(dict(common, repeat=repeat, **memory(1000, 100 + batch / 8 + repeat, 50, batch / 8)))
            rows.append(dict(common, repeat=repeat, trainer="pytorch", processes=3,
                             rss_peak=int((200 + batch / 8 + batch / 4 + 3 * repeat) * MIB), rss_baseline=0,
                             rss_mean=150.0 * MIB, sys_used_mean=1100.0 * MIB, predicted_bytes=-1))
    rows.append(dict(dataset="mnist", learning_rate=0.01, epochs=1, batch_size=8, hidden=[32], trainer="pytorch",
                     params={"workers": 2, "n": 1}, status="failed", message="the program exited with status 1",
                     rss_baseline=0, bad_event_lines=4))
    built = write_results_file(path, rows)
    out = str(folder / "out")
    return path, out, write_report([path], out), built


def test_the_trainers_section_pairs_and_says_how_the_difference_goes(paired_report):
    path, out, written, built = paired_report
    markdown = read(written["markdown"])
    assert "## Trainers compared" in markdown
    findings = [line[2:] for line in markdown.splitlines() if line.startswith("- ")]
    # repeats: memsweep's peaks p and p + 1, pytorch's q and q + 3: the difference of means is 100 + batch / 4 + 1
    sentence = next(line for line in findings if line.startswith("pytorch − memsweep peak RSS"))
    assert sentence.startswith("pytorch − memsweep peak RSS (mnist, 4 paired configurations): grows with batch size, "
                               "+0.25 MiB per example (95% CI [+0.25, +0.25]), +28.0 MiB from batch 16 to 128;")
    lines = markdown.splitlines()
    header = next(line for line in lines if line.startswith("| trainer | dataset | lr |"))
    assert header.endswith("| param_n | workers | runs memsweep/pytorch | peak memsweep | peak pytorch "
                           "| peak pytorch − memsweep | footprint memsweep | footprint pytorch "
                           "| footprint pytorch − memsweep |")
    row = next(line for line in lines[lines.index(header):] if line.startswith("| pytorch | mnist | 0.01 | 1 | 64 |"))
    # memsweep: peaks 108 and 109 -> 108.5, footprint 58.5; pytorch: 224 and 227 -> 225.5, its whole peak
    assert "| 2/2 | 108.5 | 225.5 | 117 | 58.5 | 225.5 | 167 |" in row
    assert png_size(os.path.join(out, "trainers-peak-vs-batch.png")) == (800, 500)


def test_the_paper_tables_list_trainer_and_params_after_their_columns(paired_report):
    path, _, written, built = paired_report
    markdown = read(written["markdown"])
    header = next(line for line in markdown.splitlines() if line.startswith("| trial |"))
    # `n` is a column of the paper table: the parameter n is param_n there
    assert header == ("| trial | id | lr | epochs | batch | hidden | ok/runs | used MB | rss mean | rss peak "
                      "| peak−base | predicted | model | optimizer | trainer | param_n | workers |")
    lines = markdown.splitlines()
    start = lines.index("## mnist: trials")
    rows = [line for line in lines[start:lines.index("## Trials that did not end ok")] if line.startswith("| ")][2:]
    assert len(rows) == 9 and all(line.endswith("| 1 | 2 |") for line in rows)  # 4 batches x 2 trainers, the failed
    assert sum("| pytorch |" in line for line in rows) == 5
    # the failed trial's row in the trials that did not end ok, with its trainer and parameters last
    failed = next(line for line in markdown.splitlines() if "the program exited with status 1" in line)
    assert failed.endswith("| the program exited with status 1 | pytorch | 1 | 2 |")
    assert "wrote 4 line(s) to memsweep's events channel that were not understood" in markdown
    assert built[-1]["trial_id"] in markdown
    text = tables_text([path])
    assert "trainer" in text.splitlines()[1] and "pytorch" in text


def test_no_counters_figure_and_no_rss_figure_without_their_data(tmp_path):
    path = str(tmp_path / "plain.h5")
    write_results_file(path, [dict(dataset="mnist", batch_size=batch, **memory(1000 + batch, 60 + batch, 50, 9))
                              for batch in (8, 16, 32)], counter_columns=())
    written = write_report([path], str(tmp_path / "out"))
    markdown = read(written["markdown"])
    assert "_No figure of counters per step against batch size: no counters were recorded._" in markdown
    files = sorted(os.listdir(tmp_path / "out"))
    assert "counters-vs-batch.png" not in files
    assert [name for name in files if name.endswith(".png")] == sorted(os.path.basename(p) for p in written["figures"])
