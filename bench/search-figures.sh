#!/usr/bin/env bash
# The figures of docs/search.md (issue 30), measured with real trials:
#   1. trials to the answer per strategy (model, bisect, double), the same
#      sweep files run three times: memsweep's MLP (two), CNN and
#      AlexNet-like trainers and PyTorch (jobs/examples/torch_train.py as a
#      program trial), each at two limits;
#   2. accuracy: a plain grid at the resolution's step (2 %) over about
#      +-15 % around two of model's answers, with mem_budget = the limit;
#   3. wall time: a 12-search sweep on 3 ranks against the grid at 2 %
#      geometric steps over the whole range (run for 2 configurations,
#      extrapolated to 12);
#   4. one search on 1, 2 and 4 workers (bisect and model).
#
#   bench/search-figures.sh MEMSWEEP OUTDIR      e.g. build/memsweep /tmp/search-figures
#
# Prints markdown tables (and keeps every results file and log in OUTDIR).
# Sweep files: bench/search/*.toml; reader: bench/search/searches.py
# (/usr/bin/python3 with h5py). Trial counts do not depend on the machine's
# load; wall times do: quote them with the machine. One core per trial:
# OMP_NUM_THREADS=1 and --threads 1.
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 MEMSWEEP OUTDIR" >&2
  exit 2
