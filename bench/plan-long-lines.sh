#!/usr/bin/env bash
# `memsweep plan` of a [grid] axis of N batch sizes, all on one line and one
# per line (issue 28: toml11 made a line's values quadratic), N = 4k to 256k;
# the median wall time of 3 runs each. Usage:
#   bench/plan-long-lines.sh [MEMSWEEP] [TIMEOUT_S]
# (MEMSWEEP defaults to build/memsweep; a run past TIMEOUT_S, 120 by
# default, is shown as ">TIMEOUT_S").
set -euo pipefail
memsweep=${1:-build/memsweep}
limit=${2:-120}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir" <<'PY'
import sys
head = ('[defaults]\ndataset = "synthetic"\nsynthetic = { shape = [1, 4, 4], classes = 2, train_size = 8, '
        'test_size = 4, noise = 0.5, seed = 1 }\nhidden = [4]\n[grid]\n')
for n in (4096, 16384, 65536, 262144):
    for layout, sep in (("line", ", "), ("lines", ",\n")):
        with open(f"{sys.argv[1]}/{n}-{layout}.toml", "w") as f:
            f.write(head + "batch_size = [" + sep.join(str(k) for k in range(1, n + 1)) + "]\n")
PY
printf '%8s %14s %14s\n' values "one line (s)" "one per line (s)"
for n in 4096 16384 65536 262144; do
  row=()
  for layout in line lines; do
    times=()
    for _ in 1 2 3; do
      start=$(date +%s.%N)
      if timeout "$limit" "$memsweep" plan "$dir/$n-$layout.toml" >/dev/null; then
        times+=("$(echo "$(date +%s.%N) - $start" | bc)")
      else
        times+=(">$limit"); break  # one run past the limit is enough
      fi
    done
    if [ "${times[-1]}" = ">$limit" ]; then row+=(">$limit"); continue; fi
    row+=("$(printf '%s\n' "${times[@]}" | sort -g | sed -n 2p | xargs printf '%.2f')")
  done
  printf '%8s %14s %14s\n' "$n" "${row[0]}" "${row[1]}"
done
