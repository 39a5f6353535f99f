"""report, compare and the command line, on files built with known values and on one the real binary writes."""

import json
import os
import re
import struct
import subprocess
import sys

import pytest

from memsweep_analysis.compare import compare
from memsweep_analysis.report import write_report
from results_builder import write_results_file

MIB = 2 ** 20
ANALYSIS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(ANALYSIS)
A = dict(dataset="mnist", learning_rate=0.1, epochs=2, batch_size=8, hidden=[10, 5])
B = dict(dataset="mnist", learning_rate=0.01, epochs=2, batch_size=32, hidden=[20])
C = dict(dataset="fashion-mnist", learning_rate=0.05, epochs=1, batch_size=16, hidden=[4, 4])


def memory(sys_mib, peak_mib, baseline_mib, predicted_mib):
    return dict(sys_used_mean=sys_mib * MIB, rss_mean=(peak_mib - 1) * MIB, rss_peak=int(peak_mib * MIB),
                rss_baseline=int(baseline_mib * MIB), predicted_bytes=int(predicted_mib * MIB))


def png_size(path):
    """(width, height) from the PNG's IHDR chunk: the signature, then length, "IHDR", width, height."""
    with open(path, "rb") as png:
        head = png.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


@pytest.fixture
def built(tmp_path):
    path = str(tmp_path / "built.h5")
    trials = write_results_file(path, [
        dict(A, repeat=0, **memory(1000, 64, 50, 9)),
        dict(A, repeat=1, **memory(1010, 70, 52, 9)),
        dict(B, repeat=0, **memory(1100, 80, 60, 12)),
        dict(B, repeat=1, **memory(1120, 84, 60, 12)),
        dict(C, repeat=0, **memory(2000, 40, 36, 2)),
        dict(C, repeat=1, status="diverged", message="the training loss became nan", **memory(2000, 40, 36, 2)),
    ], samples=[
        # The first trial: setup (epoch 0), then two epochs; counters count since the trial's start.
        dict(epoch=0, t=0.00, rss=50 * MIB, sys_used=990 * MIB, **{"perf::PAGE-FAULTS": 0}),
        dict(epoch=1, t=0.01, rss=60 * MIB, sys_used=1000 * MIB, **{"perf::PAGE-FAULTS": 100}),
        dict(epoch=2, t=0.02, rss=64 * MIB, sys_used=1010 * MIB, **{"perf::PAGE-FAULTS": 150}),
    ])
    return path, trials


def test_report_writes_markdown_html_and_figures_of_the_right_size(built, tmp_path):
    path, trials = built
    out = str(tmp_path / "report")
    written = write_report([path], out)

    markdown = open(written["markdown"], encoding="utf-8").read()
    page = open(written["html"], encoding="utf-8").read()
    for dataset in ("mnist", "fashion-mnist"):
        assert f"## {dataset}: trials" in markdown
    # Every image the Markdown shows exists beside it; the HTML carries them all inside.
    shown = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert len(shown) == len(written["figures"]) >= 10
    for name in shown:
        assert png_size(os.path.join(out, name)) == (800, 500), name
    sources = re.findall(r'src="([^"]*)"', page)
    assert len(sources) == len(shown)
    assert all(source.startswith("data:image/png;base64,") for source in sources)
    assert "<link" not in page
    # B's second repeat has mnist's largest footprint (84 - 60 = 24 MiB), C's ok run fashion-mnist's: each
    # dataset's largest is plotted over time.
    assert os.path.exists(os.path.join(out, f"rss-{trials[3]['trial_id']}.png"))
    assert os.path.exists(os.path.join(out, f"rss-{trials[4]['trial_id']}.png"))
    calibration = json.load(open(written["calibration"]))
    assert calibration["format"] == "memsweep-calibration"


def test_report_tables_hold_the_files_figures(built, tmp_path):
    path, _ = built
    markdown = open(write_report([path], str(tmp_path / "r"))["markdown"], encoding="utf-8").read()
    # A's repeats: used 1000 and 1010 MiB -> mean 1005.0, sample SD 7.07; footprints 14 and 18 -> 16.0 ± 2.8.
    row_a = next(line for line in markdown.splitlines() if "| 10-5 |" in line)
    assert "1005.0 ± 7.1" in row_a
    assert "16.0 ± 2.8" in row_a
    assert "2/2" in row_a
    # C: one ok run of two, so no spread; the diverged one is listed with its message.
    row_c = next(line for line in markdown.splitlines() if "| 4-4 |" in line)
    assert "1/2" in row_c and "2000.0 |" in row_c
    assert "the training loss became nan" in markdown


def test_compare_pairs_trials_and_divides_b_by_a(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    write_results_file(a, [dict(A, repeat=0, **memory(1000, 64, 50, 9)), dict(B, repeat=0, **memory(1000, 80, 60, 9))])
    write_results_file(b, [dict(A, repeat=0, **memory(1000, 71, 50, 9)), dict(C, repeat=0, **memory(1000, 40, 36, 2))])
    result = compare(a, b)
    assert len(result.table) == 1
    assert result.table["footprint B/A"].iloc[0] == pytest.approx(21 / 14)
    assert len(result.only_in_a) == 1 and len(result.only_in_b) == 1


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ANALYSIS, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "memsweep_analysis", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "text"])
def test_bad_files_give_one_line_and_status_2(tmp_path, kind):
    path = tmp_path / f"{kind}.h5"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("trial,lr\n1,0.1\n")
    done = run_cli("report", str(path), "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("memsweep_analysis: error: ") and str(path) in lines[0]
    assert not (tmp_path / "out" / "report.md").exists()


def test_unknown_trial_is_refused(built, tmp_path):
    path, _ = built
    done = run_cli("report", path, "-o", str(tmp_path / "out"), "--trials", "000000000000")
    assert done.returncode == 2
    assert "000000000000" in done.stderr


def test_report_of_a_file_the_real_binary_wrote(tmp_path):
    binary = os.environ.get("MEMSWEEP_EXECUTABLE") or os.path.join(REPO, "build", "memsweep")
    if not os.access(binary, os.X_OK):
        pytest.fail(f"no memsweep binary at {binary}: build it, or set MEMSWEEP_EXECUTABLE to one")
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\n[defaults]\ndataset = "synthetic"\n'
                     'synthetic = { shape = [1, 8, 8], classes = 4, train_size = 512, test_size = 64 }\n'
                     'epochs = 2\nhidden = [16]\n[grid]\nbatch_size = [16, 64]\n')
    made = subprocess.run([binary, "run", str(sweep), "-o", str(tmp_path / "tiny.h5"), "-q"], capture_output=True,
                          text=True, env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120)
    assert made.returncode == 0, made.stderr
    done = run_cli("report", str(tmp_path / "tiny.h5"), "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "## synthetic: trials" in markdown
    assert markdown.count("| 2/2 |") == 0 and markdown.count("| 1/1 |") == 2  # two configurations, one run each
    tables = run_cli("tables", str(tmp_path / "tiny.h5"))
    assert tables.returncode == 0 and "synthetic" in tables.stdout
