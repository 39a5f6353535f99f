"""What a results file of an older schema lacks, as the analysis reads it: the "not measured" values of the columns
its schema did not have, and the fallbacks for what a file does not record (final statuses before schema 10, run
limits and threads before schema 5, datasets' published split sizes).

Apart from reading (load.py) and deriving (derived.py) so that the schemas' history is in one place; it imports no
other module of the package, so that both can import it.
"""

import math
import shlex

from ._deps import require

require("pandas")

import pandas as pd  # noqa: E402

# How each trial's process ended (schema 3), as the rows of an older file read: not measured. The same values
# a schema 3 file holds when no process was started (-1 bytes and seconds read as NaN, like every such figure).
TRIAL_COLUMNS_OF_SCHEMA_3 = {"pid": -1, "end_signal": 0, "oom_killed": 0, "end_cause": "", "isolation": "",
                             "start_seconds": math.nan, "cgroup_peak": math.nan}
# Who trained each trial and what its process tree did (schema 4), as the rows of an older file read: memsweep's
# own trainer, no free parameters, the tree's size not recorded (-1), its peaks not measured (NaN, -1 in a file).
BUILTIN_TRAINER = "memsweep"
NO_PARAMS = "{}"
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
# The training examples each epoch went through (schema 12): an older file does not say (NaN; counters.py then
# works them out). The last entry of this frozen table: from schema 12 on, each column's since: and missing:
# attributes say what a file lacks and what "not measured" is, so that a new column needs no entry here.
TRIAL_COLUMNS_OF_SCHEMA_12 = {"train_examples": math.nan}
ADDED_COLUMNS = {"trials": {**TRIAL_COLUMNS_OF_SCHEMA_3, **TRIAL_COLUMNS_OF_SCHEMA_4, **TRIAL_COLUMNS_OF_SCHEMA_6,
                            **TRIAL_COLUMNS_OF_SCHEMA_7, **TRIAL_COLUMNS_OF_SCHEMA_8, **TRIAL_COLUMNS_OF_SCHEMA_10,
                            **TRIAL_COLUMNS_OF_SCHEMA_12},
                 "samples": SAMPLE_COLUMNS_OF_SCHEMA_7, "searches": TRIAL_COLUMNS_OF_SCHEMA_8,
                 "runs": RUN_COLUMNS_OF_SCHEMA_9}

# Statuses whose row is the trial's result, so that the analysis counts the rows memsweep summary and a resume
# count. A file of schema 10 says which they are (its root attribute final_statuses, from is_final in
# src/results/rows.cpp); these are the ones of the memsweep that wrote older files (file_final_statuses).
# `interrupted` and `killed` are not final: a resume may run such a trial again (killed: per --retry-killed), and its
# row keeps only the peak at which it stopped. A trial with no final row stands by its last one (standing_rows), as
# in memsweep summary.
FINAL_STATUSES = ("ok", "failed", "diverged", "over_budget", "timeout")


def file_final_statuses(attribute):
    """The statuses a file calls final: its final_statuses attribute (schema 10), else FINAL_STATUSES."""
    return tuple(attribute) if attribute is not None and len(attribute) else FINAL_STATUSES


# /runs' limits on examples (schema 5 on) and the options that set them. A resume not given such an option
# inherits the run before's limit (src/results/run_record.cpp), so its command line does not show it: only a file
# older than the columns has nothing but the command line to read them from.
RUN_LIMITS = {"max_train_examples": "--max-train-examples", "max_test_examples": "--max-test-examples"}
# /runs' threads (schema 5 on; 0: the CPUs each rank may use), read like the limits: a resume inherits them, and one
# with --allow-changed-options --threads N trained on N (oneDNN sizes its scratchpad for the threads).
RUN_THREADS = {"threads": "--threads"}
RUN_SETTINGS = {**RUN_LIMITS, **RUN_THREADS}


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


# Published training split sizes (what memsweep loads when the files are complete): no file records a dataset's
# size, only a run's limit on it (RUN_LIMITS).
PUBLISHED_TRAIN_EXAMPLES = {"mnist": 60000, "fashion-mnist": 60000, "cifar-10": 50000}
