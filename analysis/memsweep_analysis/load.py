"""Read memsweep results files (docs/results-file.md, schemas 1 to 13) into pandas DataFrames.

`load(*paths)` checks every file at once (an HDF5 file, `format` = "memsweep",
`schema_version` 1 to 13, the four tables present, and /messages from schema 5) and reads only its root
attributes; each table is read from every file the first time its property
is used, then kept. `load(big).trials` never touches /samples, and
`samples_for(ids)` reads the samples of a few trials without converting the
rest.

Every table gets `file` (the path as given) and `sweep` (the sweep's name).
Fixed-length text is decoded to str. A figure the file records as -1 ("could
not be measured") is NaN in the columns of unit bytes or events and in
`final_train_loss` and `test_accuracy`, so means skip it; bytes stay bytes
(presentation converts to MiB). /trials gains the columns of `trial_columns`
(derived.py), among them one per key of the trials' free parameters (`params`, schema 4).
Columns a file's schema version does not have read as their "not measured"
value (old_schemas.py), so files of every version concatenate.
/trials' `message` is the whole message: from /messages (schema 5), where
/trials' own column holds only its first 256 bytes; older files have only that.

`searches` is /searches (schema 6): one row per configuration and memory limit that a [search] searched
(SearchRow's fields, search_columns); empty, with those columns, for files without the table.

This module does the reading (h5py, checks, blocks, messages); what is worked out from the tables is derived.py's,
and what an older schema lacks old_schemas.py's, so that neither needs a file to be tested.
"""

import contextlib
import ctypes
import os
import traceback

from ._deps import require

require("numpy", "pandas", "h5py")

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .derived import SEARCH_COLUMNS, search_columns, trial_columns  # noqa: E402
from .old_schemas import ADDED_COLUMNS, RUN_SETTINGS, file_final_statuses  # noqa: E402
# Kept importable from here because the tests and docs/analysis.md name them `load.<name>`; the package's own
# modules import them from where they are defined.
from .derived import (NO_DATASET, categorical_columns, config_key, param_columns, standing_rows,  # noqa: E402
                      trial_numbers)
from .old_schemas import FINAL_STATUSES, run_limits  # noqa: E402

__all__ = [
    "FORMAT", "SCHEMA_VERSIONS", "SCHEMA_VERSION", "TABLES", "MESSAGES_TABLE", "FIRST_SCHEMA_WITH_MESSAGES",
    "SEARCHES_TABLE", "MESSAGE_COLUMNS", "FINAL_STATUSES_ATTRIBUTE", "MISSING_AS_MINUS_ONE", "UNIT_PREFIX",
    "SINCE_PREFIX", "MISSING_PREFIX", "ESTIMATE_PREFIX",
    "LABEL_PREFIX", "MemsweepFileError", "H5PY_READ_ERRORS", "raised_by_h5py", "load", "SWMR_READ_ATTEMPTS",
    "swmr_open", "estimate_part_labels", "Results", "BLOCK_ROWS", "whole_messages",
    "NO_DATASET", "categorical_columns", "config_key", "param_columns", "standing_rows", "trial_numbers",
    "FINAL_STATUSES", "run_limits"]

FORMAT = "memsweep"
# Schema 2 added /samples' sys_total column, which nothing here needs (a schema 1 file's samples lack it);
# schema 3 added the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_3, schema 4 those of TRIAL_COLUMNS_OF_SCHEMA_4;
# schema 5 the /messages table (messages whole); schema 6 the /searches table and the /trials columns of
# TRIAL_COLUMNS_OF_SCHEMA_6; schema 7 GPU memory: the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_7 and the /samples
# ones of SAMPLE_COLUMNS_OF_SCHEMA_7 (include/memsweep/columns.hpp declares them); schema 8 the trainer's memory
# plan: the /trials columns of TRIAL_COLUMNS_OF_SCHEMA_8; schema 9 /runs' trial_process_cost (RUN_COLUMNS_OF_SCHEMA_9);
# schema 10 what the analysis reads instead of working it out: /trials' parameters (TRIAL_COLUMNS_OF_SCHEMA_10) and
# estimate parts (ESTIMATE_PREFIX), and the root attribute final_statuses; schema 11 the /metrics table (programs'
# own figures, read by metrics.py); schema 12 each column's since: and missing: attributes (read below: a column
# added later needs no table here) and /trials' train_examples; schema 13 a trial's own GPUs and GPU limit, and GPU
# searches (read through those attributes). The tables named here are old_schemas.py's.
SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13)
SCHEMA_VERSION = SCHEMA_VERSIONS[-1]
TABLES = ("trials", "samples", "epochs", "runs")
MESSAGES_TABLE = "messages"
FIRST_SCHEMA_WITH_MESSAGES = 5
# /searches (schema 6): one row per search (a configuration at one memory limit). Read where a file has it: a
# file of an older schema has none, and the analysis has then no searches to show.
SEARCHES_TABLE = "searches"
MESSAGE_COLUMNS = ("trial_id", "attempt", "run", "piece", "text")
FINAL_STATUSES_ATTRIBUTE = "final_statuses"

# Result columns that are floats with -1 for "not measured" besides those of unit bytes/events, in files before
# schema 12; from schema 12 each such column's attribute missing:<column> says so, and since:<column> the schema that
# added it (include/memsweep/columns.hpp declares both).
MISSING_AS_MINUS_ONE = ("final_train_loss", "test_accuracy", "start_seconds")
UNIT_PREFIX = "unit:"
SINCE_PREFIX = "since:"
MISSING_PREFIX = "missing:"
# /trials' columns of the estimate's parts (schema 10): `estimate_<part>`, bytes (-1 in a file: not a part of the
# trial's estimate), each labelled with the part's name by the attribute `label:<column>` (files' `estimate_parts`).
ESTIMATE_PREFIX = "estimate_"
LABEL_PREFIX = "label:"


class MemsweepFileError(ValueError):
    """A file that is not a readable memsweep results file (schema 1 to 12); the message names it."""


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
    attributes = dict(dataset.attrs.items())
    units = {name[len(UNIT_PREFIX):]: _text(value) for name, value in attributes.items()
             if name.startswith(UNIT_PREFIX)}
    # From schema 12 the file says which figures' -1 is "not measured" (missing:<column>); an older file's are
    # those of unit bytes or events and MISSING_AS_MINUS_ONE.
    if any(name.startswith(SINCE_PREFIX) for name in attributes):
        not_measured = {name[len(MISSING_PREFIX):] for name in attributes if name.startswith(MISSING_PREFIX)}
    else:
        not_measured = {name for name, unit in units.items() if unit in ("bytes", "events")}
        not_measured |= set(MISSING_AS_MINUS_ONE)
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
    frame = _frame(array, not_measured)
    for name, value in added.items():  # a column of a later schema than the file's
        frame[name] = value
    frame.insert(0, "file", path)
    frame.insert(1, "sweep", sweep)
    return frame


def _frame(array, not_measured):
    data = {}
    for name in array.dtype.names:
        column = array[name]
        kind = array.dtype[name]
        if kind.kind == "S":
            data[name] = _decoded(column)
        elif kind.subdtype is not None:  # hidden, channels: zero-padded int arrays
            data[name] = list(column)
        elif name in not_measured:
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
