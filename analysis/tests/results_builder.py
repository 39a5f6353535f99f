"""Write memsweep results files with known values, for the tests.

`write_results_file(path, trials, samples, epochs, attrs, counter_columns)`
writes the schema of docs/results-file.md as the C++ store writes it: the
same compound types (fixed-length NUL-padded UTF-8 text, `hidden` int32[16]
and `channels` int32[8] zero-padded), the same chunking and filters, a
`unit:<column>` and a `description` attribute on every table, and every root
attribute. Rows are dicts naming only the fields a test cares about; the rest
get the defaults below, so a test's expected values come from what it wrote.

A trial row's `trial_id` and `definition` default to what memsweep would
write for the row's hyperparameters (TrialSpec::canonical_text() and its
FNV-1a hash), so ids are those of a real sweep with the same trials.
`rss_footprint` defaults to `rss_peak - rss_baseline`, `depth` to
`len(hidden)`, `epochs_done` to `epochs`. Sample rows default to the first
trial's id; a counter value is given under the counter's name.

Files are of the current schema (10) unless `schema_version` asks for an
older one (1 to 9): then the columns added since are left out, as that
version's memsweep wrote them (ADDED_IN), and a row naming one is refused.
Schema 5's /messages holds each trial's whole message in pieces of at most
256 bytes cut on characters: `messages` maps a trial's index to its whole
message (its /trials column then gets the first bytes), otherwise a trial's
own `message` is stored there.

Schema 5 also numbers the trials and stamps the samples: a trial's
`plan_index` (its 0-based position in the sweep as `memsweep plan` lists it)
defaults to the order its trial id first appears in `trials` (attempts share it); a sample's `phase` (0 setup, 1
training, 2 evaluating, -1 unknown) defaults to -1.

Schema 4's trial columns default to a built-in trial's: `trainer`
"memsweep", `params` "{}", `processes` 1, `rss_peak_hwm_sum` and
`process_peak_max` -1, `bad_event_lines` 0. A row may give `trainer` (a
program's name) and `params` as a dict (written as compact JSON, keys
sorted, as TrialSpec::params_json() does) or as the text itself. A program
trial's default definition ends in `;trainer=<name>`, and a trial with
parameters' in `;params=<JSON>`, so that the same hyperparameters trained by
two trainers get two ids, as two trials of one sweep must (what the C++
definition will hold for them is the config branch's; the analysis does not
rely on either).

Schema 6 adds /searches and the trial columns of a search's probes (`search`
-1, `probe` -1, `axis_value` -1, `search_limit` -1, `full_run` -1 and
`reported_oom` 0 by default: a trial outside searches). `searches` is a list
of /searches rows (SearchRow's fields, include/memsweep/results.hpp), given
like trial rows: only the fields a test cares about (complete_search fills
the rest: the configuration's fields as a trial's defaults, its definition
and configuration_id as the trial's would be). A schema 6 file always has
/searches, empty when no search was given. A probe's default definition ends
in `;search_limit=<bytes>` (the same values under two limits are two trials,
as memsweep makes them; what the C++ text holds is the search branch's, and
the analysis does not rely on it).
"""

import json
import math

import h5py
import numpy as np

TEXT = "text"
BYTES = "bytes"
ONE = "1"
SECONDS = "s"
UNIX = "s since 1970-01-01T00:00:00Z"
EVENTS = "events"

MAX_HIDDEN = 16
MAX_CHANNELS = 8

SCHEMA_VERSION = 13
MAX_AXIS = 64
MESSAGE_PIECE_BYTES = 256


def _text(width):
    return h5py.string_dtype("utf-8", width)


# (column, numpy type, unit), in the file's order (src/store/schema.cpp).
# Schema 10's estimate columns and their labels (include/memsweep/estimate_parts.hpp, kEstimatePartColumns):
# the part each column holds, as `label:<column>` names it.
ESTIMATE_PART_LABELS = {
    "estimate_parameters": "parameters", "estimate_gradients": "gradients",
    "estimate_optimizer_state": "optimizer state", "estimate_activations": "activations",
    "estimate_pooling_workspace": "pooling workspace", "estimate_activation_gradients": "activation gradients",
    "estimate_input_batch": "input batch", "estimate_reordered_weight_copies": "reordered weight copies",
    "estimate_onednn_scratchpad": "oneDNN scratchpad", "estimate_step_arena": "step arena",
    "estimate_trial_process": "trial process", "estimate_resident_dataset": "resident dataset",
    "estimate_rule_parameters_x3": "parameters x3", "estimate_rule_activations_x2_x_batch": "activations x2 x batch",
}
# Schema 10's root attribute: the statuses memsweep calls final (is_final, src/results/rows.cpp).
FINAL_STATUSES = ["ok", "failed", "diverged", "over_budget", "timeout"]

