#!/bin/bash
# spearman.sh — is the search's analytic estimate worth its name?  For three
# searches (a dense 70B model, an MoE model, a long sequence that needs
# context parallelism), the best 50 layouts by the estimate are simulated
# and the rank correlation (Spearman) between estimate and simulated step
# is printed; docs/search.md keeps the figures.
#   bench/search/spearman.sh [SIMTRAIN] [-j N]
set -u
here=$(cd "$(dirname "$0")" && pwd)
simtrain=${1:-$here/../../build/simtrain}
jobs=${3:-2}
searches=(
  "--model llama3-70b --cluster dgx-h100:4 --gbs 64 --seq 4096"
  "--model mixtral-8x7b --cluster dgx-h100:4 --gbs 64 --seq 4096"
  "--model llama3-8b --cluster dgx-h100:2 --gbs 8 --seq 65536"
)
# Spearman's rho of the pairs on stdin ("estimate step" per line), ties
# ranked by their mean position
rho() {
  awk '
    { e[NR] = $1; s[NR] = $2 }
    function ranks(v, r,   i, j, n, k, pos) {
      n = NR
      for (i = 1; i <= n; i++) idx[i] = i
      for (i = 2; i <= n; i++) { k = idx[i]; j = i - 1
        while (j >= 1 && v[idx[j]] > v[k]) { idx[j + 1] = idx[j]; j-- }
        idx[j + 1] = k }
      for (i = 1; i <= n; i = j + 1) { j = i
        while (j < n && v[idx[j + 1]] == v[idx[i]]) j++
        pos = (i + j) / 2
        for (k = i; k <= j; k++) r[idx[k]] = pos }
    }
    END {
      ranks(e, re); ranks(s, rs)
      for (i = 1; i <= NR; i++) { me += re[i]; ms += rs[i] }
      me /= NR; ms /= NR
      for (i = 1; i <= NR; i++) {
        a += (re[i] - me) * (rs[i] - ms); b += (re[i] - me) ^ 2; c += (rs[i] - ms) ^ 2 }
      printf "%.3f", a / sqrt(b * c)
    }'
}
printf '| search | simulated | Spearman rho | estimate / simulated (min, median, max) | wall |\n|---|---:|---:|---:|---:|\n'
for s in "${searches[@]}"; do
  t0=$(date +%s)
  # shellcheck disable=SC2086
  out=$("$simtrain" search $s --top 50 -j "$jobs" --json --quiet) || exit 1
  [ -n "${SEARCH_KEEP:-}" ] && printf '%s\n' "$out" >>"$SEARCH_KEEP"
  t1=$(date +%s)
  pairs=$(grep -o '"estimate_s":[^,]*,"estimate_bubble_s":[^,]*,"estimate_exposed_comm_s":[^,]*,"step_time_s":[0-9][0-9.e+-]*' < <(sed 's/"pruned".*//' <<<"$out") |
    sed 's/"estimate_s":\([^,]*\),.*"step_time_s":\(.*\)/\1 \2/')
  n=$(grep -c . <<<"$pairs")
  ratios=$(awk '{ print $1 / $2 }' <<<"$pairs" | sort -g)
  printf '| %s | %d | %s | %.3f, %.3f, %.3f | %d s |\n' "$s" "$n" "$(rho <<<"$pairs")" \
    "$(head -1 <<<"$ratios")" "$(sed -n "$(((n + 1) / 2))p" <<<"$ratios")" "$(tail -1 <<<"$ratios")" $((t1 - t0))
done
