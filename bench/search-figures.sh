#!/usr/bin/env bash
# The figures of docs/search.md: trials per strategy side by side, a
# brute-force grid around two answers, a search sweep's wall time against
# the grid a user would otherwise run, and one search on 1, 2 and 4 workers.
#
#   bench/search-figures.sh build/memsweep OUTDIR
#
# Trial counts do not depend on the machine's load; wall times do (quote
# them with the machine). OMP_NUM_THREADS=1: one core per trial.
set -euo pipefail
memsweep=$(realpath "$1")
out=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$out"
export OMP_NUM_THREADS=1
mpi=(mpirun --allow-run-as-root --oversubscribe)
table() { /usr/bin/python3 "$here/search/searches.py" "$@"; }
seconds() { /usr/bin/python3 -c "import sys,time; print(round(time.time()-float(sys.argv[1]),1))" "$1"; }

# A sweep file with [search]'s strategy (or another key) set to a value.
with_key() {  # FILE KEY VALUE OUT
  grep -v "^$2 = " "$1" >"$4"
  echo "$2 = $3" >>"$4"
}

echo "== 1. trials to the answer per strategy (one rank)"
for study in mlp cnn torch; do
  for strategy in model bisect double; do
    with_key "$here/search/$study.toml" strategy "\"$strategy\"" "$study-$strategy.toml"
    sed -i "s|MEMSWEEP_SOURCE|$(dirname "$here")|" "$study-$strategy.toml"
    rm -f "$study-$strategy.h5"
    "$memsweep" run "$study-$strategy.toml" -o "$study-$strategy.h5" -q
    table "$study-$strategy.h5" "$study $strategy" | tee -a strategies.tsv
  done
done

echo "== 2. accuracy: a grid at the resolution's step around two answers"
# The MLP [2048, 1024] at 200 MiB and the CNN at 300 MiB, from model's answers.
accuracy_grid() {  # NAME HIDDEN_OR_MODEL_LINES LIMIT ANSWER
  local name=$1 fields=$2 limit=$3 answer=$4
  local values
  values=$(/usr/bin/python3 -c "
import sys
a=int(sys.argv[1]); v=[]; x=a*0.85
while x <= a*1.15: v.append(int(round(x))); x*=1.02
print(', '.join(str(b) for b in sorted(set(v))))" "$answer")
  printf '[defaults]\n%s\nmem_budget = "%s"\nepochs = 2\n[grid]\nbatch_size = [%s]\n' "$fields" "$limit" "$values" >"grid-$name.toml"
  rm -f "grid-$name.h5"
  "$memsweep" run "grid-$name.toml" -o "grid-$name.h5" -q || true
  /usr/bin/python3 - "grid-$name.h5" "$limit" "$answer" "$name" <<'PY' | tee -a accuracy.tsv
import sys, h5py
path, limit_text, answer, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
limit = float(limit_text.replace("MiB", "")) * 2**20
rows = sorted(h5py.File(path, "r")["trials"][:], key=lambda r: r["batch_size"])
fits = [int(r["batch_size"]) for r in rows if r["status"].rstrip(b"\0") == b"ok" and r["rss_peak"] <= limit]
above = [int(r["batch_size"]) for r in rows if int(r["batch_size"]) not in fits]
print(f"{name}\tsearch {answer}\tgrid's largest fit {max(fits) if fits else '-'}\t"
      f"grid values that did not fit below it: {[b for b in above if fits and b < max(fits)]}")
PY
}
mlp_answer=$(awk -F'\t' '$1=="mlp model" && $3==2 && $4==200 {print $6}' strategies.tsv)
cnn_answer=$(awk -F'\t' '$1=="cnn model" && $3==1 && $4==300 {print $6}' strategies.tsv)
accuracy_grid mlp $'dataset = "synthetic"\nmodel = "mlp"\nhidden = [2048, 1024]\nseed = 3' 200MiB "$mlp_answer"
accuracy_grid cnn $'dataset = "synthetic"\nsynthetic = { shape = [3, 32, 32], classes = 10, train_size = 2048, test_size = 256 }\nmodel = "cnn"\nchannels = [32, 64]\nhidden = [64]\nseed = 3' 300MiB "$cnn_answer"

echo "== 3. wall time: 12 searches on 3 ranks against the grid at the same resolution"
cat "$here/search/mlp.toml" >wall-search.toml
sed -i 's/^hidden = .*/hidden = [[1024], [2048], [2048, 1024], [4096], [4096, 1024], [4096, 4096]]/' wall-search.toml
rm -f wall-search.h5
start=$(date +%s.%N)
"${mpi[@]}" -np 3 "$memsweep" run wall-search.toml -o wall-search.h5 -q
search_seconds=$(seconds "$start")
search_trials=$(table wall-search.h5 | awk -F'\t' '{t += $8} END {print t}')
# The grid: geometric 2 % steps over the whole range, for one configuration
# and one limit, run here; the sweep's 12 cost 12 times that (extrapolated).
values=$(/usr/bin/python3 -c "
v=[]; x=8.0
while x <= 6000: v.append(int(round(x))); x*=1.02
print(', '.join(str(b) for b in sorted(set(v))))")
printf '[defaults]\ndataset = "synthetic"\nmodel = "mlp"\nhidden = [2048, 1024]\nseed = 3\nepochs = 2\nmem_budget = "200MiB"\n[grid]\nbatch_size = [%s]\n' "$values" >wall-grid.toml
rm -f wall-grid.h5
start=$(date +%s.%N)
"${mpi[@]}" -np 3 "$memsweep" run wall-grid.toml -o wall-grid.h5 -q || true
grid_seconds=$(seconds "$start")
grid_trials=$(/usr/bin/python3 -c "import h5py,sys; print(len(h5py.File(sys.argv[1])['trials']))" wall-grid.h5)
echo -e "search sweep: 12 searches, $search_trials trials, $search_seconds s on 3 ranks" | tee wall.txt
echo -e "grid, 1 configuration at 1 limit: $grid_trials trials, $grid_seconds s on 3 ranks; x12 (extrapolated): $((grid_trials * 12)) trials" | tee -a wall.txt

echo "== 4. one search on 1, 2 and 4 workers"
for strategy in bisect model; do
  with_key "$here/search/mlp.toml" strategy "\"$strategy\"" one-$strategy.toml
  sed -i 's/^hidden = .*/hidden = [[2048, 1024]]/; s/^limit = .*/limit = "200MiB"/; s/^max_trials = .*/max_trials = 40/' one-$strategy.toml
  for ranks in 2 3 5; do
    rm -f one-$strategy-$ranks.h5
    start=$(date +%s.%N)
    "${mpi[@]}" -np $ranks "$memsweep" run one-$strategy.toml -o one-$strategy-$ranks.h5 -q
    echo -e "$strategy\t$((ranks - 1)) workers\t$(seconds "$start") s\t$(table one-$strategy-$ranks.h5 | cut -f5-8)" | tee -a workers.tsv
  done
done