TRIAL_COLUMNS = [
    ("trial_id", _text(12), TEXT),
    ("attempt", "<i4", ONE),
    ("repeat", "<i4", ONE),
    ("run", "<i4", ONE),
    ("plan_index", "<i4", ONE),
    ("dataset", _text(16), TEXT),
    ("model", _text(16), TEXT),
    ("optimizer", _text(16), TEXT),
    ("learning_rate", "<f8", ONE),
    ("epochs", "<i4", ONE),
    ("batch_size", "<i4", ONE),
    ("depth", "<i4", ONE),
    ("hidden", ("<i4", (MAX_HIDDEN,)), ONE),
    ("channels", ("<i4", (MAX_CHANNELS,)), ONE),
    ("seed", "<u8", ONE),
    ("rank", "<i4", ONE),
    ("host", _text(64), TEXT),
    ("status", _text(16), TEXT),
    ("message", _text(256), TEXT),
    ("start_time", "<f8", UNIX),
    ("end_time", "<f8", UNIX),
    ("wall_seconds", "<f8", SECONDS),
    ("rss_baseline", "<i8", BYTES),
    ("rss_peak", "<i8", BYTES),
    ("rss_mean", "<f8", BYTES),
    ("rss_footprint", "<i8", BYTES),
    ("sys_used_mean", "<f8", BYTES),
    ("predicted_bytes", "<i8", BYTES),
    ("epochs_done", "<i4", ONE),
    ("final_train_loss", "<f8", ONE),
    ("test_accuracy", "<f8", ONE),
    ("samples", "<u8", ONE),
    ("dropped_samples", "<u8", ONE),
    ("definition", _text(512), TEXT),
    ("pid", "<i4", ONE),
    ("end_signal", "<i4", ONE),
    ("oom_killed", "<i4", ONE),
    ("end_cause", _text(16), TEXT),
    ("isolation", _text(16), TEXT),
    ("start_seconds", "<f8", SECONDS),
    ("cgroup_peak", "<i8", BYTES),
    ("trainer", _text(16), TEXT),
    ("params", _text(512), TEXT),
    ("processes", "<i4", ONE),
    ("rss_peak_hwm_sum", "<i8", BYTES),
    ("process_peak_max", "<i8", BYTES),
    ("bad_event_lines", "<i4", ONE),
    ("search", "<i4", ONE),
    ("probe", "<i4", ONE),
    ("axis_value", "<i8", ONE),
    ("search_limit", "<i8", BYTES),
    ("full_run", "<i4", ONE),
    ("reported_oom", "<i4", ONE),
    ("gpu_peak", "<i8", BYTES),
    ("gpu_devices", _text(40), TEXT),
    ("gpu_peak_source", _text(16), TEXT),
    ("torch_allocated_peak", "<i8", BYTES),
    ("torch_reserved_peak", "<i8", BYTES),
    ("memory_plan", _text(16), TEXT),
    ("recompute_every", "<i4", ONE),
    ("parameters", "<i8", ONE),
    *((column, "<i8", BYTES) for column in ESTIMATE_PART_LABELS),
    ("train_examples", "<i8", ONE),
    ("gpu_uuids", _text(256), TEXT),
    ("gpu_name", _text(64), TEXT),
    ("gpu_total", "<i8", BYTES),
    ("gpu_driver", _text(16), TEXT),
    ("cuda_version", _text(16), TEXT),
    ("cuda_alloc_conf", _text(128), TEXT),
    ("gpu_limit", "<i8", BYTES),
    ("gpu_limit_mechanism", _text(16), TEXT),
    ("gpu_reserved", "<i8", BYTES),
    ("search_device", _text(16), TEXT),
]

