"""load(): columns, derived columns, lazy reading, several files, refusals."""

import importlib
import math
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pandas as pd
import pytest

import memsweep_analysis
from memsweep_analysis import MemsweepFileError, load
from results_builder import SCHEMA_VERSION, write_results_file

# the package's `load` is the function, which hides the module of the same name
load_module = importlib.import_module("memsweep_analysis.load")

MIB = 2 ** 20


def test_trials_columns_decoded_and_derived(tmp_path):
    path = str(tmp_path / "r.h5")
    built = write_results_file(path, [
        dict(dataset="mnist", hidden=[5, 3], batch_size=8, host="node-a", status="ok", parameters=3983),
        dict(dataset="synthetic", synthetic={"shape": (2, 4, 4), "classes": 3}, hidden=[7], status="failed",
             message="it broke", parameters=255),
        dict(dataset="cifar-10", model="cnn", channels=[4], hidden=[6], status="interrupted", parameters=6332),
        dict(dataset="cifar-10", model="alexnet", hidden=[8], status="killed", predicted_bytes=-1),
    ], attrs={"sweep_name": "named"})
    trials = load(path).trials
    assert list(trials["trial_id"]) == [t["trial_id"] for t in built]
    assert list(trials["file"]) == [path] * 4
    assert list(trials["sweep"]) == ["named"] * 4
    assert list(trials["host"])[0] == "node-a"
    assert list(trials["message"])[1] == "it broke"
    assert trials["hidden"].tolist() == [[5, 3], [7], [6], [8]]
    assert trials["channels"].tolist() == [[], [], [4], []]
    assert trials["depth"].tolist() == [2, 1, 1, 1]
    assert trials["total_units"].tolist() == [8, 7, 6, 8]
    assert trials["max_width"].tolist() == [5, 7, 6, 8]
    # the file's count (memsweep's parameter_count), as written; -1 (not counted) is NaN
    assert trials["parameters"].tolist()[:3] == [3983, 255, 6332]
    assert math.isnan(trials["parameters"].iloc[3])
    # killed is not final (is_final, src/results/rows.cpp): a resume may run the trial again
    assert trials["final"].tolist() == [True, True, False, False]
    assert math.isnan(trials["predicted_bytes"].iloc[3])  # -1: not measured
    assert trials["predicted_bytes"].iloc[0] == 9 * MIB
    assert isinstance(trials["status"].iloc[0], str)


def test_config_groups_repeats_only(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(batch_size=8, repeat=0), dict(batch_size=8, repeat=1, seed=99),
                              dict(batch_size=16, repeat=0)])
    config = load(path).trials["config"].tolist()
    assert config[0] == config[1]
    assert config[0] != config[2]
    assert "repeat=" not in config[0] and "batch_size=8" in config[0]


