"""Read memsweep results files (docs/results-file.md, schemas 1 to 11) into pandas DataFrames.

`load(*paths)` checks every file at once (an HDF5 file, `format` = "memsweep",
`schema_version` 1 to 11, the four tables present, and /messages from schema 5) and reads only its root
attributes; each table is read from every file the first time its property
is used, then kept. `load(big).trials` never touches /samples, and
`samples_for(ids)` reads the samples of a few trials without converting the
rest.

Every table gets `file` (the path as given) and `sweep` (the sweep's name).
Fixed-length text is decoded to str. A figure the file records as -1 ("could
not be measured") is NaN in the columns of unit bytes or events and in
`final_train_loss` and `test_accuracy`, so means skip it; bytes stay bytes
(presentation converts to MiB). /trials gains the columns of `trial_columns`,
among them one per key of the trials' free parameters (`params`, schema 4).
Columns a file's schema version does not have read as their "not measured"
value (TRIAL_COLUMNS_OF_SCHEMA_3, _4 and _6), so files of every version concatenate.
/trials' `message` is the whole message: from /messages (schema 5), where
/trials' own column holds only its first 256 bytes; older files have only that.

`searches` is /searches (schema 6): one row per configuration and memory limit that a [search] searched
(SearchRow's fields, search_columns); empty, with those columns, for files without the table.
"""

import contextlib
import ctypes
import json
import math
import os
import re
import shlex
import traceback
import warnings

from ._deps import require