# /searches (schema 6): SearchRow's fields in order.
SEARCH_COLUMNS = [
    ("search", "<i4", ONE),
    ("configuration", "<i4", ONE),
    ("limit_index", "<i4", ONE),
    ("run", "<i4", ONE),
    ("configuration_id", _text(12), TEXT),
    ("trainer", _text(16), TEXT),
    ("dataset", _text(16), TEXT),
    ("model", _text(16), TEXT),
    ("optimizer", _text(16), TEXT),
    ("learning_rate", "<f8", ONE),
    ("epochs", "<i4", ONE),
    ("batch_size", "<i4", ONE),
    ("depth", "<i4", ONE),
    ("hidden", ("<i4", (MAX_HIDDEN,)), ONE),
    ("channels", ("<i4", (MAX_CHANNELS,)), ONE),
    ("repeat", "<i4", ONE),
    ("params", _text(512), TEXT),
    ("definition", _text(512), TEXT),
    ("axis", _text(MAX_AXIS), TEXT),
    ("range_low", "<i8", ONE),
    ("range_high", "<i8", ONE),
    ("limit", "<i8", BYTES),
    ("enforced_by", _text(16), TEXT),
    ("strategy", _text(16), TEXT),
    ("status", _text(16), TEXT),
    ("fits", "<i8", ONE),
    ("fits_verified", "<i4", ONE),
    ("does_not_fit", "<i8", ONE),
    ("fit_a_mib", "<f8", "MiB"),
    ("fit_b_mib", "<f8", "MiB per unit of the axis"),
    ("predicted", "<i8", ONE),
    ("trials", "<i4", ONE),
    ("seconds", "<f8", SECONDS),
    ("message", _text(256), TEXT),
    ("memory_plan", _text(16), TEXT),
    ("recompute_every", "<i4", ONE),
    ("device", _text(16), TEXT),
    ("gpu_name", _text(64), TEXT),
    ("gpu_total", "<i8", BYTES),
]

SAMPLE_COLUMNS = [
    ("trial_id", _text(12), TEXT),
    ("attempt", "<i4", ONE),
    ("rank", "<i4", ONE),
    ("epoch", "<i4", ONE),
    ("phase", "<i4", ONE),
    ("t", "<f8", SECONDS),
    ("rss", "<i8", BYTES),
    ("anon_rss", "<i8", BYTES),
    ("pss", "<i8", BYTES),
    ("sys_used", "<i8", BYTES),
    ("sys_total", "<i8", BYTES),
    ("sys_available", "<i8", BYTES),
    ("sys_active", "<i8", BYTES),
    ("gpu_used", "<i8", BYTES),
    ("gpu_tree_used", "<i8", BYTES),
]

EPOCH_COLUMNS = [
    ("trial_id", _text(12), TEXT),
    ("attempt", "<i4", ONE),
    ("epoch", "<i4", ONE),
    ("train_loss", "<f8", ONE),
    ("test_accuracy", "<f8", ONE),
    ("seconds", "<f8", SECONDS),
    ("rss", "<i8", BYTES),
    ("sys_used", "<i8", BYTES),
]

# /metrics (schema 11): a program's own figures per epoch (MetricRow, include/memsweep/results.hpp).
METRIC_COLUMNS = [
    ("trial_id", _text(12), TEXT),
    ("attempt", "<i4", ONE),
    ("epoch", "<i4", ONE),
    ("name", _text(32), TEXT),
    ("value", "<f8", ONE),
    ("seconds", "<f8", SECONDS),
    ("matches", "<i4", ONE),
]
METRIC_DEFAULTS = {"attempt": 0, "epoch": 0, "name": "loss", "value": 1.0, "seconds": 0.5, "matches": 1}

MESSAGE_COLUMNS = [
    ("trial_id", _text(12), TEXT),
    ("attempt", "<i4", ONE),
    ("run", "<i4", ONE),
    ("piece", "<i4", ONE),
    ("text", _text(MESSAGE_PIECE_BYTES), TEXT),
]


def utf8_prefix(text, max_bytes):
    """The longest prefix of `text` of at most `max_bytes` UTF-8 bytes (cut on a character)."""
    data = text.encode("utf-8")[:max_bytes]
    return data.decode("utf-8", errors="ignore")


def message_pieces(text):
    """`text` as /messages' pieces: at most MESSAGE_PIECE_BYTES bytes each, cut on characters."""
    pieces = []
    while text:
        piece = utf8_prefix(text, MESSAGE_PIECE_BYTES)
        pieces.append(piece)
        text = text[len(piece):]
    return pieces