def test_files_frame_one_row_per_file(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    write_results_file(a, [{}], attrs={"sweep_name": "first", "part": None, "hosts": ["n1", "n2"], "ranks": 2},
                       counter_columns=("PAPI_L1_DCM", "perf::PAGE-FAULTS"))
    write_results_file(b, [{}, {"batch_size": 4}], samples=[{}], attrs={"sweep_name": "second",
                                                                       "part": "dataset=mnist"})
    files = load(a, b).files
    assert files["path"].tolist() == [a, b]
    assert files["sweep_name"].tolist() == ["first", "second"]
    assert files["part"].tolist() == ["", "dataset=mnist"]  # a missing part reads as empty
    assert files["hosts"].tolist() == [["n1", "n2"], ["testhost"]]
    assert files["ranks"].tolist() == [2, 1]
    assert files["counter_columns"].tolist() == [["PAPI_L1_DCM", "perf::PAGE-FAULTS"], ["perf::PAGE-FAULTS"]]
    assert files["trials_rows"].tolist() == [1, 2]
    assert files["samples_rows"].tolist() == [0, 1]
    assert (files["format"] == "memsweep").all() and (files["schema_version"] == SCHEMA_VERSION).all()


def test_schema_1_files_without_sys_total_still_read(tmp_path):
    # Schema 1 had no sys_total column in /samples; files of it (and the paper re-run's) stay readable.
    path = str(tmp_path / "old.h5")
    write_results_file(path, [{}], samples=[{"rss": 3 * 2**20}, {"rss": 5 * 2**20}], schema_version=1)
    with h5py.File(path, "r") as raw:
        assert "sys_total" not in raw["samples"].dtype.names and "pid" not in raw["trials"].dtype.names
    results = load(path)
    assert results.files["schema_version"].tolist() == [1]
    assert results.samples["rss"].tolist() == [3 * 2**20, 5 * 2**20]
    assert "sys_total" not in results.samples.columns
    assert results.trials["pid"].tolist() == [-1]


# What a trial row of a file before schema 3 reads as in the columns schema 3 added: not measured.
NOT_MEASURED = {"pid": -1, "end_signal": 0, "oom_killed": 0, "end_cause": "", "isolation": ""}


def test_schema_2_file_reads_the_process_columns_as_not_measured(tmp_path):
    path = str(tmp_path / "v2.h5")
    write_results_file(path, [dict(status="failed", message="it broke"), dict(batch_size=4)],
                       samples=[{"sys_total": 8 * 2**30}], schema_version=2)
    with h5py.File(path, "r") as raw:
        assert raw.attrs["schema_version"] == 2
        assert "pid" not in raw["trials"].dtype.names and "sys_total" in raw["samples"].dtype.names
    results = load(path)
    trials = results.trials
    for name, value in NOT_MEASURED.items():
        assert trials[name].tolist() == [value, value], name
    assert trials["start_seconds"].isna().all() and trials["cgroup_peak"].isna().all()
    assert trials["message"].tolist() == ["it broke", ""]
    assert trials["final"].tolist() == [True, True]
    assert results.samples["sys_total"].tolist() == [8 * 2**30]


def test_schema_3_file_reads_how_each_process_ended(tmp_path):
    path = str(tmp_path / "v3.h5")
    write_results_file(path, [
        dict(status="timeout", message="stopped: past its time limit", pid=4242, end_signal=9, end_cause="timeout",
             isolation="cgroup2", start_seconds=0.25, cgroup_peak=300 * MIB),
        dict(status="failed", pid=4243, end_signal=9, oom_killed=1, end_cause="oom", isolation="proc",
             start_seconds=0.5),
        dict(status="ok", pid=4244, end_cause="exited", isolation="cgroup1", start_seconds=0.125,
             cgroup_peak=90 * MIB),
    ], schema_version=3)
    with h5py.File(path, "r") as raw:
        assert raw.attrs["schema_version"] == 3
        assert raw["trials"].attrs["unit:start_seconds"] == "s" and raw["trials"].attrs["unit:cgroup_peak"] == "bytes"
    trials = load(path).trials
    assert trials["pid"].tolist() == [4242, 4243, 4244]
    assert trials["end_signal"].tolist() == [9, 9, 0]
    assert trials["oom_killed"].tolist() == [0, 1, 0]
    assert trials["end_cause"].tolist() == ["timeout", "oom", "exited"]
    assert trials["isolation"].tolist() == ["cgroup2", "proc", "cgroup1"]
    assert trials["start_seconds"].tolist() == [0.25, 0.5, 0.125]
    assert trials["cgroup_peak"].iloc[0] == 300 * MIB and math.isnan(trials["cgroup_peak"].iloc[1])  # -1: none
    assert trials["final"].tolist() == [True, True, True]  # timeout is a result, like failed


def test_files_of_every_schema_version_concatenate(tmp_path):
    paths = [str(tmp_path / f"v{version}.h5") for version in (1, 2, 3, 4)]
    for version, path in zip((1, 2, 3, 4), paths):
        extra = dict(pid=77, end_cause="exited", start_seconds=0.5) if version >= 3 else {}
        if version == 4:
            extra.update(trainer="pytorch", params={"dropout": 0.25}, processes=3, rss_peak_hwm_sum=90 * MIB)
        write_results_file(path, [dict(batch_size=8 * version, **extra)], schema_version=version)
    trials = load(paths).trials
    assert trials["file"].tolist() == paths
    assert trials["batch_size"].tolist() == [8, 16, 24, 32]
    assert trials["pid"].tolist() == [-1, -1, 77, 77] and trials["pid"].dtype.kind == "i"
    assert trials["end_cause"].tolist() == ["", "", "exited", "exited"]
    assert trials["start_seconds"].isna().tolist() == [True, True, False, False]
    assert trials["trainer"].tolist() == ["memsweep"] * 3 + ["pytorch"]
    assert trials["processes"].tolist() == [-1, -1, -1, 3] and trials["processes"].dtype.kind == "i"
    assert trials["rss_peak_hwm_sum"].isna().tolist() == [True, True, True, False]
    assert trials["dropout"].isna().tolist() == [True, True, True, False] and trials["dropout"].iloc[3] == 0.25


@pytest.mark.parametrize("version", [1, 2, 3])
def test_files_before_schema_4_read_as_memsweep_trials_without_parameters(tmp_path, version):
    path = str(tmp_path / f"v{version}.h5")
    write_results_file(path, [dict(batch_size=8), dict(batch_size=16, status="failed")], schema_version=version)
    with h5py.File(path, "r") as raw:
        assert "trainer" not in raw["trials"].dtype.names and "params" not in raw["trials"].dtype.names
    trials = load(path).trials
    assert trials["trainer"].tolist() == ["memsweep", "memsweep"]
    assert isinstance(trials["trainer"].dtype, pd.CategoricalDtype)
    assert trials["params"].tolist() == ["{}", "{}"]
    assert trials["processes"].tolist() == [-1, -1]  # not recorded
    assert trials["rss_peak_hwm_sum"].isna().all() and trials["process_peak_max"].isna().all()
    assert trials["bad_event_lines"].tolist() == [0, 0]
    assert trials.attrs["param_columns"] == {}
    assert list(trials.columns)[-1] == "trial_number"  # no parameter, no column after the derived ones
    # the configuration key of a built-in trial without parameters is what it always was
    assert trials["config"].tolist() == [d.replace(";seed=1;repeat=0", "") for d in trials["definition"]]


def test_schema_4_columns_as_written(tmp_path):
    path = str(tmp_path / "v4.h5")
    write_results_file(path, schema_version=4, trials=[
        dict(),
        dict(trainer="pytorch", processes=5, rss_baseline=0, rss_peak=300 * MIB, rss_peak_hwm_sum=420 * MIB,
             process_peak_max=250 * MIB, bad_event_lines=2, predicted_bytes=-1),
        dict(trainer="", batch_size=4),  # an empty trainer is memsweep's own
    ])
    with h5py.File(path, "r") as raw:
        trials_dtype = raw["trials"].dtype
        assert raw.attrs["schema_version"] == 4
        assert trials_dtype.names[-6:] == ("trainer", "params", "processes", "rss_peak_hwm_sum", "process_peak_max",
                                           "bad_event_lines")
        assert trials_dtype["trainer"].itemsize == 16 and trials_dtype["params"].itemsize == 512
        assert raw["trials"].attrs["unit:rss_peak_hwm_sum"] == "bytes"
    trials = load(path).trials
    assert trials["trainer"].tolist() == ["memsweep", "pytorch", "memsweep"]
    assert list(trials["trainer"].cat.categories) == ["memsweep", "pytorch"]
    assert trials["processes"].tolist() == [1, 5, 1]
    assert math.isnan(trials["rss_peak_hwm_sum"].iloc[0]) and trials["rss_peak_hwm_sum"].iloc[1] == 420 * MIB
    assert trials["process_peak_max"].iloc[1] == 250 * MIB
    assert trials["bad_event_lines"].tolist() == [0, 2, 0]
    # a program's footprint is its whole peak (baseline 0); its estimate is not measured
    assert trials["rss_footprint"].iloc[1] == 300 * MIB and math.isnan(trials["predicted_bytes"].iloc[1])
    # the same hyperparameters trained by another trainer are another configuration
    assert trials["config"].iloc[0] != trials["config"].iloc[1]
    assert trials["config"].iloc[1].endswith(";trainer=pytorch")


def test_params_become_columns_of_their_own_types(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [
        dict(trainer="pytorch", params={"dropout": 0.1, "activation": "relu", "layers": 2, "amp": True,
                                        "widths": [16, 32], "schedule": "cosine"}),
        dict(trainer="pytorch", params={"dropout": 0, "activation": "gelu", "layers": 3, "amp": False,
                                        "widths": [8], "schedule": 1}, batch_size=4),
        dict(trainer="pytorch", params={"dropout": 0.5, "activation": "relu", "layers": 4, "widths": []},
             batch_size=2),
        dict(batch_size=1),  # memsweep's, no parameters
    ])
    trials = load(path).trials
    assert trials.attrs["param_columns"] == {key: key for key in
                                             ("activation", "amp", "dropout", "layers", "schedule", "widths")}
    # after every column the loader had before, in key order
    assert list(trials.columns)[-6:] == ["activation", "amp", "dropout", "layers", "schedule", "widths"]
    assert trials["params"].iloc[0] == ('{"activation":"relu","amp":true,"dropout":0.1,"layers":2,'
                                        '"schedule":"cosine","widths":[16,32]}')
    assert trials["params"].iloc[3] == "{}"
    # numbers: float with NaN where a trial lacks the key (an integer 0 among floats too)
    assert trials["dropout"].dtype == np.float64
    assert trials["dropout"].tolist()[:3] == [0.1, 0.0, 0.5] and math.isnan(trials["dropout"].iloc[3])
    assert trials["layers"].dtype == np.float64 and trials["layers"].tolist()[:3] == [2.0, 3.0, 4.0]
    # strings: categorical
    assert isinstance(trials["activation"].dtype, pd.CategoricalDtype)
    assert trials["activation"].tolist()[:3] == ["relu", "gelu", "relu"] and pd.isna(trials["activation"].iloc[3])
    assert list(trials["activation"].cat.categories) == ["relu", "gelu"]  # in plan order, as first seen
    # booleans, some missing: pandas' nullable boolean
    assert trials["amp"].dtype == "boolean"
    assert trials["amp"].tolist()[:2] == [True, False] and trials["amp"].isna().tolist() == [False, False, True, True]
    # lists: tuples (hashable: the column groups)
    assert trials["widths"].tolist() == [(16, 32), (8,), (), None]
    assert trials.groupby("widths").size().to_dict() == {(): 1, (8,): 1, (16, 32): 1}
    # a mix of kinds: the values as they are
    assert trials["schedule"].dtype == object and trials["schedule"].tolist() == ["cosine", 1, None, None]


def test_a_key_every_trial_has_as_an_integer_is_int64(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(trainer="pytorch", params={"workers": 2, "amp": True}),
                              dict(trainer="pytorch", params={"workers": 4, "amp": False}, batch_size=4)])
    trials = load(path).trials
    assert trials["workers"].dtype == np.int64 and trials["workers"].tolist() == [2, 4]
    assert trials["amp"].dtype == bool and trials["amp"].tolist() == [True, False]


