#!/bin/bash
# sweep.sh — `simtrain sweep`, `merge`, `report` and `plot` on sweep files:
# the number of points and of failures (counted by hand from the spec), a
# row against the same point run alone, --json against report --json, shards
# merged to the bytes of the whole sweep, a shard killed and run again, the
# merge's refusals, time-outs, the plan, the pictures and bad specs.
. "$(dirname "$0")/../cli_lib.sh" "$@"
data=$(cd "$(dirname "$0")/../data/sweep" && pwd)
spec=$data/small.json

# ---- the whole sweep ----------------------------------------------------------
# small.json: llama3-8b x 3 layouts + megatron-1.7b x search = 4 requests, x 2
# clusters x 2 GPU counts = 16 points.  tp=16 fails on 8 GPUs (not divisible)
# and on 16 (8 KV heads): 2 clusters x 2 = 4 failures -> exit 64 + 4 = 68.
"$simtrain" sweep "$spec" -j 2 -o "$tmp/whole.h5" --json --quiet >"$tmp/whole.json"; rc=$?
check "a sweep with 4 failed points exits 68 (got $rc)" "[ $rc -eq 68 ]"
whole=$(cat "$tmp/whole.json")
check "16 points" "[ \"$(json_num "$whole" points)\" = 16 ]"
check "4 failed" "[ \"$(json_num "$whole" failed)\" = 4 ]"
check "12 ok rows" "[ $(grep -o '\"status\":\"ok\"' <<<"$whole" | wc -l) -eq 12 ]"
check "the failures are the tp=16 points, with their reasons" \
  "[ $(grep -o '\"request\":\"tp=16\",[^}]*\"status\":\"failed\",\"error\":\"layout [^\"]*\"' <<<"$whole" | wc -l) -eq 4 ]"
check "a search point names the layout it found" \
  "grep -q '\"request\":\"search\",[^}]*\"status\":\"ok\",\"error\":\"\",\"layout\":\"tp=' <<<\"\$whole\""

# point 2 = llama3-8b tp=2,pp=2,mbs=1 on dgx-a100 with 8 GPUs: the same
# numbers as that run alone
alone=$("$simtrain" run --model llama3-8b --layout tp=2,pp=2,mbs=1,gbs=16 --cluster dgx-a100:1 \
  --tokens 1e9 --json --quiet)
row2=$(grep -o '{"point":2,[^}]*}' <<<"$whole")
for k in step_time_s tokens_per_s_per_gpu mfu time_to_train_s energy_MWh; do
  check "point 2's $k is the run's" "[ \"$(json_num "$row2" $k)\" = \"$(json_num "$alone" $k)\" ]"
done
check "point 2 is on 8 GPUs, 1 node" "[ \"$(json_num "$row2" num_gpus)\" = 8 ] && [ \"$(json_num "$row2" nodes)\" = 1 ]"

# report reads the file back: the same JSON
"$simtrain" report "$tmp/whole.h5" --json >"$tmp/report.json"
check "report --json prints what sweep --json printed" "cmp -s '$tmp/whole.json' '$tmp/report.json'"
table=$("$simtrain" report "$tmp/whole.h5" --sort tokens_per_s_per_gpu --desc)
check "the table heads with the sweep" "grep -q \"^sweep 'small': 16 of 16 points, 4 failed\" <<<\"\$table\""
first=$(awk '/^ *[0-9]+ /{print; exit}' <<<"$table")
best=$(grep -o '"tokens_per_s_per_gpu":[0-9.e+]*' "$tmp/whole.json" | cut -d: -f2 | sort -g | tail -1)
check "sorted by throughput, largest first" "grep -q \"$(printf '%.1f' "$best")\" <<<\"\$first\""
"$simtrain" report "$tmp/whole.h5" --sort colour >/dev/null 2>"$tmp/err"; rc=$?
check "an unknown sort column is a usage error" "[ $rc -eq 1 ] && grep -q \"no column 'colour'\" '$tmp/err'"