# The schema version that added each column after version 1 (docs/results-file.md, Versions).
ADDED_IN = {
    "trials": {**{name: 3 for name in ("pid", "end_signal", "oom_killed", "end_cause", "isolation",
                                       "start_seconds", "cgroup_peak")},
               **{name: 4 for name in ("trainer", "params", "processes", "rss_peak_hwm_sum", "process_peak_max",
                                       "bad_event_lines")},
               "plan_index": 5,
               **{name: 6 for name in ("search", "probe", "axis_value", "search_limit", "full_run",
                                       "reported_oom")},
               **{name: 7 for name in ("gpu_peak", "gpu_devices", "gpu_peak_source", "torch_allocated_peak",
                                       "torch_reserved_peak")},
               "memory_plan": 8, "recompute_every": 8,
               **{name: 10 for name in ("parameters", *ESTIMATE_PART_LABELS)}, "train_examples": 12,
               **{name: 13 for name in ("gpu_uuids", "gpu_name", "gpu_total", "gpu_driver", "cuda_version",
                                        "cuda_alloc_conf", "gpu_limit", "gpu_limit_mechanism", "gpu_reserved",
                                        "search_device")}},
    "samples": {"sys_total": 2, "phase": 5, "gpu_used": 7, "gpu_tree_used": 7},
    "searches": {"memory_plan": 8, "recompute_every": 8, "device": 13, "gpu_name": 13, "gpu_total": 13},
    "runs": {"end_time": 3, "end_state": 3,
             **{name: 5 for name in ("data_dirs", "max_train_examples", "max_test_examples", "threads",
                                     "counter_source", "mem_budget", "trial_timeout", "flush_interval", "no_swmr",
                                     "launcher", "executable", "sweep_file", "output_option", "split_by", "part",
                                     "retried", "changed_options")},
             "trial_process_cost": 9},
}

RUN_COLUMNS = [
    ("run", "<i4", ONE),
    ("start_time", "<f8", UNIX),
    ("ranks", "<i4", ONE),
    ("hosts", _text(256), TEXT),
    ("command_line", _text(1024), TEXT),
    ("memsweep_version", _text(16), TEXT),
    ("end_time", "<f8", UNIX),
    ("end_state", _text(16), TEXT),
    ("data_dirs", _text(1024), TEXT),
    ("max_train_examples", "<i8", ONE),
    ("max_test_examples", "<i8", ONE),
    ("threads", "<i4", ONE),
    ("counter_source", _text(16), TEXT),
    ("mem_budget", "<i8", BYTES),
    ("trial_timeout", "<f8", SECONDS),
    ("flush_interval", "<f8", SECONDS),
    ("no_swmr", "<i4", ONE),
    ("launcher", _text(16), TEXT),
    ("executable", _text(1024), TEXT),
    ("sweep_file", _text(1024), TEXT),
    ("output_option", _text(1024), TEXT),
    ("split_by", _text(16), TEXT),
    ("part", "<i4", ONE),
    ("retried", _text(256), TEXT),
    ("changed_options", _text(1024), TEXT),
    ("trial_process_cost", _text(256), TEXT),
]

# RunRow's defaults (store.hpp): a run without options, started alone.
RUN_DEFAULTS = {"end_time": -1.0, "end_state": "", "data_dirs": "", "max_train_examples": 0, "max_test_examples": 0,
                "threads": 0, "counter_source": "", "mem_budget": -1, "trial_timeout": -1.0, "flush_interval": 2.0,
                "no_swmr": 0, "launcher": "", "executable": "", "sweep_file": "", "output_option": "",
                "split_by": "", "part": -1, "retried": "", "changed_options": "", "trial_process_cost": ""}

DESCRIPTIONS = {
    "trials": "One row per trial attempt: its hyperparameters and its result (memsweep, docs/results-file.md).",
    "samples": "One row per memory sample of a trial attempt, then one column per recorded counter (counts since "
               "the trial's start; the root attribute counter_columns lists them).",
    "epochs": "One row per finished epoch of a trial attempt.",
    "runs": "One row per invocation of `memsweep run` on this file: 0 created it, each resume adds one.",
    "messages": "Trial messages whole: the pieces of each trial attempt's message, in order, of at most 256 bytes "
                "each, cut on UTF-8 character boundaries; /trials' message column holds only a message's first "
                "256 bytes.",
    "metrics": "A program's own figures, matched by its [programs] metrics patterns in its standard output: per "
               "trial attempt, metric and epoch the last value matched (epoch 0: before any epoch); an attempt's "
               "last row of a metric holds its final value.",
    "searches": "One row per search: a configuration's largest axis value that trains within one memory limit "
                "([search], docs/search.md).",
}

# (chunk rows, compression, shuffle) as docs/results-file.md "Storage" says;
# /samples' chunk depends on the sampler interval and the first run's flush interval (samples_chunk_rows below).
STORAGE = {
    "trials": (1, 1, False),
    "samples": (None, 1, True),
    "epochs": (1024, None, False),
    "runs": (1, 1, False),
    "messages": (1, 1, False),
    "searches": (1, 1, False),
    "metrics": (1024, None, False),
}