require("numpy", "pandas", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

FORMAT = "memsweep"
# Schema 2 added /samples' sys_total column, which nothing here needs (a schema 1 file's samples lack it);
# schema 3 added the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_3, schema 4 those of TRIAL_COLUMNS_OF_SCHEMA_4;
# schema 5 the /messages table (messages whole); schema 6 the /searches table and the /trials columns of
# TRIAL_COLUMNS_OF_SCHEMA_6; schema 7 GPU memory: the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_7 and the /samples
# ones of SAMPLE_COLUMNS_OF_SCHEMA_7 (include/memsweep/gpu_columns.hpp declares them); schema 8 the trainer's memory
# plan: the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_8; schema 9 /runs' trial_process_cost (RUN_COLUMNS_OF_SCHEMA_9);
# schema 10 what the analysis reads instead of working it out: /trials' parameters (TRIAL_COLUMNS_OF_SCHEMA_10) and
# estimate parts (ESTIMATE_PREFIX), and the root attribute final_statuses; schema 11 the /metrics table (programs'
# own figures, read by metrics.py).
SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
SCHEMA_VERSION = SCHEMA_VERSIONS[-1]
TABLES = ("trials", "samples", "epochs", "runs")
MESSAGES_TABLE = "messages"
FIRST_SCHEMA_WITH_MESSAGES = 5
# /searches (schema 6): one row per search (a configuration at one memory limit). Read where a file has it: a
# file of an older schema has none, and the analysis has then no searches to show.
SEARCHES_TABLE = "searches"
MESSAGE_COLUMNS = ("trial_id", "attempt", "run", "piece", "text")

# Statuses whose row is the trial's result, so that the analysis counts the rows memsweep summary and a resume
# count. A file of schema 10 says which they are (its root attribute final_statuses, from is_final in
# src/results/rows.cpp); these are the ones of the memsweep that wrote older files (file_final_statuses).
# `interrupted` and `killed` are not final: a resume may run such a trial again (killed: per --retry-killed), and its
# row keeps only the peak at which it stopped. A trial with no final row stands by its last one (standing_rows), as
# in memsweep summary.
FINAL_STATUSES = ("ok", "failed", "diverged", "over_budget", "timeout")
FINAL_STATUSES_ATTRIBUTE = "final_statuses"

# Published training split sizes (what memsweep loads when the files are complete).
PUBLISHED_TRAIN_EXAMPLES = {"mnist": 60000, "fashion-mnist": 60000, "cifar-10": 50000}
# /runs' limits on examples (schema 5 on) and the options that set them. A resume not given such an option
# inherits the run before's limit (src/results/run_record.cpp), so its command line does not show it: only a file
# older than the columns has nothing but the command line to read them from.
RUN_LIMITS = {"max_train_examples": "--max-train-examples", "max_test_examples": "--max-test-examples"}
# /runs' threads (schema 5 on; 0: the CPUs each rank may use), read like the limits: a resume inherits them, and one
# with --allow-changed-options --threads N trained on N (oneDNN sizes its scratchpad for the threads).
RUN_THREADS = {"threads": "--threads"}
RUN_SETTINGS = {**RUN_LIMITS, **RUN_THREADS}

# Result columns that are floats with -1 for "not measured" besides those of unit bytes/events.
MISSING_AS_MINUS_ONE = ("final_train_loss", "test_accuracy", "start_seconds")

# How each trial's process ended (schema 3), as the rows of an older file read: not measured. The same values
# a schema 3 file holds when no process was started (-1 bytes and seconds read as NaN, like every such figure).
TRIAL_COLUMNS_OF_SCHEMA_3 = {"pid": -1, "end_signal": 0, "oom_killed": 0, "end_cause": "", "isolation": "",
                             "start_seconds": math.nan, "cgroup_peak": math.nan}
# Who trained each trial and what its process tree did (schema 4), as the rows of an older file read: memsweep's
# own trainer, no free parameters, the tree's size not recorded (-1), its peaks not measured (NaN, -1 in a file).
BUILTIN_TRAINER = "memsweep"
NO_PARAMS = "{}"
# The dataset of a program trial whose sweep file names none: a group of its own (blank_program_fields).
NO_DATASET = "no dataset"
TRIAL_COLUMNS_OF_SCHEMA_4 = {"trainer": BUILTIN_TRAINER, "params": NO_PARAMS, "processes": -1,
                             "rss_peak_hwm_sum": math.nan, "process_peak_max": math.nan, "bad_event_lines": 0}
# The search a trial is a probe of (schema 6), as the rows of an older file read, and those of a trial outside
# searches: no search (-1), no probe, no axis value, no limit (NaN, -1 bytes in a file), not known whether it ran
# its full epochs (-1), no out-of-memory reported by its program (0).
TRIAL_COLUMNS_OF_SCHEMA_6 = {"search": -1, "probe": -1, "axis_value": -1, "search_limit": math.nan,
                             "full_run": -1, "reported_oom": 0}
# GPU memory (schema 7), as the rows of an older file read, and those of a trial whose GPU memory was not measured
# (no NVIDIA driver; a program that wrote no {"gpu": ...} line): NaN bytes (-1 in a file), no devices, no source.
TRIAL_COLUMNS_OF_SCHEMA_7 = {"gpu_peak": math.nan, "gpu_devices": "", "gpu_peak_source": "",
                             "torch_allocated_peak": math.nan, "torch_reserved_peak": math.nan}
SAMPLE_COLUMNS_OF_SCHEMA_7 = {"gpu_used": math.nan, "gpu_tree_used": math.nan}
GPU_TRIAL_FIGURES = ("gpu_peak", "torch_reserved_peak", "torch_allocated_peak")
# How the trainer held each step's buffers (schema 8), as the rows of an older file read: every trial then kept
# them for its whole life, and recompute_every 0 (only `recompute` has segments; 0 is its default length).
KEEP_PLAN = "keep"
TRIAL_COLUMNS_OF_SCHEMA_8 = {"memory_plan": KEEP_PLAN, "recompute_every": 0}
# What the run's predictions added for a fresh trial process (schema 9); an older file's runs did not add it.
RUN_COLUMNS_OF_SCHEMA_9 = {"trial_process_cost": ""}
# The model's weights and biases as memsweep counted them (schema 10; -1 in a file where it could not, NaN here).
# An older file does not say: NaN, not worked out again here.
TRIAL_COLUMNS_OF_SCHEMA_10 = {"parameters": math.nan}
# /trials' columns of the estimate's parts (schema 10): `estimate_<part>`, bytes (-1 in a file: not a part of the
# trial's estimate), each labelled with the part's name by the attribute `label:<column>` (files' `estimate_parts`).
ESTIMATE_PREFIX = "estimate_"
LABEL_PREFIX = "label:"
ADDED_COLUMNS = {"trials": {**TRIAL_COLUMNS_OF_SCHEMA_3, **TRIAL_COLUMNS_OF_SCHEMA_4, **TRIAL_COLUMNS_OF_SCHEMA_6,
                            **TRIAL_COLUMNS_OF_SCHEMA_7, **TRIAL_COLUMNS_OF_SCHEMA_8, **TRIAL_COLUMNS_OF_SCHEMA_10},
                 "samples": SAMPLE_COLUMNS_OF_SCHEMA_7, "searches": TRIAL_COLUMNS_OF_SCHEMA_8,
                 "runs": RUN_COLUMNS_OF_SCHEMA_9}

# /trials' columns as the loader gives them (the file's, of schema 4, then the derived ones), before the
# params columns: a params key named like one of them gets a column `param_<key>` (param_column_names).
FILE_TRIAL_COLUMNS = (
    "trial_id", "attempt", "repeat", "run", "dataset", "model", "optimizer", "learning_rate", "epochs",
    "batch_size", "depth", "hidden", "channels", "seed", "rank", "host", "status", "message", "start_time",
    "end_time", "wall_seconds", "rss_baseline", "rss_peak", "rss_mean", "rss_footprint", "sys_used_mean",
    "predicted_bytes", "epochs_done", "final_train_loss", "test_accuracy", "samples", "dropped_samples",
    "definition", "pid", "end_signal", "oom_killed", "end_cause", "isolation", "start_seconds", "cgroup_peak",
    "trainer", "params", "processes", "rss_peak_hwm_sum", "process_peak_max", "bad_event_lines",
    "search", "probe", "axis_value", "search_limit", "full_run", "reported_oom",
    "gpu_peak", "gpu_devices", "gpu_peak_source", "torch_allocated_peak", "torch_reserved_peak",
    "memory_plan", "recompute_every", "parameters")
DERIVED_TRIAL_COLUMNS = ("total_units", "max_width", "final", "config", "run_command_line",
                         *(f"run_{name}" for name in RUN_SETTINGS),
                         "channels_text", "shape", "trial_number")
# The fields a trial's configuration is made of that are names, not numbers: categorical columns, their
# categories in plan order (categorical_columns). The free parameters' text columns are too.
CATEGORICAL_COLUMNS = ("dataset", "model", "optimizer", "trainer", "channels_text", "shape", "memory_plan")
# A /trials column added by the runner after schema 5 (the trial's 0-based position in its sweep's plan; -1 or
# absent in older files): the trials' `trial_number` is it + 1 where known.
PLAN_INDEX = "plan_index"
KNOWN_TRIAL_COLUMNS = ("file", "sweep") + FILE_TRIAL_COLUMNS + DERIVED_TRIAL_COLUMNS
PARAM_PREFIX = "param_"


# /searches' columns (SearchRow, include/memsweep/results.hpp), as the loader gives them: text decoded, hidden
# and channels as lists (padding dropped), `limit` in bytes; fits, does_not_fit and predicted are axis values
# with -1 for none, fit_a_mib and fit_b_mib -1 for no fit, as the file holds them. Then `file` and `sweep`.
SEARCH_COLUMNS = (
    "search", "configuration", "limit_index", "run", "configuration_id", "trainer", "dataset", "model", "optimizer",
    "learning_rate", "epochs", "batch_size", "depth", "hidden", "channels", "repeat", "params", "definition", "axis",
    "range_low", "range_high", "limit", "enforced_by", "strategy", "status", "fits", "fits_verified", "does_not_fit",
    "fit_a_mib", "fit_b_mib", "predicted", "trials", "seconds", "message", "memory_plan", "recompute_every")
# SearchRow::status names (search_status).
SEARCH_STATUSES = ("found", "below_range", "above_range", "stopped", "failed")


class MemsweepFileError(ValueError):
    """A file that is not a readable memsweep results file (schema 1 to 9); the message names it."""


# What h5py raises when a file's bytes are not what HDF5 expects (a flipped byte, a cut file): OSError (data it
# cannot read or decompress), RuntimeError (a metadata checksum that fails on iterating or testing attributes),
# KeyError (an object whose header fails its checksum reads as missing), ValueError (a damaged type or shape).
H5PY_READ_ERRORS = (OSError, RuntimeError, KeyError, ValueError)
_H5PY_FOLDER = os.path.dirname(os.path.abspath(h5py.__file__))


def raised_by_h5py(error):
    """Whether `error` was raised inside h5py (its innermost frame is h5py's Python or Cython code). The same
    types raised by this package's own code are bugs, and keep their traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return False
    where = frames[-1].filename
    if os.path.isabs(where):
        return os.path.commonpath([_H5PY_FOLDER, os.path.abspath(where)]) == _H5PY_FOLDER
    return where.split(os.sep)[0] == "h5py"  # Cython's frames name their .pyx relative to the package


def _h5py_message(error):
    text = error.args[0] if isinstance(error, KeyError) and error.args else error
    return " ".join(str(text).split())


@contextlib.contextmanager
def _reading(path, what):
    """h5py's errors while reading `what` of `path` as a MemsweepFileError naming both (bad input, not a bug)."""
    try:
        yield
    except H5PY_READ_ERRORS as error:
        if isinstance(error, MemsweepFileError) or not raised_by_h5py(error):
            raise
        raise MemsweepFileError(f"{path}: damaged results file: cannot read {what} (HDF5: {_h5py_message(error)})") \
            from error


def load(*paths):
    """Results of one or more results files, checked now, read when asked for.

    Paths may be given as separate arguments or as one list.
    """
    if len(paths) == 1 and isinstance(paths[0], (list, tuple)):
        paths = tuple(paths[0])
    if not paths:
        raise ValueError("load() needs at least one results file")
    return Results([os.fspath(p) for p in paths])


def _open(path):
    """Open read-only, following a live SWMR writer when there is one; refuse what is not memsweep's."""
    if not os.path.exists(path):
        raise MemsweepFileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise MemsweepFileError(f"{path}: is a directory, expected a memsweep results file (HDF5)")
    try:
        hdf5 = h5py.is_hdf5(path)
    except OSError as error:
        raise MemsweepFileError(f"{path}: cannot read it ({error.strerror or error})") from error
    if not hdf5:
        size = os.path.getsize(path)
        what = "an empty file" if size == 0 else "no HDF5 signature"
        raise MemsweepFileError(f"{path}: not an HDF5 file ({what}), expected a memsweep results file")
    try:
        return h5py.File(path, "r")
    except OSError as first:
        # A file a SWMR writer has open (or a killed one left) carries the
        # "open for write" flag; only a SWMR reader may open it.
        try:
            return h5py.File(swmr_open(path))
        except OSError:
            raise MemsweepFileError(
                f"{path}: cannot open it ({' '.join(str(first).split())}); if a memsweep run is writing it "
                f"without SWMR, wait for the run to end; if its writer was killed, `h5clear -s {path}` clears "
                f"the flag") from first


# HDF5 1.10 retries a metadata block whose checksum fails 100 times under SWMR (a writer may be rewriting it),
# doubling its sleep from 1 ns with no cap: a damaged file would hold the reader for ever (h5py's own SWMR
# open did, on one flipped byte). memsweep's reader makes 25, 34 ms of waiting at most (docs/results-file.md).
SWMR_READ_ATTEMPTS = 25


def swmr_open(path, attempts=SWMR_READ_ATTEMPTS):
    """A SWMR read-only file id (for h5py.File) that gives up on a failing checksum after `attempts` reads.

    h5py does not expose H5Pset_metadata_read_attempts: it is called in the HDF5 library h5py loaded (found in
    /proc/self/maps); where it cannot be, HDF5's default stands."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    fapl.set_fclose_degree(h5py.h5f.CLOSE_STRONG)
    library = _loaded_hdf5()
    if library is not None:
        library.H5Pset_metadata_read_attempts.argtypes = [ctypes.c_int64, ctypes.c_uint]
        library.H5Pset_metadata_read_attempts(fapl.id, attempts)
    return h5py.h5f.open(os.fsencode(path), h5py.h5f.ACC_RDONLY | h5py.h5f.ACC_SWMR_READ, fapl=fapl)


def _loaded_hdf5():
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split()[-1] for line in maps if "/libhdf5" in line}
    except OSError:
        return None
    for path in sorted(paths):
        if os.path.basename(path).startswith(("libhdf5.so", "libhdf5_serial.so", "libhdf5_openmpi.so",
                                               "libhdf5_mpich.so")):
            return ctypes.CDLL(path)
    return None


def _text(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        return [_text(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check(path, file):
    attrs = file.attrs
    if "format" not in attrs:
        raise MemsweepFileError(f"{path}: not a memsweep results file (no format attribute; expected "
                                f"format = \"{FORMAT}\")")
    found = _text(attrs["format"])
    if found != FORMAT:
        raise MemsweepFileError(f"{path}: not a memsweep results file (format attribute is {found!r}, "
                                f"expected {FORMAT!r})")
    if "schema_version" not in attrs:
        raise MemsweepFileError(f"{path}: a memsweep file without a schema_version attribute (this package reads "
                                f"schema {SCHEMA_VERSION})")
    version = _text(attrs["schema_version"])
    if version not in SCHEMA_VERSIONS:
        newer = isinstance(version, int) and version > SCHEMA_VERSIONS[-1]
        said = "written by a newer memsweep?" if newer else "unknown:"
        raise MemsweepFileError(f"{path}: schema version {version}, {said} this package reads schemas "
                                f"{', '.join(map(str, SCHEMA_VERSIONS))}")
    missing = [t for t in TABLES if t not in file]
    if missing:
        raise MemsweepFileError(f"{path}: a memsweep file without the table(s) {', '.join('/' + t for t in missing)}"
                                f" (schema {SCHEMA_VERSION} has /trials, /samples, /epochs and /runs)")
    if version >= FIRST_SCHEMA_WITH_MESSAGES and MESSAGES_TABLE not in file:
        raise MemsweepFileError(f"{path}: a schema {version} memsweep file without the table /{MESSAGES_TABLE} "
                                f"(its trials' whole messages)")


def _file_row(path, file):
    attrs = {name: _text(value) for name, value in file.attrs.items()}
    row = {"file": path, "path": path}
    row.update(attrs)
    row.setdefault("part", "")  # files written before parts existed lack it
    # counter_sources and counter_encodings: absent from files written before counters had two sources.
    for name in ("hosts", "counter_columns", "events_requested", "event_notes", "counter_sources",
                 "counter_encodings"):
        row[name] = list(row.get(name) or [])
    row[FINAL_STATUSES_ATTRIBUTE] = file_final_statuses(row.get(FINAL_STATUSES_ATTRIBUTE))
    row["estimate_parts"] = estimate_part_labels(file["trials"])
    for table in TABLES:
        row[f"{table}_rows"] = int(file[table].shape[0])
    row[f"{SEARCHES_TABLE}_rows"] = int(file[SEARCHES_TABLE].shape[0]) if SEARCHES_TABLE in file else 0
    return row


def file_final_statuses(attribute):
    """The statuses a file calls final: its final_statuses attribute (schema 10), else FINAL_STATUSES."""
    return tuple(attribute) if attribute is not None and len(attribute) else FINAL_STATUSES


def estimate_part_labels(trials_dataset):
    """{column: the estimate part's name} of /trials' estimate columns, in the table's column order (schema 10; {}
    for an older file)."""
    attrs = trials_dataset.attrs
    return {name: _text(attrs[LABEL_PREFIX + name]) for name in trials_dataset.dtype.names
            if name.startswith(ESTIMATE_PREFIX) and LABEL_PREFIX + name in attrs}


class Results:
    """The contents of some results files. Tables are read on first use and cached.

    `files`: one row per file (its root attributes, `path`, row counts).
    `trials`, `samples`, `epochs`, `runs`: the tables of every file, concatenated.
    `searches`: /searches of the files that have it (schema 6), concatenated; empty when none has.
    """

    def __init__(self, paths):
        self.paths = list(paths)
        rows = []
        for path in self.paths:
            with _reading(path, "its root attributes and tables"), _open(path) as file:
                _check(path, file)
                rows.append(_file_row(path, file))
        self._files = pd.DataFrame(rows)
        self._sweeps = dict(zip(self._files["path"], self._files.get("sweep_name", "")))
        self._cache = {}

    def __repr__(self):
        return f"Results({', '.join(self.paths)})"

    @property
    def files(self):
        return self._files

    @property
    def trials(self):
        if "trials" not in self._cache:
            trials = self._read("trials")
            finals = dict(zip(self._files["path"], self._files[FINAL_STATUSES_ATTRIBUTE]))
            self._cache["trials"] = trial_columns(trials, self._runs_for_trials(), finals)
        return self._cache["trials"]

    @property
    def samples(self):
        if "samples" not in self._cache:
            self._cache["samples"] = self._read("samples")
        return self._cache["samples"]

    @property
    def epochs(self):
        if "epochs" not in self._cache:
            self._cache["epochs"] = self._read("epochs")
        return self._cache["epochs"]

    @property
    def runs(self):
        if "runs" not in self._cache:
            self._cache["runs"] = self._read("runs")
        return self._cache["runs"]

    @property
    def searches(self):
        if "searches" not in self._cache:
            frames = []
            for path in self.paths:
                with _reading(path, f"table /{SEARCHES_TABLE}"), _open(path) as file:
                    if SEARCHES_TABLE in file:
                        frames.append(_table_frame(path, self._sweeps[path], file[SEARCHES_TABLE]))
            frame = _concat(frames) if frames else pd.DataFrame(columns=["file", "sweep", *SEARCH_COLUMNS])
            self._cache["searches"] = search_columns(frame)
        return self._cache["searches"]

    def _runs_for_trials(self):
        # /runs is a handful of rows; the trials need each run's command line and limits (run_limits).
        return self.runs[[c for c in ("file", "run", "command_line", *RUN_SETTINGS) if c in self.runs.columns]]

    def _read(self, table, columns=None):
        frames = []
        for path in self.paths:
            with _reading(path, f"table /{table}"), _open(path) as file:
                frame = _table_frame(path, self._sweeps[path], file[table], columns)
                if table == "trials" and MESSAGES_TABLE in file and "message" in frame:
                    frame["message"] = whole_messages(frame, file[MESSAGES_TABLE])
                frames.append(frame)
        return _concat(frames)

    def samples_for(self, trial_ids, attempt=None, columns=None, file=None):
        """The samples of some trials only, read block by block from /samples of every file (or `file`).

        `attempt`: None for every attempt, or one attempt number. `columns`:
        the /samples columns wanted (trial_id and attempt are always there).
        Rows keep the file's order (time order within an attempt).
        """
        if isinstance(trial_ids, str):
            trial_ids = [trial_ids]
        wanted = [t.encode("utf-8") for t in trial_ids]
        frames = []
        for path in self.paths:
            if file is not None and path != os.fspath(file):
                continue
            with _reading(path, "table /samples"), _open(path) as h5:
                dataset = h5["samples"]
                frames.append(_table_frame(path, self._sweeps[path], dataset, columns, select=(wanted, attempt)))
        if not frames:
            raise ValueError(f"{file}: not one of the loaded files ({', '.join(self.paths)})")
        return _concat(frames)


# /samples may hold millions of rows: it is read a block at a time and only
# the rows of the wanted trials are kept, so memory stays at one block plus
# the result. Each block is decompressed once (the chunk cache is too small
# to keep a block for a second read).
BLOCK_ROWS = 1 << 16


def _selected_rows(dataset, names, wanted, attempt):
    """The rows whose trial id is in `wanted` (and attempt is `attempt`, unless None), as a structured array."""
    view = dataset.fields(names) if names is not None else dataset
    wanted = np.asarray(sorted(wanted), dtype=dataset.dtype["trial_id"])
    pieces = [np.zeros(0, dtype=_dtype_of(dataset, names))]
    for start in range(0, dataset.shape[0], BLOCK_ROWS):
        block = view[start:min(start + BLOCK_ROWS, dataset.shape[0])]
        mask = np.isin(block["trial_id"], wanted)
        if attempt is not None:
            mask &= block["attempt"] == attempt
        if mask.any():
            pieces.append(block[mask])
    return np.concatenate(pieces)


def _read_all(dataset, names):
    if dataset.shape[0] == 0:
        return np.zeros(0, dtype=_dtype_of(dataset, names))
    return (dataset.fields(names) if names is not None else dataset)[()]


def _dtype_of(dataset, names):
    if names is None:
        return dataset.dtype
    return np.dtype([(n, dataset.dtype[n]) for n in names])


def _table_frame(path, sweep, dataset, columns=None, select=None):
    units = {name[len("unit:"):]: _text(value) for name, value in dataset.attrs.items() if name.startswith("unit:")}
    table = dataset.name.lstrip("/")
    added = {name: value for name, value in ADDED_COLUMNS.get(table, {}).items() if name not in dataset.dtype.names}
    names = None
    if columns is not None:
        added = {name: value for name, value in added.items() if name in columns}
        unknown = [c for c in columns if c not in dataset.dtype.names and c not in added]
        if unknown:
            raise KeyError(f"{path}: /{table} has no column(s) {', '.join(unknown)}")
        # without the id and attempt a row could not be told apart from another trial's
        keep = {"trial_id", "attempt"} | set(columns)
        names = [n for n in dataset.dtype.names if n in keep]
    array = _read_all(dataset, names) if select is None else _selected_rows(dataset, names, *select)
    if "trial_id" in array.dtype.names:
        # rows a killed non-SWMR writer left unwritten read as zeros, with an empty id (docs/results-file.md)
        written = array["trial_id"] != b""
        if not written.all():
            array = array[written]
    frame = _frame(array, units)
    for name, value in added.items():  # a column of a later schema than the file's
        frame[name] = value
    frame.insert(0, "file", path)
    frame.insert(1, "sweep", sweep)
    return frame


def _frame(array, units):
    data = {}
    for name in array.dtype.names:
        column = array[name]
        kind = array.dtype[name]
        if kind.kind == "S":
            data[name] = _decoded(column)
        elif kind.subdtype is not None:  # hidden, channels: zero-padded int arrays
            data[name] = list(column)
        elif units.get(name) in ("bytes", "events") or name in MISSING_AS_MINUS_ONE:
            values = column.astype(np.float64)
            values[column == -1] = np.nan
            data[name] = values
        else:
            data[name] = column
    return pd.DataFrame(data, columns=list(array.dtype.names))


def _decoded(column):
    # A samples table repeats one id for runs of up to 256 rows: decode one
    # value per run (and each distinct value once), not one per row.
    if len(column) == 0:
        return np.array([], dtype=object)
    starts = np.flatnonzero(np.concatenate(([True], column[1:] != column[:-1])))
    known = {}
    texts = []
    for value in column[starts].tolist():
        if value not in known:
            known[value] = value.decode("utf-8", errors="replace")
        texts.append(known[value])
    return np.repeat(np.array(texts, dtype=object), np.diff(np.append(starts, len(column))))


def whole_messages(trials, messages):
    """Each trial row's whole message, from /messages (`messages`, an h5py dataset of schema 5).

    /messages holds each message as pieces (trial_id, attempt, run, piece,
    text); the whole message is its pieces' text joined in piece order. A row
    without pieces keeps its own `message` (empty, or a file's own cut copy).
    """
    missing = [name for name in MESSAGE_COLUMNS if name not in (messages.dtype.names or ())]
    if missing:
        raise MemsweepFileError(f"{messages.file.filename}: damaged memsweep results file: /{MESSAGES_TABLE} has no "
                                f"column(s) {', '.join(missing)}")
    rows = messages[()]
    pieces = {}
    for trial_id, attempt, run, piece, text in zip(rows["trial_id"], rows["attempt"], rows["run"], rows["piece"],
                                                   rows["text"]):
        if trial_id == b"":  # never written (a killed non-SWMR writer), like the other tables' such rows
            continue
        pieces.setdefault((_text(trial_id), int(attempt), int(run)), []).append((int(piece), bytes(text)))
    whole = {key: b"".join(text for _, text in sorted(parts, key=lambda p: p[0])).decode("utf-8", errors="replace")
             for key, parts in pieces.items()}
    return [whole.get((trial_id, int(attempt), int(run)), message)
            for trial_id, attempt, run, message in zip(trials["trial_id"], trials["attempt"], trials["run"],
                                                        trials["message"])]


def _concat(frames):
    if len(frames) == 1:
        return frames[0]
    # pandas warns about (and will change) the dtypes that empty frames give a concatenation
    non_empty = [f for f in frames if len(f)] or frames[:1]
    columns = list(dict.fromkeys(c for f in frames for c in f.columns))
    return pd.concat(non_empty, ignore_index=True).reindex(columns=columns)


# --- /trials' derived columns -------------------------------------------------

def parse_definition(text):
    """TrialSpec::canonical_text() ("dataset=mnist;model=mlp;...") as a dict of str."""
    fields = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            fields[key] = value
    return fields


def synthetic_spec(definition):
    """A synthetic trial's shape, classes, train_size, test_size from its definition; None if not synthetic."""
    value = parse_definition(definition).get("synthetic")
    if not value:
        return None
    parts = value.split("/")
    try:
        shape = tuple(int(v) for v in parts[0].split("x"))
        return {"shape": shape, "classes": int(parts[1]), "train_size": int(parts[2]), "test_size": int(parts[3])}
    except (IndexError, ValueError):
        return None


_WITHOUT_SEED_AND_REPEAT = re.compile(r";(seed|repeat)=[^;]*")


def config_key(row):
    """The trial's hyperparameters without its repeat (and seed): equal for the repeats of one trial.

    A program's trial (trainer other than memsweep) and a trial with free parameters keep them in the key,
    `;trainer=<name>` and `;params=<JSON>` unless its definition already names them, so that the same
    hyperparameters trained by two trainers, or with two sets of parameters, are two configurations. The
    key of a built-in trial without parameters (every trial of a file before schema 4) is as it always was.
    """
    definition = row.get("definition") or ""
    if definition:
        key = _WITHOUT_SEED_AND_REPEAT.sub("", definition)
    else:
        key = (f"dataset={row['dataset']};model={row['model']};optimizer={row['optimizer']};"
               f"learning_rate={row['learning_rate']!r};epochs={row['epochs']};batch_size={row['batch_size']};"
               f"hidden={'-'.join(map(str, row['hidden']))};channels={'-'.join(map(str, row['channels']))}")
    named = parse_definition(key)
    trainer = trainer_name(row.get("trainer"))
    if trainer != BUILTIN_TRAINER and "trainer" not in named:
        key += f";trainer={trainer}"
    params = canonical_params(row.get("params"))
    if params != NO_PARAMS and "params" not in named:
        key += f";params={params}"
    return key


def trainer_name(value):
    """A `trainer` cell as a name: empty (a row written before its trainer was set) or missing is memsweep's."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return BUILTIN_TRAINER
    return str(value)


def parse_params(text):
    """A `params` cell as a dict; {} for an empty cell. ValueError when it is not a JSON object (a text longer
    than the column's 512 bytes is cut, and then no longer JSON)."""
    if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object: {text!r}")
    return value


def canonical_params(text):
    """A `params` cell as compact JSON with sorted keys ("{}" when none): equal parameters give equal text.
    A cell that is not a JSON object stays as it is."""
    try:
        return json.dumps(parse_params(text), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return str(text)


def param_column_names(keys, existing):
    """{params key: column name}: the key itself when no column in `existing` (and no other key) has that name,
    else `param_<key>` (more `param_` in front while that is taken too). Keys that name a free column keep it
    before any clashing key is renamed, so the result does not depend on the keys' order."""
    taken = set(existing)
    names = {key: key for key in keys if key and key not in taken}
    taken |= set(names)
    for key in sorted(keys):
        if key in names:
            continue
        name = PARAM_PREFIX + key
        while name in taken:
            name = PARAM_PREFIX + name
        names[key] = name
        taken.add(name)
    return {key: names[key] for key in sorted(keys)}


def param_columns(trials):
    """{params key: column} of a trials frame: what `trial_columns` recorded in `trials.attrs["param_columns"]`,
    else worked out again from its `params` column against the loader's own columns; only columns present."""
    names = trials.attrs.get("param_columns")
    if names is None:
        keys = set()
        for text in set(trials.get("params", pd.Series(dtype=object)).dropna()):
            try:
                keys |= set(parse_params(text))
            except ValueError:
                pass
        names = param_column_names(keys, KNOWN_TRIAL_COLUMNS)
    return {key: name for key, name in names.items() if name in trials.columns}


_ABSENT = object()


def _param_value(value):
    """A JSON value as a cell: lists as tuples (hashable, so a column of them groups), objects as JSON text."""
    if isinstance(value, list):
        return tuple(_param_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return value


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def param_series(values, index=None):
    """One params key's column from its value per trial (`_ABSENT` where a trial lacks the key; JSON null is
    missing too). Every value a bool: bool, or pandas' nullable "boolean" when some are missing. Every value a
    number: int64 when every trial has an integer, else float64 with NaN where missing. Every value a string:
    categorical (NaN where missing). Anything else (lists, a mix of kinds): object, lists as tuples, None where
    missing."""
    present = [v for v in values if v is not _ABSENT and v is not None]
    complete = len(present) == len(values)
    if present and all(isinstance(v, bool) for v in present):
        if complete:
            return pd.Series(values, index=index, dtype=bool)
        return pd.Series(pd.array([v if isinstance(v, bool) else pd.NA for v in values], dtype="boolean"),
                         index=index)
    if present and all(_is_number(v) for v in present):
        if complete and all(isinstance(v, int) and -2**63 <= v < 2**63 for v in present):
            return pd.Series(values, index=index, dtype=np.int64)
        return pd.Series([float(v) if _is_number(v) else math.nan for v in values], index=index, dtype=float)
    if present and all(isinstance(v, str) for v in present):
        return pd.Series(pd.Categorical([v if isinstance(v, str) else math.nan for v in values]), index=index)
    return pd.Series([None if v is _ABSENT or v is None else _param_value(v) for v in values], index=index,
                     dtype=object)


def _add_param_columns(trials):
    """One column per key of the trials' `params` (docs/analysis.md); the key -> column map in attrs."""
    parsed = {}
    for text in set(trials["params"]):
        try:
            parsed[text] = parse_params(text)
        except ValueError as error:
            parsed[text] = None
            bad = trials[trials["params"] == text]
            ids = ", ".join(f"{f}: {t}" for f, t in zip(bad["file"], bad["trial_id"]))
            warnings.warn(f"params of trial(s) {ids} are not a JSON object ({error}); read as no parameters",
                          stacklevel=3)
    per_row = [parsed[text] or {} for text in trials["params"]]
    keys = sorted(set().union(*per_row)) if per_row else []
    names = param_column_names(keys, set(trials.columns) | set(KNOWN_TRIAL_COLUMNS))
    columns = {names[key]: param_series([p.get(key, _ABSENT) for p in per_row], index=trials.index)
               for key in keys}
    if columns:
        trials = pd.concat([trials, pd.DataFrame(columns, index=trials.index)], axis=1)
    trials.attrs["param_columns"] = names
    return trials


def option_value(command_line, option):
    """The value of `--option N` or `--option=N` in a command line, as int; None when absent or 0 (= all)."""
    try:
        words = shlex.split(command_line or "")
    except ValueError:
        words = (command_line or "").split()
    for index, word in enumerate(words):
        value = None
        if word == option and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith(option + "="):
            value = word.split("=", 1)[1]
        if value is not None:
            try:
                return int(value) or None
            except ValueError:
                return None
    return None


def run_limits(runs):
    """{(file, run): {"max_train_examples": N, "max_test_examples": N, "threads": N}}: the limits each run of /runs
    trained and tested with, 0 for all (as /runs writes them), and its threads, 0 for the CPUs each rank may use.
    From /runs' columns where the file has them (schema 5 on: a resume's command line lacks the limit it
    inherited), else from the run's command line."""
    limits = {}
    for row in runs.to_dict("records"):
        run = {}
        for name, option in RUN_SETTINGS.items():
            value = row.get(name)
            if value is None or pd.isna(value):
                value = option_value(row.get("command_line", ""), option) or 0
            run[name] = max(int(value), 0)
        limits[(row["file"], int(row["run"]))] = run
    return limits


def trial_columns(trials, runs=None, final_statuses=None):
    """Add the derived columns of /trials.

    hidden, channels (lists, padding dropped; hidden has `depth` widths),
    total_units, max_width, final (the status is one its file calls final:
    `final_statuses` {file: statuses}, FINAL_STATUSES for a file it does not
    name), config, run_command_line
    (the command line of the trial's row of /runs, when `runs` is given) and
    run_max_train_examples, run_max_test_examples (that run's limits on
    examples, 0 for all or without `runs`: run_limits), run_threads (its
    threads, 0 for the CPUs each rank may use or without `runs`);
    `parameters` is NaN where the file has -1 or none (schema 10's column);
    `trainer` becomes categorical (an empty cell: memsweep), `params` compact
    JSON ("{}" when none), and each params key gets a column of its own
    (param_series, param_column_names; the map in attrs["param_columns"]).
    """
    trials = trials.copy()
    for name, value in {**TRIAL_COLUMNS_OF_SCHEMA_4, **TRIAL_COLUMNS_OF_SCHEMA_6, **TRIAL_COLUMNS_OF_SCHEMA_7,
                        **TRIAL_COLUMNS_OF_SCHEMA_8, **TRIAL_COLUMNS_OF_SCHEMA_10}.items():
        if name not in trials.columns:  # a frame built by hand
            trials[name] = value
    trials["trainer"] = pd.Categorical([trainer_name(t) for t in trials["trainer"]])
    canonical = {text: canonical_params(text) for text in set(trials["params"])}
    trials["params"] = pd.Series([canonical[text] for text in trials["params"]], index=trials.index, dtype=object)
    if trials.empty:
        for name in ("total_units", "max_width", "parameters"):
            trials[name] = pd.Series(dtype=float)
        trials["final"] = pd.Series(dtype=bool)
        trials["config"] = pd.Series(dtype=object)
        trials["run_command_line"] = pd.Series(dtype=object)
        for name in RUN_LIMITS:
            trials[f"run_{name}"] = pd.Series(dtype=np.int64)
        trials.attrs["param_columns"] = {}
        for name in ("channels_text", "shape"):
            trials[name] = pd.Series(dtype=object)
        trials["trial_number"] = pd.Series(dtype=np.int64)
        return trials
    trials = blank_program_fields(trials)
    trials["hidden"] = [None if pd.isna(d) else [int(w) for w in row[:max(int(d), 0)]]
                        for row, d in zip(trials["hidden"], trials["depth"])]
    trials["channels"] = [[int(c) for c in row if c != 0] for row in trials["channels"]]
    trials["total_units"] = [math.nan if h is None else sum(h) for h in trials["hidden"]]
    trials["max_width"] = [math.nan if h is None else (max(h) if h else 0) for h in trials["hidden"]]
    parameters = pd.to_numeric(trials["parameters"], errors="coerce").astype(float)
    trials["parameters"] = parameters.where(parameters >= 0)
    finals = final_statuses or {}
    trials["final"] = [status in finals.get(path, FINAL_STATUSES) for path, status in
                       zip(trials["file"] if "file" in trials.columns else [None] * len(trials), trials["status"])]
    trials["config"] = [config_key(row) for row in trials.to_dict("records")]
    if runs is not None and len(runs):
        lines = {(f, int(r)): c for f, r, c in zip(runs["file"], runs["run"], runs["command_line"])}
        trials["run_command_line"] = [lines.get((f, int(r)), "") for f, r in zip(trials["file"], trials["run"])]
        limits = run_limits(runs)
    else:
        trials["run_command_line"] = ""
        limits = {}
    for name in RUN_SETTINGS:
        trials[f"run_{name}"] = np.array([limits.get((f, int(r)), {}).get(name, 0)
                                          for f, r in zip(trials["file"], trials["run"])], dtype=np.int64)
    trials["channels_text"] = ["-".join(map(str, c)) for c in trials["channels"]]
    trials["shape"] = [synthetic_shape_text(d) for d in trials["definition"]]
    trials["trial_number"] = trial_numbers(trials)
    return categorical_columns(_add_param_columns(trials))


def standing_rows(trials):
    """A bool Series: whether each row stands for its trial, as in memsweep summary (stands_for_trial,
    src/results/rows.cpp), per file: the trial's final row with the highest attempt, else its row with the highest
    attempt (an interrupted or killed trial that was never run to a result); of equal attempts, the later row."""
    keyed = pd.DataFrame({"file": trials["file"].astype(str).to_numpy() if "file" in trials.columns else "",
                          "trial_id": trials["trial_id"].astype(str).to_numpy(),
                          "final": (trials["final"].to_numpy(dtype=bool) if "final" in trials.columns
                                    else trials["status"].astype(str).isin(FINAL_STATUSES).to_numpy()),
                          "attempt": trials["attempt"].to_numpy(), "position": np.arange(len(trials))})
    last = keyed.sort_values(["final", "attempt", "position"], kind="stable").groupby(
        ["file", "trial_id"], sort=False).tail(1)["position"].to_numpy()
    standing = np.zeros(len(trials), dtype=bool)
    standing[last] = True
    return pd.Series(standing, index=trials.index)


def blank_program_fields(trials):
    """A program's built-in fields that its sweep file neither sets nor names are blank in the file ("" for
    dataset, model and optimizer, NaN learning rate, 0 epochs and batch size, depth -1; docs/sweep-file.md,
    Programs): here missing values (None, NaN), never memsweep's defaults. A column gets NaN only where a
    program left it blank, so a file without such trials keeps its whole-number columns. The dataset is the
    exception: a blank one reads NO_DATASET, one group like any label, since every table, fit and figure
    groups by dataset and a missing key would drop the trials from each of them."""
    trials = trials.copy()
    programs = pd.Series([trainer_name(t) != BUILTIN_TRAINER for t in trials["trainer"]], index=trials.index)
    blank = programs & (trials["dataset"].astype(object) == "")
    if blank.any():
        trials["dataset"] = trials["dataset"].astype(object).where(~blank, NO_DATASET)
    for name in ("model", "optimizer", "memory_plan"):
        blank = programs & (trials[name].astype(object) == "")
        if blank.any():
            trials[name] = trials[name].astype(object).where(~blank, None)
    for name, empty in (("epochs", 0), ("batch_size", 0), ("depth", -1)):
        blank = programs & (trials[name] == empty)
        if blank.any():
            trials[name] = trials[name].astype(float).where(~blank, math.nan)
    return trials


def search_columns(searches):
    """/searches as the loader gives it: rows never written (an empty status, as a killed non-SWMR writer leaves
    them) dropped; hidden with `depth` widths and channels without their padding (lists, as /trials'), `trainer`
    a name (empty: memsweep), `params` compact JSON ("{}" when none), and the columns of SEARCH_COLUMNS that a
    frame lacks added with their "none" value."""
    searches = searches.copy()
    if "status" in searches.columns and len(searches):
        searches = searches[searches["status"].astype(str) != ""].reset_index(drop=True)
    if len(searches):
        searches["hidden"] = [[int(w) for w in list(row)[:max(int(d), 0)]]
                              for row, d in zip(searches["hidden"], searches["depth"])]
        searches["channels"] = [[int(c) for c in row if c != 0] for row in searches["channels"]]
        searches["trainer"] = [trainer_name(t) for t in searches["trainer"]]
        searches["params"] = [canonical_params(t) for t in searches["params"]]
    for name in SEARCH_COLUMNS:
        if name not in searches.columns:
            searches[name] = pd.Series(dtype=object)
    return searches


def synthetic_shape_text(definition):
    """A synthetic trial's data shape as its definition names it ("1x28x28/10": input shape / classes); ""
    for a real dataset."""
    spec = synthetic_spec(definition or "")
    return "" if spec is None else "x".join(map(str, spec["shape"])) + f"/{spec['classes']}"


def trial_numbers(trials):
    """Each row's trial number, the one `memsweep summary` shows: plan_index + 1 where the file records it (0-based
    position in the sweep's plan); else, per file, the order in which the trials' ids first appear in the rows
    (a trial's attempts share its number)."""
    known = pd.to_numeric(trials[PLAN_INDEX], errors="coerce") if PLAN_INDEX in trials.columns else None
    numbers = []
    seen = {}
    for position, (path, trial_id) in enumerate(zip(trials.get("file", pd.Series("", index=trials.index)),
                                                    trials["trial_id"])):
        mine = seen.setdefault(path, {})
        in_load_order = mine.setdefault(trial_id, len(mine) + 1)
        index = None if known is None else known.iloc[position]
        numbers.append(int(index) + 1 if index is not None and not pd.isna(index) and index >= 0 else in_load_order)
    return pd.Series(numbers, index=trials.index, dtype=np.int64)


def categorical_columns(trials):
    """CATEGORICAL_COLUMNS and the free parameters' text columns as pandas categoricals whose categories are in
    the order they first appear in plan order (file by file, by trial_number): the order a reader set them in."""
    order = trials.assign(_file=pd.Categorical(trials.get("file", pd.Series("", index=trials.index)),
                                               categories=list(dict.fromkeys(trials.get("file", [""])))))
    order = order.sort_values(["_file", "trial_number"], kind="stable").index
    names = [c for c in CATEGORICAL_COLUMNS if c in trials.columns]
    names += [c for c in param_columns(trials).values()
              if isinstance(trials[c].dtype, pd.CategoricalDtype) or trials[c].dtype == object and
              trials[c].map(lambda v: isinstance(v, str) or v is None).all()]
    for name in dict.fromkeys(names):
        values = trials[name].astype(object)
        categories = list(dict.fromkeys(v for v in values.loc[order] if isinstance(v, str)))
        trials[name] = pd.Categorical(values.where(values.map(lambda v: isinstance(v, str))), categories=categories)
    return trials