# ---- shards and merge ----------------------------------------------------------
for i in 1 2 3; do
  "$simtrain" sweep "$spec" --shard $i/3 -o "$tmp/s$i.h5" --quiet >/dev/null
done
"$simtrain" merge "$tmp/merged.h5" "$tmp/s3.h5" "$tmp/s1.h5" "$tmp/s2.h5" --quiet; rc=$?
check "merge exits 0" "[ $rc -eq 0 ]"
check "the merged file is the whole sweep's, byte for byte" "cmp -s '$tmp/merged.h5' '$tmp/whole.h5'"
n=0
for i in 1 2 3; do
  k=$("$simtrain" report "$tmp/s$i.h5" --json | grep -o '"rows_held":[0-9]*' | cut -d: -f2)
  n=$((n + k))
done
check "the shards hold 16 points between them" "[ $n -eq 16 ]"

# a shard killed while it runs leaves no file; run again, the merge is the same
# (a copy of the spec beside it, so that its processes can be found by name)
cp "$spec" "$tmp/kill.json"
"$simtrain" sweep "$tmp/kill.json" --shard 2/3 -o "$tmp/s2.h5.new" --quiet >/dev/null 2>&1 &
pid=$!
sleep 0.5
kill -TERM $pid 2>/dev/null
wait $pid 2>/dev/null
sleep 0.3
check "a killed shard writes no file" "[ ! -e '$tmp/s2.h5.new' ] && [ -z \"\$(ls '$tmp' | grep tmp)\" ]"
command -v pgrep >/dev/null && check "a killed shard leaves no point running" "! pgrep -f '$tmp/kill.json' >/dev/null"
rm -f "$tmp/s2.h5"
"$simtrain" sweep "$spec" --shard 2/3 -o "$tmp/s2.h5" --quiet >/dev/null
"$simtrain" merge "$tmp/merged2.h5" "$tmp/s1.h5" "$tmp/s2.h5" "$tmp/s3.h5" --quiet
check "shard 2 run again merges to the same file" "cmp -s '$tmp/merged2.h5' '$tmp/whole.h5'"

"$simtrain" merge "$tmp/m.h5" "$tmp/s1.h5" "$tmp/s3.h5" 2>"$tmp/err"; rc=$?
check "a missing shard is refused, named" "[ $rc -eq 2 ] && grep -q 'shard 2 of 3 is missing' '$tmp/err' && [ ! -e '$tmp/m.h5' ]"
"$simtrain" merge "$tmp/m.h5" "$tmp/s1.h5" "$tmp/s2.h5" "$tmp/s2.h5" "$tmp/s3.h5" 2>"$tmp/err"; rc=$?
check "a shard given twice is refused" "[ $rc -eq 2 ] && grep -q 'are both shard 2 of 3' '$tmp/err'"
sed 's/"tokens": 1e9/"tokens": 2e9/' "$spec" >"$tmp/other.json"
"$simtrain" sweep "$tmp/other.json" --shard 3/3 -o "$tmp/o3.h5" --quiet >/dev/null
"$simtrain" merge "$tmp/m.h5" "$tmp/s1.h5" "$tmp/s2.h5" "$tmp/o3.h5" 2>"$tmp/err"; rc=$?
check "a shard of another sweep is refused, named" "[ $rc -eq 2 ] && grep -q \"shard '$tmp/o3.h5' is of another sweep\" '$tmp/err'"
"$simtrain" merge "$tmp/s1.h5" "$tmp/s1.h5" "$tmp/s2.h5" 2>"$tmp/err"; rc=$?
check "the output may not be a shard" "[ $rc -eq 1 ]"
"$simtrain" merge "$tmp/m.h5" "$spec" 2>"$tmp/err"; rc=$?
check "a file that is not a sweep is refused" "[ $rc -eq 2 ] && grep -q 'not an HDF5 file' '$tmp/err'"