def samples_chunk_rows(interval_ms, flush_seconds):
    """store::samples_chunk_rows (issue 29): the rows one worker samples in 3/4 of its flush interval (whole
    milliseconds, rounded up), from 64 to 16384: workers compress whole chunks of that size."""
    flush_ms = max(1, math.ceil(flush_seconds * 1000.0)) if flush_seconds > 0 else 1
    rows = flush_ms * 3 // 4 // (interval_ms if interval_ms > 0 else 10)
    return min(max(rows, 64), 16384)

SYNTHETIC_DEFAULT = {"shape": (1, 28, 28), "classes": 10, "train_size": 6000, "test_size": 1000, "noise": 0.5,
                     "seed": 1}

TRIAL_DEFAULTS = {
    "attempt": 0, "repeat": 0, "run": 0, "dataset": "synthetic", "model": "mlp", "optimizer": "sgd",
    "learning_rate": 0.01, "epochs": 1, "batch_size": 32, "hidden": (128,), "channels": (), "seed": 1, "rank": 0,
    "host": "testhost", "status": "ok", "message": "", "start_time": 1.7e9, "end_time": 1.7e9 + 1.0,
    "wall_seconds": 1.0, "rss_baseline": 50 * 2**20, "rss_peak": 60 * 2**20, "rss_mean": 55.0 * 2**20,
    "sys_used_mean": 800.0 * 2**20, "predicted_bytes": 9 * 2**20, "final_train_loss": 0.5, "test_accuracy": 0.9,
    "samples": 0, "dropped_samples": 0,
    "pid": -1, "end_signal": 0, "oom_killed": 0, "end_cause": "", "isolation": "", "start_seconds": -1.0,
    "cgroup_peak": -1,
    "trainer": "memsweep", "params": "{}", "processes": 1, "rss_peak_hwm_sum": -1, "process_peak_max": -1,
    "bad_event_lines": 0,
    "search": -1, "probe": -1, "axis_value": -1, "search_limit": -1, "full_run": -1, "reported_oom": 0,
    "gpu_peak": -1, "gpu_devices": "", "gpu_peak_source": "", "torch_allocated_peak": -1, "torch_reserved_peak": -1,
    "memory_plan": "keep", "recompute_every": 0,
    "parameters": -1, **{name: -1 for name in ESTIMATE_PART_LABELS}, "train_examples": -1,
    "gpu_uuids": "", "gpu_name": "", "gpu_total": -1, "gpu_driver": "", "cuda_version": "", "cuda_alloc_conf": "",
    "gpu_limit": -1, "gpu_limit_mechanism": "", "gpu_reserved": -1, "search_device": "",
}

SEARCH_DEFAULTS = {
    "search": 0, "configuration": 0, "limit_index": 0, "run": 0, "axis": "batch_size", "range_low": 1,
    "range_high": 1024, "limit": 512 * 2**20, "enforced_by": "cgroup2", "strategy": "model", "status": "found",
    "fits": -1, "fits_verified": 0, "does_not_fit": -1, "fit_a_mib": -1.0, "fit_b_mib": -1.0, "predicted": -1,
    "trials": 0, "seconds": 0.0, "message": "", "device": "host", "gpu_name": "", "gpu_total": -1,
}
# The configuration's fields a search row shares with a trial row (their defaults are the trial's).
SEARCH_CONFIGURATION_FIELDS = ("trainer", "dataset", "model", "optimizer", "learning_rate", "epochs", "batch_size",
                               "hidden", "channels", "repeat", "params", "memory_plan", "recompute_every")

SAMPLE_DEFAULTS = {"attempt": 0, "rank": 0, "epoch": 0, "phase": -1, "t": 0.0, "rss": 60 * 2**20, "anon_rss": 30 * 2**20,
                   "pss": -1, "sys_used": 800 * 2**20, "sys_total": 24 * 2**30, "sys_available": 20 * 2**30,
                   "sys_active": 500 * 2**20, "gpu_used": -1, "gpu_tree_used": -1}

EPOCH_DEFAULTS = {"attempt": 0, "epoch": 1, "train_loss": 0.5, "test_accuracy": 0.9, "seconds": 1.0,
                  "rss": 60 * 2**20, "sys_used": 800 * 2**20}


def stable_hash(text):
    """FNV-1a 64 of the UTF-8 bytes (include/memsweep/random.hpp)."""
    value = 0xcbf29ce484222325
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return value


def trial_id_of(definition):
    return f"{stable_hash(definition) >> 16:012x}"


def _number(value):
    # fmt's "{}" prints an integral double without ".0" (1, not 1.0); Python's
    # repr is otherwise the same shortest round-trip text.
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)


