#!/bin/bash
# validation.sh — `search --case` on validation cases: where the published
# layout ranks by the analytic estimate among the feasible layouts, and
# whether the best simulated layout is at least as fast as the published one
# (docs/search.md keeps the table).
#   bench/search/validation.sh [SIMTRAIN] [CASE.json ...]   (default: every case)
# TOP (default 8) layouts simulated besides the published one, JOBS (default 2)
# processes; the cases of hundreds of GPUs and more were searched with TOP=4 JOBS=1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
simtrain=${1:-$here/../../build/simtrain}
shift || true
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("$here"/../validation/*.json)
printf '| case | GPUs | estimated | published: estimate rank (top %%) | published simulated s | best simulated s | best layout | wall |\n'
printf '|---|---:|---:|---:|---:|---:|---|---:|\n'
for c in "${cases[@]}"; do
  t0=$(date +%s)
  out=$("$simtrain" search --case "$c" --top "${TOP:-8}" -j "${JOBS:-2}" --json --quiet) || { echo "| $(basename "$c" .json) | failed |"; continue; }
  t1=$(date +%s)
  num() { grep -o "\"$1\":[0-9.e+-]*" <<<"$2" | head -1 | cut -d: -f2; }
  pub=$(grep -o '"published":{[^}]*}' <<<"$out")
  best=$(grep -o '"best":{[^}]*}' <<<"$out")
  est=$(num estimated "$out")
  rank=$(num estimate_rank "$pub")
  printf '| %s | %s | %s | %s (%.1f%%) | %.4f | %.4f | `%s` | %d s |\n' "$(basename "$c" .json)" \
    "$(num num_gpus "$out")" "$est" "$rank" "$(awk -v r="$rank" -v n="$est" 'BEGIN{print 100*r/n}')" \
    "$(num step_time_s "$pub")" "$(num step_time_s "$best")" \
    "$(grep -o '"layout":"[^"]*"' <<<"$best" | cut -d'"' -f4)" $((t1 - t0))
done