def test_a_key_named_like_a_column_gets_param_(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [
        dict(trainer="pytorch", params={"dataset": "imagenet-like", "hidden": 3, "parameters": 7, "trainer": "x",
                                        "param_hidden": "own", "lr_decay": 0.5}),
        dict(batch_size=4, params={"config": "c"}),
    ])
    trials = load(path).trials
    assert trials.attrs["param_columns"] == {
        "config": "param_config", "dataset": "param_dataset", "hidden": "param_param_hidden", "lr_decay": "lr_decay",
        "param_hidden": "param_hidden", "parameters": "param_parameters", "trainer": "param_trainer"}
    # the loader's own columns are untouched
    assert trials["dataset"].tolist() == ["synthetic", "synthetic"]
    assert trials["hidden"].tolist() == [[128], [128]] and trials["trainer"].tolist() == ["pytorch", "memsweep"]
    assert trials["param_dataset"].tolist()[0] == "imagenet-like"
    assert trials["param_param_hidden"].tolist()[0] == 3 and trials["param_hidden"].tolist()[0] == "own"
    assert trials["param_trainer"].tolist()[0] == "x" and trials["param_config"].tolist()[1] == "c"
    assert load_module.param_columns(trials) == trials.attrs["param_columns"]
    # without the attrs (a frame rebuilt from its values) the same names are worked out again
    bare = pd.DataFrame(trials.to_dict("list"))
    assert bare.attrs == {} and load_module.param_columns(bare) == trials.attrs["param_columns"]