def canonical_text(row):
    """TrialSpec::canonical_text() for a trial row (src/config/trial_spec.cpp)."""
    text = f"dataset={row['dataset']}"
    if row["dataset"] == "synthetic":
        s = dict(SYNTHETIC_DEFAULT, **row.get("synthetic", {}))
        c, h, w = s["shape"]
        text += (f";synthetic={c}x{h}x{w}/{s['classes']}/{s['train_size']}/{s['test_size']}/"
                 f"{_number(s['noise'])}/{s['seed']}")
    text += f";model={row['model']}"
    if row["model"] == "cnn":
        text += ";channels=" + "-".join(str(c) for c in row["channels"])
    text += f";optimizer={row['optimizer']}"
    if row["optimizer"] == "momentum":
        text += f";momentum={_number(row.get('momentum', 0.9))}"
    if row["optimizer"] == "adam":
        text += (f";beta1={_number(row.get('beta1', 0.9))};beta2={_number(row.get('beta2', 0.999))}"
                 f";epsilon={_number(row.get('epsilon', 1e-8))}")
    text += (f";learning_rate={_number(row['learning_rate'])};epochs={row['epochs']};"
             f"batch_size={row['batch_size']};hidden={'-'.join(str(h) for h in row['hidden'])};"
             f"seed={row['seed']};repeat={row['repeat']}")
    if row.get("memory_plan", "keep") not in ("keep", ""):
        text += f";memory_plan={row['memory_plan']}"
    if row.get("memory_plan") == "recompute" and row.get("recompute_every", 0):
        text += f";recompute_every={row['recompute_every']}"
    if row.get("trainer", "memsweep") not in ("memsweep", ""):
        text += f";trainer={row['trainer']}"
    if row.get("params", "{}") not in ("{}", ""):
        text += f";params={row['params']}"
    if row.get("search", -1) >= 0:
        text += f";search_limit={row['search_limit']}"
    return text


def params_text(params):
    """A trial's params as the file holds them: a dict as compact JSON with sorted keys, a text as it is."""
    if isinstance(params, dict):
        return json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return params


def _padded(values, width):
    values = list(values)
    if len(values) > width:
        raise ValueError(f"at most {width} values, got {len(values)}")
    return values + [0] * (width - len(values))


def complete_trial(given):
    """A trial row with every field: the given ones, then derived ones, then defaults.

    Extra keys `synthetic` (a dict like SYNTHETIC_DEFAULT), `momentum`, `beta1`,
    `beta2`, `epsilon` only shape the default definition.
    """
    row = dict(TRIAL_DEFAULTS, **given)
    row["params"] = params_text(row["params"])
    row.setdefault("depth", len(row["hidden"]))
    row.setdefault("epochs_done", row["epochs"])
    row.setdefault("rss_footprint", row["rss_peak"] - row["rss_baseline"])
    row.setdefault("definition", canonical_text(row))
    row.setdefault("trial_id", trial_id_of(row["definition"]))
    return row


def complete_search(given):
    """A /searches row with every field: the given ones, the configuration's as a trial's defaults, the rest
    SEARCH_DEFAULTS; `definition` and `configuration_id` as the configuration's trial would have them."""
    row = dict(SEARCH_DEFAULTS, **{name: TRIAL_DEFAULTS[name] for name in SEARCH_CONFIGURATION_FIELDS})
    row.update(given)
    row["params"] = params_text(row["params"])
    row.setdefault("depth", len(row["hidden"]))
    trial = {name: row[name] for name in SEARCH_CONFIGURATION_FIELDS}
    row.setdefault("definition", canonical_text(dict(trial, seed=TRIAL_DEFAULTS["seed"])))
    row.setdefault("configuration_id", trial_id_of(row["definition"]))
    return row


def _column_names(columns):
    return [name for name, _, _ in columns]


def columns_of(table, columns, schema_version):
    """The columns a file of `schema_version` has."""
    added = ADDED_IN.get(table, {})
    return [column for column in columns if added.get(column[0], 1) <= schema_version]


def _records(rows, columns, defaults):
    dtype = np.dtype([(name, kind) for name, kind, _ in columns])
    array = np.zeros(len(rows), dtype=dtype)
    known = set(_column_names(columns))
    for index, given in enumerate(rows):
        unknown = set(given) - known - {"synthetic", "momentum", "beta1", "beta2", "epsilon"}
        if unknown:
            raise KeyError(f"not columns of this table: {sorted(unknown)}")
        row = dict(defaults, **given)
        for name, kind, _ in columns:
            value = row[name]
            if name == "hidden":
                value = _padded(value, MAX_HIDDEN)
            elif name == "channels":
                value = _padded(value, MAX_CHANNELS)
            elif isinstance(value, str):
                value = value.encode("utf-8")
            array[index][name] = value
    return array