# ---- the plan -------------------------------------------------------------------
plan=$("$simtrain" sweep "$spec" --plan --shard 1/3 --json)
total=$(grep -o '"points":[0-9]*' <<<"$plan" | tail -n +2 | cut -d: -f2 | paste -sd+ | bc)
check "the plan's shards hold every point" "[ \"$total\" = 16 ]"
check "the plan says its balance" "grep -q '\"balance\":1' <<<\"\$plan\""

# ---- time-outs ----------------------------------------------------------------------
# The torus at 256 GPUs simulates every rank (minutes): past a 1 s limit,
# exit 65.  Without sp and ZeRO-1 the layout needs 104 GiB a GPU (does not
# fit), and tp=64 does not divide 8 KV heads: 2 failed points, exit 66.
torus=$(cd "$(dirname "$0")/../../examples/fabrics" && pwd)/h100-torus.json
cat >"$tmp/slow.json" <<JSON
{"models": ["llama3-70b"], "layouts": ["tp=8,pp=4,sp=1,mbs=1,gbs=1024,zero=1"],
 "clusters": ["$torus"], "gpus": [256]}
JSON
"$simtrain" sweep "$tmp/slow.json" --point-timeout 1 --json --quiet >"$tmp/slow.out"; rc=$?
check "a point past --point-timeout is recorded (exit 65, got $rc)" "[ $rc -eq 65 ]"
check "its status is timeout" "grep -q '\"point\":0,[^}]*\"status\":\"timeout\",\"error\":\"no answer within 1 s' '$tmp/slow.out'"
cat >"$tmp/nofit.json" <<JSON
{"models": ["llama3-70b"], "layouts": ["tp=8,pp=4,mbs=1,gbs=1024", "tp=64"],
 "clusters": ["$torus"], "gpus": [256]}
JSON
"$simtrain" sweep "$tmp/nofit.json" --json --quiet >"$tmp/nofit.out"; rc=$?
check "points that do not fit or are refused are recorded, the sweep goes on (exit 66, got $rc)" "[ $rc -eq 66 ]"
check "the point that does not fit says so" "grep -q '\"point\":0,[^}]*\"status\":\"failed\",\"error\":\"the workload needs 94.04 GiB per GPU' '$tmp/nofit.out'"
check "the refused layout says why" "grep -q '\"point\":1,[^}]*\"status\":\"failed\",\"error\":\"layout .tp=64.: kv_heads (8) not divisible by tp (64)' '$tmp/nofit.out'"

# ---- pictures ------------------------------------------------------------------------
"$simtrain" plot "$tmp/whole.h5" --scaling -o "$tmp/scaling.svg" 2>/dev/null
check "plot --scaling writes an SVG" "grep -q '<svg' '$tmp/scaling.svg'"
"$simtrain" plot "$tmp/whole.h5" --heatmap tp pp -o "$tmp/heat.svg" 2>/dev/null
check "plot --heatmap writes an SVG" "grep -q '<svg' '$tmp/heat.svg'"
"$simtrain" plot "$tmp/whole.h5" --scaling --where model=megatron-1.7b -o "$tmp/w.svg" 2>/dev/null
check "plot --where draws the rows chosen, and says so" \
  "grep -q 'model=megatron-1.7b' '$tmp/w.svg' && ! grep -q 'tp=2,pp=2' '$tmp/w.svg'"
"$simtrain" plot "$tmp/whole.h5" --scaling --where model=nope -o "$tmp/w2.svg" 2>"$tmp/err"; rc=$?
check "plot --where with no such row: exit 2" "[ $rc -eq 2 ] && grep -q 'no row has model=nope' '$tmp/err'"
"$simtrain" plot "$tmp/whole.h5" --scaling --where colour=1 2>"$tmp/err"; rc=$?
check "plot --where on no column: exit 1" "[ $rc -eq 1 ]"
"$simtrain" plot "$tmp/whole.h5" --timeline 2>"$tmp/err"; rc=$?
check "a results-file picture of a sweep is a usage error" "[ $rc -eq 1 ] && grep -q 'is a sweep file' '$tmp/err'"
"$simtrain" plot "$tmp/whole.h5" --scaling --series colour -o "$tmp/x.svg" 2>"$tmp/err"; rc=$?
check "an unknown series is an error" "[ $rc -eq 1 ] && [ ! -e '$tmp/x.svg' ]"