fi
memsweep=$(realpath "$1")
out=$2
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(dirname "$here")
mkdir -p "$out"
cd "$out"
export OMP_NUM_THREADS=1
py=/usr/bin/python3
mpi=(mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1)
read_h5() { "$py" "$here/search/searches.py" "$@"; }
now() { date +%s.%N; }
since() { "$py" -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$1"; }
# run LOG [mpirun -np N] -- SWEEP RESULTS: memsweep run, its output in LOG; a
# non-zero exit (e.g. a failed search) is noted, not fatal.
run() {
  local log=$1; shift
  local launcher=()
  while [[ $1 != -- ]]; do launcher+=("$1"); shift; done
  shift
  if ! "${launcher[@]}" "$memsweep" run "$1" -o "$2" --force -q --threads 1 >"$log" 2>&1; then
    echo "note: memsweep run $1 exited non-zero (see $out/$log)" >&2
  fi
}
# A copy of a sweep file with [search]'s KEY set to VALUE.
with_key() {  # FILE KEY VALUE OUT
  sed -e "s|^$2 = .*|$2 = $3|" -e "s|\"jobs/examples/torch_train.py\"|\"$source_dir/jobs/examples/torch_train.py\"|" "$1" >"$4"
}
# Geometric values at 2 % steps: from LOW to HIGH, or around ANSWER (-8..+7 steps).
steps_range() { "$py" -c "
import sys
lo, hi = int(sys.argv[1]), int(sys.argv[2]); v = set(); x = float(lo)
while round(x) <= hi: v.add(int(round(x))); x *= 1.02
print(', '.join(map(str, sorted(v))))" "$1" "$2"; }
steps_around() { "$py" -c "
import sys
a, hi = int(sys.argv[1]), int(sys.argv[2])
print(', '.join(map(str, sorted({min(hi, int(round(a * 1.02 ** k))) for k in range(-8, 8)}))))" "$1" "$2"; }
# The configuration lines of a one-configuration sweep file ([defaults], no budget).
defaults_of() { sed -n '/^\[defaults\]/,/^\[\[trial\]\]/p' "$1" | grep -v '^\[\[trial\]\]'; }

repeats=${SEARCH_FIGURES_REPEATS:-3}   # runs of the timed sweeps of 3 and 4 (medians)
median() { "$py" -c "import sys, statistics; print(f'{statistics.median(map(float, sys.argv[1:])):.1f}')" "$@"; }
echo "# Search figures ($("$memsweep" --version 2>/dev/null | head -1), $(date -u +%Y-%m-%dT%H:%MZ), $(getconf _NPROCESSORS_ONLN) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo

# ---------------------------------------------------------------- 1
studies=(mlp-narrow mlp cnn alexnet)
[[ ${SEARCH_FIGURES_TORCH:-1} == 1 ]] && studies+=(torch)
: >strategies.tsv
for study in "${studies[@]}"; do
  "$memsweep" plan "$here/search/$study.toml" >"plan-$study.txt" 2>&1 || true
  for strategy in model bisect double; do
    with_key "$here/search/$study.toml" strategy "\"$strategy\"" "$study-$strategy.toml"
    start=$(now)
    run "run-$study-$strategy.log" -- "$study-$strategy.toml" "$study-$strategy.h5"
    echo "$study $strategy: $(since "$start") s" >>strategies-wall.txt
    read_h5 searches "$study-$strategy.h5" "$study" >>strategies.tsv
  done
done
echo "## 1. Trials to the answer per strategy (one rank; range, limits: bench/search/*.toml)"
echo
"$py" - strategies.tsv <<'PY'
import sys, collections
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
table = collections.OrderedDict()
for label, search, conf, what, limit, strategy, status, fits, nofit, trials, own, secs, pred in rows:
    key = (label, what, limit)
    table.setdefault(key, {"pred": pred})[strategy] = (status, fits, nofit, int(trials), float(secs))
strategies = ["model", "bisect", "double"]
print("| configuration | limit MiB | estimate's answer | " + " | ".join(f"{s}: trials (answer / does not fit, status)" for s in strategies) + " |")
print("|---|---|---|" + "---|" * len(strategies))
totals = collections.Counter(); seconds = collections.Counter(); found = collections.Counter()
for (label, what, limit), by in table.items():
    cells = []
    for s in strategies:
        if s not in by:
            cells.append("-"); continue
        status, fits, nofit, trials, secs = by[s]
        totals[s] += trials; seconds[s] += secs; found[s] += status == "found"
        cells.append(f"**{trials}** ({fits} / {nofit}{'' if status == 'found' else ', ' + status})")
    pred = by["pred"] if by["pred"] != "-1" else "-"
    print(f"| {what} ({label}.toml) | {limit} | {pred} | " + " | ".join(cells) + " |")
print("| **total** | | | " + " | ".join(f"**{totals[s]}** trials, {seconds[s]:.0f} s of trials, {found[s]}/{len(table)} found" for s in strategies) + " |")
PY
echo
echo "Sweep wall time per file (s): $(tr '\n' ';' <strategies-wall.txt)"
echo

# ---------------------------------------------------------------- 2
echo "## 2. Accuracy: a grid at 2 % steps around model's answer (mem_budget = the limit, epochs = 2)"
echo
echo "| configuration | limit MiB | search (model): answer / does not fit | grid values | grid at the answer / at the next value above it | search's bracket confirmed within 2 %? | grid's largest ok within the limit | non-monotonic points in the grid |"
echo "|---|---|---|---|---|---|---|---|"
for pick in "mlp 80" "cnn 120"; do
  read -r study limit <<<"$pick"
  line=$(awk -F'\t' -v s="$study" -v l="$limit" '$1==s && $6=="model" && $5==l' strategies.tsv)
  answer=$(cut -f8 <<<"$line"); nofit=$(cut -f9 <<<"$line"); what=$(cut -f4 <<<"$line")
  high=$(sed -n 's/^range = \[[0-9]*, *\([0-9]*\)\].*/\1/p' "$here/search/$study.toml")
  values=$(steps_around "$answer" "$high")
  { printf '[sweep]\nname = "grid-%s"\nseed = 3\n' "$study"
    defaults_of "$here/search/$study.toml"
    printf 'mem_budget = "%sMiB"\n\n[grid]\nbatch_size = [%s]\n' "$limit" "$values"; } >"grid-$study.toml"
  run "run-grid-$study.log" -- "grid-$study.toml" "grid-$study.h5"
  read_h5 grid "grid-$study.h5" "$limit" >"grid-$study.txt"
  largest=$(awk -F'\t' '$1=="largest" {print $2}' "grid-$study.txt")
  odd=$(awk -F'\t' '$1=="nonmonotonic" {print $2}' "grid-$study.txt")
  # The grid's point at the answer (the largest value <= it) and the next one above.
  read -r at above confirmed < <("$py" - "grid-$study.txt" "$answer" <<'PY'
import sys
points = [l.split("\t") for l in open(sys.argv[1]) if l[0].isdigit()]
a = int(sys.argv[2])
below = [p for p in points if int(p[0]) <= a]
over = [p for p in points if int(p[0]) > a]
at = below[-1] if below else None
up = over[0] if over else None
show = lambda p: f"{p[0]}:{'fits' if p[3].strip() == 'fits' else 'no'}" if p else "-"
ok = bool(at and up and at[3].strip() == "fits" and up[3].strip() != "fits" and int(up[0]) <= a * 1.02 + 1)
print(show(at), show(up), "yes" if ok else "no")
PY
)
  share=$("$py" -c "import sys; a, g = int(sys.argv[1]), int(sys.argv[2]); print(f'{(g - a) / a * 100:+.1f} %')" "$answer" "$largest")
  echo "| $what | $limit | $answer / $nofit | $(grep -c '^[0-9]' "grid-$study.txt") values, $(head -1 "grid-$study.txt" | cut -f1)..$(grep '^[0-9]' "grid-$study.txt" | tail -1 | cut -f1) | $at / $above | $confirmed | $largest ($share vs the answer) | $odd |"
done
echo
echo "Per-point status and peak (MiB; -1: stopped before it was measured): $out/grid-mlp.txt, $out/grid-cnn.txt."
echo

# ---------------------------------------------------------------- 3
echo "## 3. Wall time: 12 searches on 3 ranks (2 workers) against the grid a user would run"
echo
with_key "$here/search/wall.toml" strategy '"model"' wall-search.toml
times=()
for r in $(seq "$repeats"); do
  start=$(now)
  run "run-wall-search-$r.log" "${mpi[@]}" -np 3 -- wall-search.toml "wall-search-$r.h5"
  times+=("$(since "$start")")
  read_h5 searches "wall-search-$r.h5" wall >"wall-search-$r.tsv"
  awk -F'\t' '{t += $10} END {print t}' "wall-search-$r.tsv" >>wall-search-trials.txt
done
search_seconds=$(median "${times[@]}")
cp wall-search-1.tsv wall-search.tsv
search_trials=$(awk -F'\t' '{t += $10} END {print t}' wall-search.tsv)
search_trials_all=$(tr '\n' ' ' <wall-search-trials.txt)
search_found=$(awk -F'\t' '$7=="found"' wall-search.tsv | wc -l)
values=$(steps_range 8 2000)
nvalues=$(tr ',' '\n' <<<"$values" | wc -l)
# The grid for 2 of the 12 configurations (MLP 2048-1024, CNN 16-32) at the limit.
{ printf '[sweep]\nname = "wall-grid"\nseed = 3\n[defaults]\n'
  printf 'dataset = "synthetic"\nsynthetic = { shape = [1, 28, 28], classes = 10, train_size = 2000, test_size = 256 }\n'
  printf 'epochs = 2\nhidden = [64]\nmem_budget = "80MiB"\n'
  for conf in 'model = "mlp"\nhidden = [2048, 1024]' 'model = "cnn"\nchannels = [16, 32]'; do
    for b in ${values//,/}; do printf '[[trial]]\n%b\nbatch_size = %s\n' "$conf" "$b"; done
  done; } >wall-grid.toml
start=$(now)
run run-wall-grid.log "${mpi[@]}" -np 3 -- wall-grid.toml wall-grid.h5
grid_seconds=$(since "$start")
read -r grid_trials grid_trial_seconds < <(read_h5 trials wall-grid.h5)
"$py" - "$search_seconds" "$search_trials" "$search_found" "$grid_seconds" "$grid_trials" "$nvalues" "$grid_trial_seconds" "${times[*]}" "$search_trials_all" <<'PY'
import sys
ss, st, sf, gs, gt, nv, gts, all_times, all_trials = sys.argv[1:]
ss, gs, gts = float(ss), float(gs), float(gts); st, gt, nv = int(st), int(gt), int(nv)
g12 = gs / 2 * 12
print("| | trials | wall s (3 ranks) |")
print("|---|---|---|")
print(f"| search sweep, 12 configurations x 1 limit (80 MiB), model, range [8, 2000] ({sf}/12 found); median of runs of {all_times} s, trials {all_trials.strip()} | {st} | {ss:.0f} |")
print(f"| grid, 2 of the configurations, {nv} values each (8..2000 at 2 %), measured | {gt} | {gs:.0f} |")
print(f"| grid, 12 configurations (**extrapolated**: 2-configuration time x 6) | {nv * 12} | {g12:.0f} |")
print()
print(f"Ratio (extrapolated grid / search): **{g12 / ss:.1f}x** the wall time, {nv * 12 / st:.1f}x the trials. "
      f"The grid's trials summed {gts:.0f} s of training (mem_budget 80 MiB: trials past it stop early, "
      "so the grid is cheaper than without a budget).")
PY
echo

# ---------------------------------------------------------------- 4
echo "## 4. One search on 1, 2 and 4 workers (CNN 32-64 at 400 MiB, range [8, 2000], max_trials 30)"
echo
echo "| strategy | workers (ranks) | trials (per run) | answer / does not fit (per run) | status | wall s, median (per run) |"
echo "|---|---|---|---|---|---|"
for strategy in bisect model; do
  { sed -n '1,/^\[defaults\]/p' "$here/search/cnn.toml"
    defaults_of "$here/search/cnn.toml" | grep -v '^\[defaults\]' | sed 's/^channels = .*/channels = [32, 64]/'
    sed -n '/^\[\[trial\]\]/,$p' "$here/search/cnn.toml"; } >"one-$strategy.toml.in"
  with_key "one-$strategy.toml.in" strategy "\"$strategy\"" "one-$strategy.toml.1"
  with_key "one-$strategy.toml.1" limit '"400MiB"' "one-$strategy.toml.2"
  with_key "one-$strategy.toml.2" max_trials 30 "one-$strategy.toml"
  rm -f "one-$strategy.toml".{in,1,2}
  for ranks in 2 3 5; do
    times=(); trials=(); answers=(); statuses=()
    for r in $(seq "$repeats"); do
      start=$(now)
      run "run-one-$strategy-$ranks-$r.log" "${mpi[@]}" -np "$ranks" -- "one-$strategy.toml" "one-$strategy-$ranks-$r.h5"
      times+=("$(since "$start")")
      IFS=$'\t' read -r -a row < <(read_h5 searches "one-$strategy-$ranks-$r.h5" one)
      trials+=("${row[9]}"); answers+=("${row[7]}/${row[8]}"); statuses+=("${row[6]}")
    done
    echo "| $strategy | $((ranks - 1)) ($ranks) | ${trials[*]} | ${answers[*]} | $(printf '%s\n' "${statuses[@]}" | sort | uniq -c | xargs) | $(median "${times[@]}") (${times[*]}) |"
  done
done
echo
echo "Wall times are from a busy, shared $(getconf _NPROCESSORS_ONLN)-vCPU machine ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)); with 2 and 4 workers the ranks oversubscribe its cores (rank 0 mostly waits)."