# Schema 12: the columns whose -1 means "not measured" carry missing:<column> (MinusOne::not_measured in
# include/memsweep/columns.hpp): every figure of unit bytes or events but /runs' mem_budget and /searches' limit
# (-1 there is "none"), /trials' gpu_limit and gpu_reserved (likewise), and these of /trials.
NOT_MEASURED_OF_UNIT_ONE = {"final_train_loss", "test_accuracy", "start_seconds", "parameters", "train_examples"}
MINUS_ONE_IS_NONE = {("runs", "mem_budget"), ("searches", "limit"), ("trials", "gpu_limit"), ("trials", "gpu_reserved")}


def _not_measured(table, column, unit):
    if (table, column) in MINUS_ONE_IS_NONE or table in ("messages", "metrics"):
        return False
    return unit in (BYTES, EVENTS) or (table == "trials" and column in NOT_MEASURED_OF_UNIT_ONE)


def _write_table(file, name, columns, array, chunk=None, schema_version=SCHEMA_VERSION):
    default_chunk, level, shuffle = STORAGE[name]
    chunk = chunk or default_chunk
    dataset = file.create_dataset(name, data=array, maxshape=(None,), chunks=(chunk,), shuffle=shuffle,
                                  compression="gzip" if level else None, compression_opts=level)
    dataset.attrs.create("description", DESCRIPTIONS[name], dtype=h5py.string_dtype())
    for column, _, unit in columns:
        dataset.attrs.create("unit:" + column, unit, dtype=h5py.string_dtype())
        if column in ESTIMATE_PART_LABELS:
            dataset.attrs.create("label:" + column, ESTIMATE_PART_LABELS[column], dtype=h5py.string_dtype())
        if schema_version >= 12:
            dataset.attrs.create("since:" + column, ADDED_IN.get(name, {}).get(column, 1), dtype="<i4")
            if _not_measured(name, column, unit):
                dataset.attrs.create("missing:" + column, -1, dtype=array.dtype[column])


def default_attrs(trials, counter_columns, schema_version=SCHEMA_VERSION):
    hosts = sorted({t["host"] for t in trials}) or ["testhost"]
    return {
        "format": "memsweep",
        "schema_version": np.int32(schema_version),
        "sweep_name": "test",
        "sweep_file": "test.toml",
        "sweep_text": '[sweep]\nname = "test"\n',
        "sweep_hash": "0123456789abcdef",
        "part": "",
        "command_line": "memsweep run test.toml -o results.h5",
        "memsweep_version": "0.1.0",
        "onednn_version": "oneDNN 2.6.3",
        "mpi_version": "Open MPI v4.1.4",
        "papi_version": "PAPI 7.0.0.0",
        "hdf5_version": "1.10.8",
        "ranks": np.int32(len(hosts)),
        "hosts": list(hosts),
        "start_time": "2026-01-01T00:00:00Z",
        "sampler_interval_ms": np.int32(10),
        "planned_trials": np.int64(len(trials)),
        "events_requested": [],
        "counter_columns": list(counter_columns),
        # memsweep writes these only for a file with counter columns; older files lack them.
        "counter_sources": ["kernel"] * len(counter_columns) if counter_columns else None,
        "counter_encodings": ["type=1 config=0x2"] * len(counter_columns) if counter_columns else None,
        "event_notes": [],
        "swmr": np.bool_(True),
        "final_statuses": FINAL_STATUSES if schema_version >= 10 else None,
    }


def _write_attribute(file, name, value):
    if value is None:  # lets a test leave an attribute out
        return
    if isinstance(value, str):
        file.attrs.create(name, value, dtype=h5py.string_dtype())
    elif isinstance(value, (list, tuple)):
        file.attrs.create(name, np.array(list(value), dtype=object), dtype=h5py.string_dtype())
    elif isinstance(value, bool):
        file.attrs.create(name, np.bool_(value))
    elif isinstance(value, int):
        file.attrs.create(name, np.int32(value))
    else:
        file.attrs.create(name, value)