# ---- a search file: sharded, merged, drawn -----------------------------------------
# (tests/cli/search.sh checks the search itself; here its file)
srch=(search --model llama3-8b --cluster node8:2 --gbs 32 --top 3 --quiet)
sj=$("$simtrain" "${srch[@]}" --json -o "$tmp/search.h5")
est=$(json_num "$sj" estimated)
sr=$("$simtrain" report "$tmp/search.h5" --json)
check "the search file holds every estimated candidate ($est)" \
  "[ \"$(json_num "$sr" points)\" = \"$est\" ] && [ \"$(json_num "$sr" rows_held)\" = \"$est\" ]"
check "3 of them simulated" "[ $(grep -o '\"status\":\"ok\"' <<<"$sr" | wc -l) -eq 3 ]"
check "the rest estimated" "[ $(grep -o '\"status\":\"estimated\"' <<<"$sr" | wc -l) -eq $((est - 3)) ]"
best=$(grep -o '"best":{[^}]*' <<<"$sj" | grep -o '"step_time_s":[^,]*' | cut -d: -f2)
check "the simulated best is in the file" "grep -q '\"step_time_s\":$best' <<<\"\$sr\""
for i in 1 2; do "$simtrain" "${srch[@]}" --shard $i/2 -o "$tmp/search$i.h5" >/dev/null; done
"$simtrain" merge "$tmp/searchm.h5" "$tmp/search2.h5" "$tmp/search1.h5" --quiet
check "a search merged from 2 shards is the unsharded file" "cmp -s '$tmp/searchm.h5' '$tmp/search.h5'"
"$simtrain" merge "$tmp/mixed.h5" "$tmp/search1.h5" "$tmp/s2.h5" 2>"$tmp/err"; rc=$?
check "a search shard and a sweep shard do not merge" "[ $rc -eq 2 ]"
"$simtrain" plot "$tmp/search.h5" --memory -o "$tmp/mem.svg" 2>/dev/null
circles=$(grep -o '<circle' "$tmp/mem.svg" | wc -l)
check "plot --memory draws every candidate ($circles of $est)" \
  "[ $circles -eq $est ] && grep -q 'device memory' '$tmp/mem.svg'"

# ---- bad specs and options ----------------------------------------------------------
printf '{"models": ["llama3-8b"], "layouts": ["tp=1"],\n "clusters": ["node8"], "gpus": [12]}\n' >"$tmp/bad.json"
"$simtrain" sweep "$tmp/bad.json" 2>"$tmp/err"; rc=$?
check "GPUs that are not whole nodes: exit 2, file and key named" \
  "[ $rc -eq 2 ] && grep -q \"sweep '$tmp/bad.json': clusters\\[0\\]: 'node8' has 8 GPUs a node\" '$tmp/err'"
printf '{"models": ["llama3-8b"],\n "layouts": ["tp=1"' >"$tmp/cut.json"
"$simtrain" sweep "$tmp/cut.json" 2>"$tmp/err"; rc=$?
check "a cut spec: exit 2 with line and column" "[ $rc -eq 2 ] && grep -q 'line 2, column' '$tmp/err'"
"$simtrain" sweep "$spec" --shard 4/3 2>"$tmp/err"; rc=$?
check "--shard 4/3 is a usage error" "[ $rc -eq 1 ] && grep -q 'not I/N' '$tmp/err'"
"$simtrain" sweep "$tmp/none.json" 2>"$tmp/err"; rc=$?
check "a missing spec: exit 2 (got $rc)" "[ $rc -eq 2 ]"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "sweep: all checks passed"
