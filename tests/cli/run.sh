#!/bin/bash
# run.sh — `simtrain run` end to end: a workload file replayed, the HDF5
# results file as h5dump sees it, report --json printing the very numbers
# run --json printed, and the failures with their exit statuses.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

json=$("$simtrain" run --workload "$root/examples/pipeline2.json" --cluster node8 -o "$tmp/run.h5" --timeline --json --quiet); rc=$?
check "run exits 0" "[ $rc -eq 0 ]"
for key in num_gpus step_time_s tokens_per_step tokens_per_s tokens_per_s_per_gpu \
           model_flops_per_step model_tflops_per_gpu mfu compute_s exposed_comm_s bubble_s \
           peak_memory_bytes; do
  check "run --json has $key" "grep -q '\"$key\":' <<<\"\$json\""
done
check "peak memory is null for a hand-written workload" "grep -q '\"peak_memory_bytes\":null' <<<\"\$json\""
check "one line of JSON" "[ \$(wc -l <<<\"\$json\") -eq 1 ]"
check "no temporary file left" "[ -z \"\$(ls \"$tmp\" | grep -v '^run.h5$')\" ]"

report=$("$simtrain" report "$tmp/run.h5" --json); rc=$?
check "report --json exits 0" "[ $rc -eq 0 ]"
check "report --json prints what run --json printed" "[ \"\$report\" = \"\$json\" ]"

if command -v h5dump >/dev/null; then
  h=$(h5dump -H "$tmp/run.h5"); rc=$?
  check "h5dump reads the file" "[ $rc -eq 0 ]"
  for obj in 'GROUP "config"' 'GROUP "summary"' 'DATASET "ranks"' 'DATASET "collectives"' \
             'DATASET "links"' 'DATASET "timeline"' 'ATTRIBUTE "simtrain_version"' \
             'ATTRIBUTE "command_line"' 'ATTRIBUTE "created_utc"' 'ATTRIBUTE "step_time_s"'; do
    check "h5dump shows $obj" "grep -q '$obj' <<<\"\$h\""
  done
else
  echo "note: h5dump not installed, HDF5 layout checks skipped"
fi

# The same run twice gives the same prediction, bit for bit: once with a
# results file, once without (which keeps no collective records or link loads).
again=$("$simtrain" run --workload "$root/examples/pipeline2.json" --cluster node8 --json --quiet)
strip() { sed 's/"sim_wall_s":[^,]*,//' <<<"$1"; }
check "deterministic" "[ \"\$(strip \"\$again\")\" = \"\$(strip \"\$json\")\" ]"

# An unmatched collective ends the run with exit 3 and names it, at once.
start=$(date +%s.%N)
err=$("$simtrain" run --workload "$here/../data/unmatched.json" --cluster node8 2>&1 >/dev/null); rc=$?
end=$(date +%s.%N)
check "unmatched collective exits 3" "[ $rc -eq 3 ]"
check "unmatched collective message" "[ \"\$err\" = \"simtrain: error: workload '$here/../data/unmatched.json': collective allreduce (op 0 'grad_sync' of program 'reduces', rank 0) on communicator 'world' never completed: 3 of 4 ranks reached it (0,1,3); ranks still missing: 2\" ]"
check "unmatched collective within a second" "awk -v s=$start -v e=$end 'BEGIN { exit !(e - s < 1.0) }'"

err=$("$simtrain" run --workload "$tmp/none.json" --cluster node8 2>&1 >/dev/null); rc=$?
check "missing workload exits 2" "[ $rc -eq 2 ]"
check "missing workload names the file" "grep -q \"none.json\" <<<\"\$err\""
err=$("$simtrain" run --workload "$root/examples/pipeline2.json" --cluster nosuch 2>&1 >/dev/null); rc=$?
check "unknown cluster exits 2" "[ $rc -eq 2 ]"
err=$("$simtrain" run --workload x --model y 2>&1 >/dev/null); rc=$?
check "two workload sources exit 1" "[ $rc -eq 1 ]"
err=$("$simtrain" run --workload "$root/examples/pipeline2.json" 2>&1 >/dev/null); rc=$?
check "missing cluster exits 1" "[ $rc -eq 1 ]"
"$simtrain" run --help >/dev/null; rc=$?
check "run --help exits 0" "[ $rc -eq 0 ]"

# inputs are read once, as streams: a FIFO and standard input ("-") replay
# as the file does
step() { sed -n 's/.*"step_time_s":\([^,]*\),.*/\1/p'; }
ref=$("$simtrain" run --workload "$root/examples/pipeline2.json" --cluster node8 --json --quiet | step)
mkfifo "$tmp/wl.fifo"
(cat "$root/examples/pipeline2.json" >"$tmp/wl.fifo" &)
out=$(timeout 30 "$simtrain" run --workload "$tmp/wl.fifo" --cluster node8 --json --quiet | step)
check "a FIFO workload replays" "[ -n \"\$ref\" ] && [ \"\$out\" = \"\$ref\" ]"
out=$(gzip -c "$root/examples/pipeline2.json" | "$simtrain" run --workload - --cluster node8 --json --quiet | step)
check "a gzip workload on standard input replays" "[ \"\$out\" = \"\$ref\" ]"

# a path with a quote is escaped in the results file's JSON (/config)
mkdir -p "$tmp/q\"d"
cp "$root/examples/pipeline2.json" "$tmp/q\"d/w.json"
"$simtrain" run --workload "$tmp/q\"d/w.json" --cluster node8 -o "$tmp/q.h5" --quiet >/dev/null; rc=$?
check "a quoted path runs" "[ $rc -eq 0 ]"
cfg=$(h5dump -a /config/workload "$tmp/q.h5" 2>/dev/null)
check "a quoted path is escaped in /config" "grep -qF 'q\\\"d/w.json\"}' <<<\"\$cfg\""

[ $fails -eq 0 ] && echo "run: all checks passed"
exit $((fails > 0))