def write_results_file(path, trials, samples=(), epochs=(), attrs=None, counter_columns=("perf::PAGE-FAULTS",),
                       runs=None, schema_version=SCHEMA_VERSION, messages=None, searches=(), metrics=()):
    """Write a results file; return the completed trial rows (dicts) so tests can use the ids.

    `attrs` overrides or adds root attributes (a value of None leaves one out);
    `counter_columns` names /samples' counter columns (int64, unit `events`);
    `schema_version` 1 to 4 writes the tables as those versions had them;
    `messages`: {trial index: whole message} (schema 5);
    `searches`: /searches rows (schema 6; complete_search completes them);
    `metrics`: /metrics rows (schema 11; METRIC_DEFAULTS and the first trial's id fill them).
    """
    if metrics and schema_version < 11:
        raise KeyError(f"schema {schema_version} has no /metrics")
    if searches and schema_version < 6:
        raise KeyError(f"schema {schema_version} has no /searches")
    trial_columns = columns_of("trials", TRIAL_COLUMNS, schema_version)
    later = set(_column_names(TRIAL_COLUMNS)) - set(_column_names(trial_columns))
    for given in trials:
        if later & set(given):
            raise KeyError(f"not columns of schema {schema_version}'s /trials: {sorted(later & set(given))}")
    trial_rows = [complete_trial(dict(t)) for t in trials]
    # Unless given, a trial's plan number is the order its id first appears in: attempts of one trial share it.
    first_seen = {}
    for row, given in zip(trial_rows, trials):
        if "plan_index" not in given:
            row["plan_index"] = first_seen.setdefault(row["trial_id"], len(first_seen))
    whole = {i: messages.get(i, row["message"]) if messages else row["message"] for i, row in enumerate(trial_rows)}
    for i, text in whole.items():
        trial_rows[i]["message"] = utf8_prefix(text, MESSAGE_PIECE_BYTES)
    first_id = trial_rows[0]["trial_id"] if trial_rows else ""
    counter_columns = list(counter_columns)
    sample_columns = (columns_of("samples", SAMPLE_COLUMNS, schema_version) +
                      [(name, "<i8", EVENTS) for name in counter_columns])
    sample_defaults = dict(SAMPLE_DEFAULTS, trial_id=first_id, **{name: 0 for name in counter_columns})
    epoch_defaults = dict(EPOCH_DEFAULTS, trial_id=first_id)
    root = default_attrs(trial_rows, counter_columns, schema_version)
    root.update(attrs or {})
    if runs is None:
        runs = [{"run": 0, "start_time": 1.7e9, "ranks": int(root["ranks"] if root["ranks"] is not None else 1),
                 "hosts": ",".join(root["hosts"] or []), "command_line": root["command_line"] or "",
                 "memsweep_version": root["memsweep_version"] or ""}]
    with h5py.File(path, "w", libver="latest") as file:
        for name, value in root.items():
            _write_attribute(file, name, value)
        stored = [{name: value for name, value in row.items() if name not in later} for row in trial_rows]
        _write_table(file, "trials", trial_columns, _records(stored, trial_columns, {}), None, schema_version)
        chunk = samples_chunk_rows(int(root["sampler_interval_ms"] or 10),
                                   float(runs[0].get("flush_interval", RUN_DEFAULTS["flush_interval"])))
        _write_table(file, "samples", sample_columns, _records(list(samples), sample_columns, sample_defaults),
                     chunk, schema_version)
        _write_table(file, "epochs", EPOCH_COLUMNS, _records(list(epochs), EPOCH_COLUMNS, epoch_defaults), None,
                     schema_version)
        run_columns = columns_of("runs", RUN_COLUMNS, schema_version)
        _write_table(file, "runs", run_columns, _records(list(runs), run_columns, RUN_DEFAULTS), None, schema_version)
        if schema_version >= 5:
            pieces = [{"trial_id": row["trial_id"], "attempt": row["attempt"], "run": row["run"], "piece": n,
                       "text": piece}
                      for i, row in enumerate(trial_rows) for n, piece in enumerate(message_pieces(whole[i]))]
            _write_table(file, "messages", MESSAGE_COLUMNS, _records(pieces, MESSAGE_COLUMNS, {}), None,
                         schema_version)
        if schema_version >= 6:
            search_rows = [complete_search(dict(s)) for s in searches]
            search_columns = columns_of("searches", SEARCH_COLUMNS, schema_version)
            search_rows = [{k: v for k, v in row.items() if k in {c[0] for c in search_columns}} for row in search_rows]
            _write_table(file, "searches", search_columns, _records(search_rows, search_columns, {}), None,
                         schema_version)
        if schema_version >= 11:
            _write_table(file, "metrics", METRIC_COLUMNS,
                         _records(list(metrics), METRIC_COLUMNS, dict(METRIC_DEFAULTS, trial_id=first_id)), None,
                         schema_version)
    return trial_rows