def test_params_that_are_not_json_read_as_none_with_a_warning(tmp_path):
    path = str(tmp_path / "r.h5")
    # 600 bytes of JSON: the column holds 512, so the text is cut and no longer JSON
    long_text = '{"note":"' + "x" * 590 + '"}'
    built = write_results_file(path, [dict(trainer="pytorch", params=long_text), dict(params={"a": 1}, batch_size=4)])
    with pytest.warns(UserWarning, match=f"{built[0]['trial_id']}.*not a JSON object"):
        trials = load(path).trials
    assert trials.attrs["param_columns"] == {"a": "a"}
    assert len(trials["params"].iloc[0]) == 512  # kept as the file holds it
    assert math.isnan(trials["a"].iloc[0]) and trials["a"].iloc[1] == 1


def test_the_builder_refuses_a_column_the_version_lacks(tmp_path):
    with pytest.raises(KeyError, match="pid"):
        write_results_file(str(tmp_path / "v2.h5"), [dict(pid=5)], schema_version=2)
    with pytest.raises(KeyError, match="trainer"):
        write_results_file(str(tmp_path / "v3.h5"), [dict(trainer="pytorch")], schema_version=3)
    with pytest.raises(KeyError, match="sys_total"):
        write_results_file(str(tmp_path / "v1.h5"), [{}], samples=[{"sys_total": 1}], schema_version=1)


def test_several_files_concatenate_with_their_origin(tmp_path):
    a, b = str(tmp_path / "a.h5"), str(tmp_path / "b.h5")
    ta = write_results_file(a, [{"batch_size": 2}], samples=[{"perf::PAGE-FAULTS": 5}],
                            attrs={"sweep_name": "A"})
    tb = write_results_file(b, [{"batch_size": 3}, {"batch_size": 4}],
                            samples=[{"PAPI_TLB_DM": 7}, {"PAPI_TLB_DM": -1}],
                            attrs={"sweep_name": "B"}, counter_columns=("PAPI_TLB_DM",))
    results = load([a, b])
    trials = results.trials
    assert trials["batch_size"].tolist() == [2, 3, 4]
    assert trials["file"].tolist() == [a, b, b]
    assert trials["sweep"].tolist() == ["A", "B", "B"]
    samples = results.samples
    assert samples["trial_id"].tolist() == [ta[0]["trial_id"], tb[0]["trial_id"], tb[0]["trial_id"]]
    assert samples["perf::PAGE-FAULTS"].iloc[0] == 5
    assert samples["perf::PAGE-FAULTS"].iloc[1:].isna().all()  # B does not record it
    assert samples["PAPI_TLB_DM"].iloc[1] == 7
    assert samples["PAPI_TLB_DM"].iloc[[0, 2]].isna().all()  # A does not record it; -1 is not counted


