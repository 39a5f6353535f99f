#!/usr/bin/python3
"""Markdown table of trainer benchmark JSON lines (bench/run-trainer-bench.sh).

Usage: /usr/bin/python3 bench/trainer_table.py [results.jsonl ...]
       (default build/bench/trainer-bench.jsonl; standard library only)

Rows are (arch, batch, threads, optimizer). Several lines for the same row and
variant (ROUNDS > 1) are pooled: the figure is the median over all their
repeats. Variants: memsweep (each step on the threads its work keeps busy);
memsweep-all (--step-threads all: every thread at every step, the baseline of
that choice); torch with OpenBLAS (blas_kind "openblas"); torch with any other
BLAS (the system default). ratio = memsweep / torch+OpenBLAS samples per second
(> 1: memsweep is faster).

A second table sets each shape's thread counts side by side: samples per
second on 1 thread and on more, with and without the choice, and the ratio to
1 thread measured in the same run (>= 1: more threads were not slower).
"""

import json
import os
import statistics
import sys


def variant(rec):
    if rec.get("framework") == "memsweep" and rec.get("step_threads") == "all" and int(rec["threads"]) > 1:
        return "memsweep-all"
    if rec.get("framework") != "torch":
        return rec.get("framework", "?")
    if rec.get("blas_kind") == "openblas":
        return "torch+openblas"
    return "torch+default"


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


def thread_table(rows, used, med):
    """memsweep on 1 thread against more, with the choice and without."""
    shapes = []
    for arch, batch, _, opt in rows:
        if (arch, batch, opt) not in shapes:
            shapes.append((arch, batch, opt))
    counts = sorted({k[2] for k in rows if k[2] > 1})
    if not counts:
        return
    print("| shape | batch | optimizer | 1 thread | threads | chosen | memsweep | ratio to 1 | every thread "
          "| ratio to 1 |")
    print("|---|--:|---|--:|--:|--:|--:|--:|--:|--:|")
    for arch, batch, opt in shapes:
        one = rows.get((arch, batch, 1, opt), {})
        base = statistics.median(one["memsweep"]) if one.get("memsweep") else None
        for t in counts:
            key = (arch, batch, t, opt)
            if key not in rows:
                continue
            fit, every = med(key, "memsweep"), med(key, "memsweep-all")
            r_fit = f"{fit / base:.2f}x" if fit and base else "-"
            r_all = f"{every / base:.2f}x" if every and base else "-"
            print(f"| {arch} | {batch} | {opt} | {fmt(base)} | {t} | {used.get(key, '-')} | {fmt(fit)} | {r_fit} "
                  f"| {fmt(every)} | {r_all} |")


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    paths = argv or [os.path.join(here, "..", "build", "bench", "trainer-bench.jsonl")]
    rows = {}  # key -> variant -> list of repeats (samples/s)
    used = {}  # key -> threads the memsweep trainer's steps ran with
    blas = {}  # variant -> set of (blas_kind, path)
    loads = []
    warnings = []
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as e:
                    warnings.append(f"{path}:{n}: bad JSON ({e})")
                    continue
                key = (rec["arch"], int(rec["batch"]), int(rec["threads"]), rec.get("optimizer", "?"))
                var = variant(rec)
                reps = rec.get("repeats") or [rec["samples_per_sec"]]
                rows.setdefault(key, {}).setdefault(var, []).extend(float(v) for v in reps)
                if var == "memsweep" and "threads_used" in rec:
                    used[key] = int(rec["threads_used"])
                loads.extend(float(v) for v in rec.get("loadavg") or [])
                if rec.get("framework") == "torch":
                    blas.setdefault(var, set()).add((rec.get("blas_kind"), rec.get("blas")))
                    if rec.get("tag") == "openblas" and rec.get("blas_kind") != "openblas":
                        warnings.append(f"{path}:{n}: asked for OpenBLAS but torch loaded {rec.get('blas')}")

    def med(key, var):
        v = rows[key].get(var)
        return statistics.median(v) if v else None

    def ms(key, var):
        s = med(key, var)
        return None if not s else 1000.0 * key[1] / s

    print("| shape | batch | threads | optimizer | memsweep samples/s | torch+OpenBLAS samples/s "
          "| ratio | torch+default-BLAS samples/s | memsweep ms/step | torch+OpenBLAS ms/step "
          "| torch+default ms/step | OpenBLAS/default |")
    print("|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for key in rows:  # insertion order = order of the run
        m, o, d = med(key, "memsweep"), med(key, "torch+openblas"), med(key, "torch+default")
        ratio = f"{m / o:.2f}x" if m and o else "-"
        speedup = f"{o / d:.1f}x" if o and d else "-"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {fmt(m)} | {fmt(o)} | {ratio} | {fmt(d)} "
              f"| {fmt(ms(key, 'memsweep'), 3)} | {fmt(ms(key, 'torch+openblas'), 3)} "
              f"| {fmt(ms(key, 'torch+default'), 3)} | {speedup} |")
    print()
    thread_table(rows, used, med)
    print()
    print("BLAS loaded by torch (library defining the sgemm_ libtorch_cpu calls):")
    for var in sorted(blas):
        for kind, path in sorted(blas[var], key=lambda kp: (str(kp[0]), str(kp[1]))):
            print(f"- {var}: {kind}: `{path}`")
    if loads:
        print()
        print(f"1-minute load average during the runs: {min(loads):.2f} to {max(loads):.2f} "
              f"on {os.cpu_count()} CPUs (above the thread count means other work competed).")
    for w in warnings:
        print(f"WARNING: {w}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
