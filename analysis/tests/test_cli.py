"""The command line: bad input ends with one line naming it and status 2; a file the real binary wrote."""

import os
import subprocess
import sys

import h5py
import pytest

from memsweep_analysis.__main__ import main
from pngs import png_size
from real_memsweep import memsweep_binary
from results_builder import SCHEMA_VERSION, write_results_file

MIB = 2 ** 20
ANALYSIS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(ANALYSIS)


def run_module(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=ANALYSIS, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "memsweep_analysis", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=120)


def bad_file(tmp_path, kind):
    path = tmp_path / f"{kind}.h5"
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("trial,lr\n1,0.1\n")
    elif kind == "other-hdf5":
        with h5py.File(path, "w") as f:
            f["x"] = [1, 2, 3]
    elif kind == "newer-schema":
        write_results_file(str(path), [{}], attrs={"schema_version": SCHEMA_VERSION + 1})
    return str(path)


def one_error_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("memsweep_analysis: error: "), stderr
    return lines[0]


@pytest.mark.parametrize("kind, says", [("missing", "no such file"), ("directory", "directory"),
                                        ("empty", "not an HDF5 file"), ("text", "not an HDF5 file"),
                                        ("other-hdf5", "format"), ("newer-schema", "schema")])
@pytest.mark.parametrize("command", ["report", "tables", "compare"])
def test_bad_files_give_one_line_naming_them_and_status_2(tmp_path, capsys, kind, says, command):
    path = bad_file(tmp_path, kind)
    good = str(tmp_path / "good.h5")
    write_results_file(good, [{}])
    out = tmp_path / "out"
    argv = {"report": ["report", good, path, "-o", str(out)], "tables": ["tables", path],
            "compare": ["compare", good, path, "-o", str(out / "c.md")]}[command]
    assert main(argv) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert path in line and says in line, line
    assert captured.out == ""
    assert not out.exists()  # nothing written, not even the folder


@pytest.mark.parametrize("argv, says", [
    (["report", "{good}", "-o", "{out}", "--trials", "000000000000"], "000000000000"),
    (["report", "{good}", "-o", "{out}", "--train-examples", "cifar-10=many"], "--train-examples"),
    (["report", "{good}", "-o", "{out}", "--paper-csv", "{tmp}/no-such.csv"], "no-such.csv"),
    (["report", "{good}"], "-o/--output"),
    (["summarize", "{good}"], "summarize"),
    ([], "COMMAND"),
])
def test_bad_options_give_one_line_and_status_2(tmp_path, capsys, argv, says):
    good = str(tmp_path / "good.h5")
    write_results_file(good, [{}])
    out = tmp_path / "out"
    argv = [a.format(good=good, out=out, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    assert says in one_error_line(capsys.readouterr().err)
    assert not (out / "report.md").exists()


def test_as_a_module_a_bad_file_is_one_line_too(tmp_path):
    path = bad_file(tmp_path, "text")
    done = run_module("tables", path)
    assert done.returncode == 2
    assert path in one_error_line(done.stderr)


def test_a_file_the_real_binary_wrote(tmp_path):
    binary = memsweep_binary()
    sweep = tmp_path / "tiny.toml"
    sweep.write_text('[sweep]\nname = "tiny"\n[defaults]\ndataset = "synthetic"\n'
                     'synthetic = { shape = [1, 8, 8], classes = 4, train_size = 512, test_size = 64 }\n'
                     'epochs = 2\nhidden = [16]\n[grid]\nbatch_size = [16, 64]\n')
    results = str(tmp_path / "tiny.h5")
    made = subprocess.run([binary, "run", str(sweep), "-o", results, "-q"], capture_output=True, text=True,
                          env=dict(os.environ, OMP_NUM_THREADS="1"), timeout=120, cwd=tmp_path)
    assert made.returncode == 0, made.stderr

    # What the report must show, read with h5py alone.
    with h5py.File(results, "r", libver="latest", swmr=True) as f:
        trials = f["trials"][:]
    assert len(trials) == 2 and all(trials["status"] == b"ok")
    footprint = {int(t["batch_size"]): (t["rss_peak"] - t["rss_baseline"]) / MIB for t in trials}
    largest = max(trials, key=lambda t: t["rss_footprint"])["trial_id"].decode()

    out = tmp_path / "out"
    done = run_module("report", results, "-o", str(out))
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text()
    assert "## synthetic: trials" in markdown
    for batch, mib in footprint.items():
        row = next(line for line in markdown.splitlines() if line.startswith("| ") and f"| {batch} | 16 |" in line)
        assert f"| {mib:.1f} |" in row, (batch, mib, row)
        assert "| 1/1 |" in row
    assert (out / f"rss-{largest}.png").exists()
    for png in out.glob("*.png"):
        assert png_size(png) == (800, 500), png
    page = (out / "report.html").read_text()
    assert 'src="' in page and 'src="data:image/png;base64,' in page
    assert page.count('src="') == page.count('src="data:image/png;base64,')

    tables = run_module("tables", results)
    assert tables.returncode == 0, tables.stderr
    assert "synthetic" in tables.stdout and "batch_size" in tables.stdout