def test_epochs_and_runs(tmp_path):
    path = str(tmp_path / "r.h5")
    built = write_results_file(path, [{}], epochs=[dict(epoch=1, seconds=2.5, rss=3 * MIB),
                                                   dict(epoch=2, seconds=1.5, rss=-1)])
    results = load(path)
    epochs = results.epochs
    assert epochs["trial_id"].tolist() == [built[0]["trial_id"]] * 2
    assert epochs["seconds"].tolist() == [2.5, 1.5]
    assert epochs["rss"].iloc[0] == 3 * MIB and math.isnan(epochs["rss"].iloc[1])
    runs = results.runs
    assert runs["run"].tolist() == [0] and runs["hosts"].tolist() == ["testhost"]


def test_tables_are_read_on_first_use_only(tmp_path, monkeypatch):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [{}, {"batch_size": 4}], samples=[{}] * 3, epochs=[{}])
    read = []
    real = load_module._table_frame

    def recording(path, sweep, dataset, columns=None, select=None):
        read.append(dataset.name)
        return real(path, sweep, dataset, columns, select)

    monkeypatch.setattr(load_module, "_table_frame", recording)
    results = load(path)
    assert read == []  # load itself reads root attributes only
    trials = results.trials
    assert sorted(read) == ["/runs", "/trials"]  # the trials need the runs' command lines, never /samples
    assert results.trials is trials
    assert sorted(read) == ["/runs", "/trials"]
    results.samples_for([trials["trial_id"].iloc[0]])
    assert read.count("/samples") == 1
    results.samples
    results.samples
    assert read.count("/samples") == 2


def test_samples_for_reads_only_the_asked_trials(tmp_path, monkeypatch):
    monkeypatch.setattr(load_module, "BLOCK_ROWS", 4)  # so the scan crosses blocks
    path = str(tmp_path / "r.h5")
    a, b = write_results_file(path, [{"batch_size": 1}, {"batch_size": 2}])
    samples = []
    for i in range(11):  # interleaved, as ranks' runs of samples are
        samples.append(dict(trial_id=a["trial_id"] if i % 3 else b["trial_id"], attempt=i % 2, t=float(i),
                            rss=i * MIB, **{"perf::PAGE-FAULTS": 100 + i}))
    write_results_file(path, [a, b], samples=samples)
    results = load(path)
    got = results.samples_for([b["trial_id"]])
    assert got["t"].tolist() == [0.0, 3.0, 6.0, 9.0]
    assert got["rss"].tolist() == [0, 3 * MIB, 6 * MIB, 9 * MIB]
    one = results.samples_for(a["trial_id"], attempt=1, columns=["t", "perf::PAGE-FAULTS"])
    assert list(one.columns) == ["file", "sweep", "trial_id", "attempt", "t", "perf::PAGE-FAULTS"]
    assert one["t"].tolist() == [1.0, 5.0, 7.0]
    assert one["perf::PAGE-FAULTS"].tolist() == [101, 105, 107]
    assert results.samples_for(["000000000000"]).empty
    with pytest.raises(KeyError, match="no column"):
        results.samples_for([a["trial_id"]], columns=["nope"])


def test_rows_never_written_are_left_out(tmp_path):
    # a killed writer without SWMR can leave zero rows, with an empty id, at a table's end
    path = str(tmp_path / "r.h5")
    write_results_file(path, [{}, {"trial_id": "", "definition": ""}], samples=[{}, {"trial_id": ""}])
    results = load(path)
    assert len(results.trials) == 1 and len(results.samples) == 1


def test_a_file_without_trials_gives_empty_frames_with_every_column(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [])
    results = load(path)
    assert results.trials.empty and results.samples_for(["000000000000"]).empty
    for column in ("file", "sweep", "trial_id", "rss_footprint", "hidden", "total_units", "parameters", "final",
                   "config"):
        assert column in results.trials.columns


