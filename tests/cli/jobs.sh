#!/bin/bash
# jobs.sh — `simtrain run --job ... / --jobs FILE`: several jobs on one
# fabric (docs/jobs.md).  Two 2-GPU DP jobs on tests/data/jobs_fattree.json
# sharing the 2:1 leaf links: together = alone + the bandwidth term again
# (S / 0.94 wire bytes at 50 GB/s), checked by awk; disjoint leaves: equal;
# the table, --json keys, a jobs file, a model job, background traffic, the
# results file and report, same bytes twice, and the errors.
. "$(dirname "$0")/../cli_lib.sh" "$@"
data=$(cd "$(dirname "$0")/../data" && pwd)
cl=$data/jobs_fattree.json
dp=$data/jobs_dp2.json

close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d;
  exit !(d <= t * (b > 0 ? b : -b)) }'; }

# ---- sharing: together = alone + S / (0.94 x 50 GB/s) -------------------------
json=$("$simtrain" run --job "a:$dp@gpus=0,2" --job "b:$dp@gpus=1,3" --cluster "$cl" --json --quiet); rc=$?
check "two shared jobs exit 0" "[ $rc -eq 0 ]"
for k in jobs name gpus step_time_alone_s step_time_together_s slowdown shared_links bytes; do
  check "--json has '$k'" "grep -q '\"$k\":' <<<'$json'"
done
alone=$(json_num "$json" step_time_alone_s)
together=$(json_num "$json" step_time_together_s)
want=$(awk -v a="$alone" 'BEGIN { printf "%.17g", a + 1073741824 / 0.94 / 50e9 }')
check "together ($together) = alone + the bandwidth term ($want)" "close $together $want 1e-9"
check "four shared leaf links" "[ \$(grep -o '\"ft-g1\\.[01]-\\(up\\|down\\)\"' <<<'$json' | wc -l) -eq 4 ]"
check "both jobs on them" "grep -q '\"jobs\":\\[\"a\",\"b\"\\]' <<<'$json'"
text=$("$simtrain" run --job "a:$dp@gpus=0,2" --job "b:$dp@gpus=1,3" --cluster "$cl" --quiet)
check "table: job rows" "grep -q '^a  *workload  *2  0,2' <<<'$text' && grep -q '^b ' <<<'$text'"
check "table: the links they fought over" "grep -q 'links they fought over' <<<'$text' && grep -q 'ft-g1.0-up.*a,b' <<<'$text'"
exact=$("$simtrain" run --job "a:$dp@gpus=0,2" --job "b:$dp@gpus=1,3" --cluster "$cl" --json --quiet --exact)
check "--exact gives the same times" "[ '$(json_num "$exact" step_time_together_s)' = '$together' ]"

# ---- disjoint leaves: no slowdown, nothing shared -------------------------------
json=$("$simtrain" run --job "$dp@gpus=0-1" --job "$dp@gpus=2-3" --cluster "$cl" --json --quiet)
check "default names job1, job2" "grep -q '\"name\":\"job1\"' <<<'$json' && grep -q '\"name\":\"job2\"' <<<'$json'"
check "disjoint: together = alone" "[ '$(json_num "$json" step_time_alone_s)' = '$(json_num "$json" step_time_together_s)' ]"
check "disjoint: slowdown 1" "[ '$(json_num "$json" slowdown)' = 1 ]"
check "disjoint: no shared links" "grep -q '\"shared_links\":\\[\\]' <<<'$json'"

# ---- a jobs file (workloads beside it), a model job, background ----------------
cp "$dp" "$tmp/dp.json"
cat >"$tmp/jobs.json" <<JSON
[{"name": "train", "workload": "dp.json", "gpus": "0,2"},
 {"name": "noise", "background": "alltoall:10G:8", "gpus": "1,3"}]
JSON
json=$("$simtrain" run --jobs "$tmp/jobs.json" --cluster "$cl" --json --quiet -o "$tmp/j.h5"); rc=$?
check "jobs file exits 0" "[ $rc -eq 0 ]"
check "background kind" "grep -q '\"kind\":\"background\"' <<<'$json'"
check "background slows the job" "awk -v s=$(json_num "$json" slowdown) 'BEGIN { exit !(s > 1) }'"
rep=$("$simtrain" report "$tmp/j.h5")
check "report shows the jobs" "grep -q 'Jobs sharing the fabric' <<<'$rep' && grep -q '^noise  *background' <<<'$rep'"
"$simtrain" run --jobs "$tmp/jobs.json" --cluster "$cl" --json --quiet -o "$tmp/k.h5" >/dev/null
# (the file holds its creation time, the report the run's wall time)
check "same report twice" "[ \"\$(\"$simtrain\" report $tmp/k.h5 | grep -v '(results \\|s wall, ')\" = \"\$(grep -v '(results \\|s wall, ' <<<'$rep')\" ]"
json=$("$simtrain" run --job "m:model=llama3-8b,layout=tp=1,pp=1,mbs=1,gbs=2,seq=512@gpus=0-1" \
  --job "$dp@gpus=2,3" --cluster "$cl" --json --quiet); rc=$?
check "a model job exits 0" "[ $rc -eq 0 ] && grep -q '\"kind\":\"model\"' <<<'$json'"

# ---- errors ---------------------------------------------------------------------
err() { "$simtrain" run "$@" --cluster "$cl" --quiet 2>&1 >/dev/null; }
check "overlap names both jobs" "[ \"\$(err --job a:$dp@gpus=0,1 --job b:$dp@gpus=1,2)\" = \"simtrain: error: jobs 'a' and 'b' both use GPU 1 (gpus '0,1' and '1,2')\" ]"
"$simtrain" run --job "a:$dp@gpus=0,1" --job "b:$dp@gpus=1,2" --cluster "$cl" --quiet 2>/dev/null
check "overlap exits 1" "[ $? -eq 1 ]"
check "no @gpus" "err --job $dp | grep -q \"expected \\[NAME:\\]WHAT@gpus=LIST\""
check "--job with --model" "err --job $dp@gpus=0,1 --model llama3-8b | grep -q 'take the workloads from their specs'"
check "bad rate" "err --job $dp@gpus=0,2 --job background=alltoall:fast@gpus=1,3 | grep -q \"'fast' is not a rate\""
echo '[{"name": "x", "gpus": "0,1", "colour": 1}]' >"$tmp/bad.json"
check "jobs file: unknown key" "err --jobs $tmp/bad.json | grep -q \"jobs '$tmp/bad.json': \\[0\\]: key 'colour' is unknown\""
echo '[{"name": "x", "gpus": "0,1"}]' >"$tmp/bad.json"
check "jobs file: no source" "err --jobs $tmp/bad.json | grep -q \"give one of 'workload', 'model'\""

exit $((fails > 0))
