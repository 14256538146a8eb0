# bench/measure.sh — sourced by the bench scripts: run one simtrain command
# under /usr/bin/time -v and print, tab-separated, its wall seconds, peak RSS
# (MiB), and from its --json summary the step time, activities and simulated
# ranks.
#   measure SIMTRAIN ARGS...   (ARGS must include --json)
measure() {
  local log json wall rss step ev sr
  log=$(mktemp)
  json=$(/usr/bin/time -v "$@" 2>"$log")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
           for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$log")
  rm -f "$log"
  step=$(sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p' <<<"$json")
  ev=$(sed -n 's/.*"events":\([^,]*\),.*/\1/p' <<<"$json")
  sr=$(sed -n 's/.*"simulated_ranks":\([^,]*\),.*/\1/p' <<<"$json")
  printf '%s\t%s\t%s\t%s\t%s\n' "$wall" "$rss" "$step" "$ev" "$sr"
}