def test_a_file_a_swmr_writer_left_open_is_read(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [{"batch_size": 6}])
    # a writer killed in SWMR mode leaves the superblock's "open for write" flag set
    code = ("import h5py, os, sys\n"
            "f = h5py.File(sys.argv[1], 'r+', libver='latest')\n"
            "f.swmr_mode = True\n"
            "f.flush()\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, path], check=True)
    with pytest.raises(OSError):
        h5py.File(path, "r")
    assert load(path).trials["batch_size"].tolist() == [6]


@pytest.mark.parametrize("make, expected", [
    (lambda p: None, "no such file"),
    (lambda p: os.mkdir(p), "is a directory"),
    (lambda p: open(p, "w").close(), "not an HDF5 file (an empty file)"),
    (lambda p: open(p, "w").write("trial,learning_rate\n1,0.1\n"), "not an HDF5 file (no HDF5 signature)"),
    (lambda p: h5py.File(p, "w").close(), "not a memsweep results file (no format attribute"),
    (lambda p: write_results_file(p, [{}], attrs={"format": "other"}), "format attribute is 'other'"),
    (lambda p: write_results_file(p, [{}], attrs={"schema_version": None}),
     "a memsweep file without a schema_version attribute"),
    (lambda p: write_results_file(p, [{}], attrs={"schema_version": 14}),
     "schema version 14, written by a newer memsweep? this package reads schemas 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13"),
    (lambda p: write_results_file(p, [{}], attrs={"schema_version": 0}),
     "schema version 0, unknown: this package reads schemas 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13"),
])
def test_refusals_name_the_file_and_what_was_expected(tmp_path, make, expected):
    path = str(tmp_path / "bad.h5")
    make(path)
    with pytest.raises(MemsweepFileError) as error:
        load(path)
    assert str(error.value).startswith(path + ": ")
    assert expected in str(error.value)


def test_refuses_a_memsweep_file_without_a_table(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [{}])
    with h5py.File(path, "a") as file:
        del file["samples"]
    with pytest.raises(MemsweepFileError, match=r"r\.h5: a memsweep file without the table\(s\) /samples"):
        load(path)


def test_one_bad_file_among_good_ones_is_named(tmp_path):
    good, bad = str(tmp_path / "good.h5"), str(tmp_path / "bad.h5")
    write_results_file(good, [{}])
    write_results_file(bad, [{}], attrs={"schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(MemsweepFileError, match=f"bad.h5: schema version {SCHEMA_VERSION + 1}"):
        load(good, bad)


def test_package_exports():
    assert memsweep_analysis.load is load
    assert memsweep_analysis.MemsweepFileError is MemsweepFileError
    assert issubclass(memsweep_analysis.DependencyError, ImportError)
    assert memsweep_analysis.Results is load_module.Results


def test_config_key_keeps_trainer_and_params_a_definition_does_not_name():
    base = "dataset=mnist;model=mlp;optimizer=sgd;learning_rate=0.1;epochs=1;batch_size=8;hidden=4"
    definition = base + ";seed=1;repeat=2"
    key = load_module.config_key
    assert key({"definition": definition}) == base
    assert key({"definition": definition, "trainer": "memsweep", "params": "{}"}) == base
    assert key({"definition": definition, "trainer": "", "params": ""}) == base
    assert key({"definition": definition, "trainer": "pytorch", "params": '{"b": 2, "a": "x"}'}) == \
        base + ';trainer=pytorch;params={"a":"x","b":2}'
    # a definition that names them already is left as it is
    named = definition + ";trainer=pytorch"
    assert key({"definition": named, "trainer": "pytorch", "params": "{}"}) == base + ";trainer=pytorch"


# 255 ASCII bytes, then "é" across byte 256, more, a 4-byte character across byte 512.
LONG_MESSAGE = "a" * 255 + "é" + "b" * 254 + "😀 and the end of a long traceback"


def test_the_message_column_is_the_whole_message_from_schema_5s_messages_table(tmp_path):
    path = str(tmp_path / "v5.h5")
    write_results_file(path, [dict(status="failed"), dict(seed=2), dict(seed=3, status="diverged", message="nan")],
                       messages={0: LONG_MESSAGE})
    with h5py.File(path, "r") as raw:
        assert raw["trials"]["message"][0].decode("utf-8") == "a" * 255  # the column: the first bytes only
        assert len(raw["messages"]) == 4  # three pieces, one
    trials = load(path).trials
    assert trials["message"].tolist() == [LONG_MESSAGE, "", "nan"]


def test_a_schema_4_files_message_is_its_column(tmp_path):
    path = str(tmp_path / "v4.h5")
    write_results_file(path, [dict(status="failed", message="short and cut")], schema_version=4)
    with h5py.File(path, "r") as raw:
        assert "messages" not in raw
    assert load(path).trials["message"].tolist() == ["short and cut"]


def test_a_schema_5_file_without_messages_is_refused_by_name(tmp_path):
    path = str(tmp_path / "v5.h5")
    write_results_file(path, [dict()], schema_version=5)
    with h5py.File(path, "a") as raw:
        del raw["messages"]
    with pytest.raises(MemsweepFileError, match=r"v5\.h5: a schema 5 memsweep file without the table /messages"):
        load(path)


# --- schema 6: searches ---------------------------------------------------------------------------------------

def test_searches_read_as_written(tmp_path):
    path = str(tmp_path / "s.h5")
    write_results_file(path, [dict(batch_size=64, search=1, probe=0, axis_value=64, search_limit=256 * MIB,
                                   full_run=0, reported_oom=1, status="over_budget")],
                       searches=[dict(search=0, configuration=0, limit_index=0, hidden=[40, 20], channels=[],
                                      axis="batch_size", limit=128 * MIB, status="found", fits=48,
                                      fits_verified=1, does_not_fit=50, fit_a_mib=60.5, fit_b_mib=1.25, trials=7,
                                      seconds=12.5, message="48 fits"),
                                 dict(search=1, configuration=0, limit_index=1, hidden=[40, 20],
                                      params={"width": 3}, trainer="pytorch", axis="params.width",
                                      limit=256 * MIB, status="below_range", message="even 1 does not fit")],
                       attrs={"sweep_name": "searched"})
    results = load(path)
    searches = results.searches
    assert searches["search"].tolist() == [0, 1]
    assert searches["file"].tolist() == [path, path] and searches["sweep"].tolist() == ["searched"] * 2
    assert searches["axis"].tolist() == ["batch_size", "params.width"]  # decoded text, NUL padding dropped
    assert searches["status"].tolist() == ["found", "below_range"]
    assert searches["hidden"].tolist() == [[40, 20], [40, 20]]  # the depth's widths, padding dropped
    assert searches["channels"].tolist() == [[], []]
    assert searches["trainer"].tolist() == ["memsweep", "pytorch"]
    assert searches["params"].tolist() == ["{}", '{"width":3}']
    assert searches["limit"].tolist() == [128 * MIB, 256 * MIB]
    assert searches["fits"].tolist() == [48, -1] and searches["does_not_fit"].tolist() == [50, -1]
    assert searches["fits_verified"].tolist() == [1, 0]
    assert searches["fit_b_mib"].tolist() == [1.25, -1.0]
    assert searches["message"].tolist() == ["48 fits", "even 1 does not fit"]
    assert len(searches["configuration_id"].iloc[0]) == 12
    assert results.files["searches_rows"].tolist() == [2]
    trial = results.trials.iloc[0]
    assert (trial["search"], trial["probe"], trial["axis_value"], trial["full_run"], trial["reported_oom"]) == \
        (1, 0, 64, 0, 1)
    assert trial["search_limit"] == 256 * MIB


def test_a_trial_outside_searches_reads_the_defaults(tmp_path):
    path = str(tmp_path / "s.h5")
    write_results_file(path, [{}])
    trials = load(path).trials
    assert trials["search"].tolist() == [-1] and trials["probe"].tolist() == [-1]
    assert trials["axis_value"].tolist() == [-1] and trials["full_run"].tolist() == [-1]
    assert trials["search_limit"].isna().all()  # -1 bytes: none
    assert trials["reported_oom"].tolist() == [0]


@pytest.mark.parametrize("version", [1, 3, 4, 5])
def test_files_before_schema_6_have_no_searches(tmp_path, version):
    old, new = str(tmp_path / f"v{version}.h5"), str(tmp_path / "v6.h5")
    write_results_file(old, [dict(batch_size=8)], schema_version=version)
    write_results_file(new, [dict(batch_size=16, search=0, probe=2, axis_value=16, search_limit=64 * MIB,
                                  full_run=1)],
                       searches=[dict(search=0, fits=16)])
    with h5py.File(old, "r") as raw:
        assert "searches" not in raw
    alone = load(old)
    assert alone.searches.empty
    for column in ("file", "search", "configuration", "axis", "limit", "fits", "status", "hidden"):
        assert column in alone.searches.columns
    assert alone.files["searches_rows"].tolist() == [0]
    both = load(old, new)
    assert both.searches["file"].tolist() == [new] and both.searches["fits"].tolist() == [16]
    trials = both.trials
    assert trials["search"].tolist() == [-1, 0] and trials["search"].dtype.kind == "i"
    assert trials["probe"].tolist() == [-1, 2] and trials["axis_value"].tolist() == [-1, 16]
    assert trials["full_run"].tolist() == [-1, 1] and trials["reported_oom"].tolist() == [0, 0]
    assert trials["search_limit"].isna().tolist() == [True, False]


def test_a_schema_6_file_without_searches_is_read(tmp_path):
    # memsweep may create /searches only for a sweep with [search]: its absence is no damage
    path = str(tmp_path / "v6.h5")
    write_results_file(path, [{}])
    with h5py.File(path, "a") as raw:
        del raw["searches"]
    results = load(path)
    assert results.searches.empty and len(results.trials) == 1


def test_search_rows_never_written_are_left_out(tmp_path):
    path = str(tmp_path / "s.h5")
    write_results_file(path, [{}], searches=[dict(search=0, status="found"), dict(search=0, status="",
                                                                                  configuration_id="")])
    assert load(path).searches["status"].tolist() == ["found"]


def test_a_params_key_named_like_a_search_column_gets_param_(tmp_path):
    path = str(tmp_path / "s.h5")
    write_results_file(path, [dict(params={"probe": 5})], schema_version=5)
    trials = load(path).trials
    assert trials["param_probe"].tolist() == [5] and trials["probe"].tolist() == [-1]


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_final_statuses_are_the_ones_memsweep_calls_final():
    # memsweep's own definition, is_final in src/results/rows.cpp: the statuses summary and resume take as a result
    with open(os.path.join(REPO, "src", "results", "rows.cpp"), encoding="utf-8") as source:
        body = re.search(r"bool is_final\(TrialStatus status\) \{(.*?)\n\}", source.read(), re.S)
    assert body, "is_final is no longer in src/results/rows.cpp: point this test at it"
    final = set(re.findall(r"TrialStatus::(\w+)", body.group(1)))
    with open(os.path.join(REPO, "include", "memsweep", "results.hpp"), encoding="utf-8") as header:
        names = re.search(r'kStatusNames = "([^"]*)"', header.read())
    assert names, "kStatusNames is no longer in include/memsweep/results.hpp: point this test at it"
    known = set(names.group(1).split(", "))
    assert final and final < known
    assert set(load_module.FINAL_STATUSES) == final


def test_the_row_that_stands_for_a_trial_is_its_last_final_else_its_last(tmp_path):
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(batch_size=1, status="killed"), dict(batch_size=1, attempt=1, status="ok"),
                              dict(batch_size=1, attempt=2, status="interrupted"),
                              dict(batch_size=2, status="interrupted"), dict(batch_size=2, attempt=1, status="killed")])
    trials = load(path).trials
    assert load_module.standing_rows(trials).tolist() == [False, True, False, False, True]


def test_an_older_file_has_no_parameter_counts_and_its_final_statuses_are_memsweeps(tmp_path):
    # before schema 10 the file counted no parameters: NaN, not worked out again here
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(status="ok"), dict(batch_size=2, status="killed")], schema_version=9)
    trials = load(path).trials
    assert trials["parameters"].isna().all()
    assert trials["final"].tolist() == [True, False]


