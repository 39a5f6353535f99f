"""A file the real memsweep writes, in the test: the builder's schema against it, and A's modules on it.

The binary is $MEMSWEEP_EXECUTABLE (ctest sets it), else build/memsweep of this checkout; without one the
tests fail, since a schema drift between the C++ writer and this package must not go unseen.
"""

import math
import os
import subprocess

import h5py
import numpy as np
import pytest

from memsweep_analysis import load
from memsweep_analysis.counters import counters_per_step
from memsweep_analysis.estimate import estimate_components, parse_estimate_output
from real_memsweep import memsweep_binary
from results_builder import write_results_file
TRAIN_SIZE = 3000
SWEEP = f"""
[sweep]
name = "analysis-test"
seed = 3
repeats = 2

[sampler]
interval_ms = 5

[defaults]
dataset = "synthetic"
synthetic = {{ shape = [1, 12, 12], classes = 4, train_size = {TRAIN_SIZE}, test_size = 100 }}
model = "mlp"
optimizer = "momentum"
learning_rate = 0.05
epochs = 2

[grid]
batch_size = [16, 50]
hidden = [[32], [24, 8]]
"""


def run_sweep(scratch):
    """SWEEP run by the real binary in the folder `scratch`: the results file's path."""
    sweep = scratch / "sweep.toml"
    sweep.write_text(SWEEP)
    out = scratch / "results.h5"
    subprocess.run([memsweep_binary(), "run", str(sweep), "-o", str(out), "--threads", "1", "-q"], check=True,
                   cwd=scratch, capture_output=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return out


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return str(run_sweep(tmp_path_factory.mktemp("real")))


def attribute_kind(owner, name):
    attribute = owner.attrs.get_id(name)
    kind = attribute.get_type()
    detail = (kind.is_variable_str(), kind.get_cset()) if isinstance(kind, h5py.h5t.TypeStringID) else kind.get_size()
    return type(kind).__name__, detail, attribute.get_space().get_simple_extent_type()


def member_kinds(dataset):
    kind = dataset.id.get_type()
    members = []
    for index in range(kind.get_nmembers()):
        member = kind.get_member_type(index)
        strings = (member.get_strpad(), member.get_cset()) if isinstance(member, h5py.h5t.TypeStringID) else None
        members.append((kind.get_member_name(index), member.get_class(), member.get_size(), strings))
    return members


def test_the_builder_writes_the_real_schema(real, tmp_path):
    built = str(tmp_path / "built.h5")
    with h5py.File(real, "r") as source:
        counters = [str(c) for c in source.attrs["counter_columns"]]
        same = {name: source.attrs[name] for name in ("ranks", "sampler_interval_ms")}  # they set a chunk size
        # the binary's schema version: a binary built before the builder's current version is still checked
        # and the first run's flush interval sets the workers' chunk of /samples
        run = {"run": 0, "start_time": 1.7e9, "ranks": int(source.attrs["ranks"]), "hosts": "", "command_line": "",
               "memsweep_version": "", "flush_interval": float(source["runs"][0]["flush_interval"])}
        write_results_file(built, [{}], samples=[{}], epochs=[{}], counter_columns=counters, attrs=same, runs=[run],
                           schema_version=int(source.attrs["schema_version"]))
        with h5py.File(built, "r") as mine:
            assert sorted(mine.attrs) == sorted(source.attrs)
            for name in source.attrs:
                assert attribute_kind(mine, name) == attribute_kind(source, name), name
            version = source.attrs["schema_version"]
            tables = ["epochs", "runs", "samples", "trials"] + (["messages"] if version >= 5 else []) + \
                (["searches"] if version >= 6 else []) + (["metrics"] if version >= 11 else [])
            assert sorted(mine) == sorted(source) == sorted(tables)
            for table in source:
                theirs, ours = source[table], mine[table]
                assert ours.dtype == theirs.dtype, table
                assert member_kinds(ours) == member_kinds(theirs), table
                assert (ours.chunks, ours.compression, ours.compression_opts, ours.shuffle, ours.maxshape) == \
                    (theirs.chunks, theirs.compression, theirs.compression_opts, theirs.shuffle, theirs.maxshape)
                assert sorted(ours.attrs) == sorted(theirs.attrs), table
                for name in theirs.attrs:
                    if name.startswith("unit:"):
                        assert ours.attrs[name] == theirs.attrs[name], (table, name)


def test_the_builder_gives_the_real_trial_ids(real, tmp_path):
    trials = load(real).trials
    synthetic = {"shape": (1, 12, 12), "classes": 4, "train_size": TRAIN_SIZE, "test_size": 100}
    rows = [dict(dataset="synthetic", synthetic=synthetic, optimizer="momentum", learning_rate=0.05, epochs=2,
                 batch_size=int(t["batch_size"]), hidden=t["hidden"], seed=int(t["seed"]), repeat=int(t["repeat"]))
            for t in trials.to_dict("records")]
    built = write_results_file(str(tmp_path / "built.h5"), rows)
    assert [b["definition"] for b in built] == trials["definition"].tolist()
    assert [b["trial_id"] for b in built] == trials["trial_id"].tolist()


def test_load_reads_the_real_file(real):
    results = load(real)
    files = results.files
    assert files["sweep_name"].tolist() == ["analysis-test"]
    trials = results.trials
    assert len(trials) == int(files["planned_trials"].iloc[0]) == 8
    assert set(trials["status"]) == {"ok"} and trials["final"].all()
    assert sorted(map(tuple, trials["hidden"])) == sorted([(32,), (24, 8)] * 4)
    # 144-32-4 and 144-24-8-4, weights and biases
    by_hidden = {tuple(h): p for h, p in zip(trials["hidden"], trials["parameters"])}
    assert by_hidden == {(32,): 144 * 32 + 32 + 32 * 4 + 4, (24, 8): 144 * 24 + 24 + 24 * 8 + 8 + 8 * 4 + 4}
    assert trials["config"].nunique() == 4 and (trials.groupby("config").size() == 2).all()
    with h5py.File(real, "r") as raw:
        peaks = raw["trials"]["rss_peak"]
        baselines = raw["trials"]["rss_baseline"]
    assert trials["rss_peak"].tolist() == peaks.tolist()
    assert trials["rss_footprint"].tolist() == (peaks - baselines).tolist()
    first = trials.iloc[0]
    samples = results.samples_for([first["trial_id"]], attempt=int(first["attempt"]))
    assert len(samples) == int(first["samples"]) > 0
    assert np.all(np.diff(samples["t"].to_numpy()) >= 0)


def test_components_add_up_to_the_recorded_estimate(real):
    results = load(real)
    table = estimate_components(results, memsweep=memsweep_binary())
    assert table.attrs["notes"] == []
    assert set(table["trial_id"]) == set(results.trials["trial_id"])  # repeats too
    for trial_id, parts in table.groupby("trial_id"):
        total = parts.loc[parts["part"] == "total", "bytes"].item()
        inside = parts.loc[~parts["part"].isin(["total", "resident dataset"]), "bytes"]
        assert inside.sum() == total
        # the run had one thread (--threads 1), and so has the estimate: the same oneDNN sizes
        assert total == parts["predicted_bytes"].iloc[0]
        assert parts["part"].tolist()[0] == "parameters"


def test_the_recorded_parts_are_what_memsweep_estimate_prints(real, tmp_path):
    # the file's parts (schema 10) against the estimate command on the same sweep, split sizes and threads
    results = load(real)
    recorded = estimate_components(results)
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(SWEEP)
    printed = subprocess.run([memsweep_binary(), "estimate", str(sweep)], check=True, capture_output=True, text=True,
                             env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    blocks = parse_estimate_output(printed)
    assert blocks, printed
    assert recorded["config"].nunique() == 4
    for config, parts in recorded.groupby("config"):
        shown = next(blocks[t] for t in parts["trial_id"] if t in blocks)  # the command prints one repeat
        mine = parts[parts["trial_id"] == parts["trial_id"].iloc[0]]
        assert [(p["part"], p["bytes"]) for p in shown] == list(zip(mine["part"], mine["bytes"])), config


def test_counters_of_the_real_file(real):
    results = load(real)
    table = counters_per_step(results)
    counters = list(results.files["counter_columns"].iloc[0])
    assert counters, "the run recorded no counter"
    name = counters[0]
    with h5py.File(real, "r") as raw:
        samples = raw["samples"][()]
    for row in table.to_dict("records"):
        mine = samples[samples["trial_id"] == row["trial_id"].encode()]
        counted = mine[mine[name] >= 0]
        expected = counted[np.argmax(counted["t"])][name] if len(counted) else math.nan
        steps = 2 * math.ceil(TRAIN_SIZE / row["batch_size"])
        assert row["steps"] == steps
        assert row[name] == expected or (math.isnan(expected) and math.isnan(row[name]))
        assert row[name + " per step"] == pytest.approx(expected / steps, nan_ok=True)


@pytest.mark.parametrize("version", [1, 2, 3])
def test_memsweep_summary_reads_files_of_every_schema_version(tmp_path, version):
    # The C++ reader on files of each version written by another writer (the builder): old columns as they
    # were, a timeout counted and listed, and for schema 3 how the killed processes ended.
    path = str(tmp_path / f"v{version}.h5")
    killed = dict(end_signal=9, end_cause="timeout", pid=4242) if version == 3 else {}
    oom = dict(end_signal=9, oom_killed=1, end_cause="oom") if version == 3 else {}
    write_results_file(path, [
        dict(status="ok", batch_size=8, rss_peak=70 * 2**20),
        dict(status="timeout", message="past its 60 s time limit", batch_size=16, **killed),
        dict(status="failed", message="the kernel's OOM killer ended it", batch_size=32, **oom),
    ], samples=[{}], schema_version=version)
    summary = subprocess.run([memsweep_binary(), "summary", path], capture_output=True, text=True)
    assert summary.returncode == 0, summary.stderr
    assert "3 planned; 1 failed, 1 ok, 1 timeout" in summary.stdout
    assert "70.0" in summary.stdout  # the ok trial's peak, MiB
    assert "not ok (2)" in summary.stdout
    assert "past its 60 s time limit" in summary.stdout
    if version == 3:
        assert "killed: timeout, SIGKILL" in summary.stdout and "killed: oom, SIGKILL" in summary.stdout
    else:
        assert "killed:" not in summary.stdout and "process end" not in summary.stdout