def test_final_statuses_are_the_files_own(tmp_path):
    # a schema 10 file says which statuses are final: the analysis takes them from it, per file
    said, default = str(tmp_path / "said.h5"), str(tmp_path / "default.h5")
    rows = [dict(status="ok"), dict(batch_size=2, status="timeout"), dict(batch_size=3, status="killed")]
    write_results_file(said, rows, attrs={"final_statuses": ["ok", "killed"]})
    write_results_file(default, rows)
    results = load(said, default)
    assert results.files["final_statuses"].tolist() == [("ok", "killed"), load_module.FINAL_STATUSES]
    assert results.trials["final"].tolist() == [True, False, True, True, True, False]
    assert load_module.standing_rows(results.trials).tolist() == [True] * 6


def test_from_schema_12_the_file_says_which_minus_ones_are_not_measured(tmp_path):
    # missing:<column> marks a figure whose -1 is "not measured" (NaN here); a -1 without it is a value ("none")
    path = str(tmp_path / "r.h5")
    write_results_file(path, [dict(rss_peak=-1, parameters=-1, search=-1, train_examples=-1)])
    with h5py.File(path, "r") as file:
        attrs = file["trials"].attrs
        assert attrs["since:trial_id"] == 1 and attrs["since:pid"] == 3 and attrs["since:train_examples"] == 12
        assert "missing:rss_peak" in attrs and "missing:search" not in attrs
    trials = load(path).trials
    assert trials[["rss_peak", "parameters", "train_examples"]].isna().all(axis=None)
    assert trials["search"].tolist() == [-1] and trials["search"].dtype.kind == "i"


def test_a_column_the_analysis_does_not_know_reads_by_the_files_attributes(tmp_path):
    # a column added after this package was written: its missing: attribute is all the analysis needs
    path = str(tmp_path / "r.h5")
    write_results_file(path, [{}])
    with h5py.File(path, "r+") as file:
        old = file["trials"][()]
        dtype = np.dtype([(name, old.dtype[name]) for name in old.dtype.names] + [("future_peak", "<i8"),
                                                                                  ("future_count", "<i4")])
        rows = np.zeros(len(old), dtype=dtype)
        for name in old.dtype.names:
            rows[name] = old[name]
        rows["future_peak"], rows["future_count"] = -1, -1
        attrs = dict(file["trials"].attrs)
        del file["trials"]
        table = file.create_dataset("trials", data=rows, maxshape=(None,), chunks=(1,))
        for name, value in attrs.items():
            table.attrs[name] = value
        table.attrs["unit:future_peak"], table.attrs["since:future_peak"] = "bytes", 13
        table.attrs.create("missing:future_peak", -1, dtype="<i8")
        table.attrs["unit:future_count"], table.attrs["since:future_count"] = "1", 13
    trials = load(path).trials
    assert trials["future_peak"].isna().all() and trials["future_count"].tolist() == [-1]
