#!/bin/bash
# balance.sh — balance=compute on two node groups whose GPUs differ by 2x.
#
# The devices: Fast-X (bf16 800 TFLOP/s, HBM 3200 GB/s) and Slow-X, half of
# each rate, added to a copy of the platform data; both take the compute
# model's generic parameters, so an op on Slow-X takes twice as long less
# the per-kernel launch time, which is the same on both.  One 8-GPU node of
# each on one switch; llama3-8b tp=8 dp=2 mbs=4 (seq 4096), 24 micro-batches
# a step.
#
# References, from runs on one node of each kind alone (dp=1, no group in
# sight): t_f and t_s, the seconds one more micro-batch adds to a step there
# (the slope between 8 and 4 micro-batches).  Closed forms for the step, DP
# all-reduce aside (about 1% of it here):
#   even split (12 + 12):     T_even = 12 t_s
#   balanced (m_f + m_s = 24, m_f / m_s as near t_s / t_f as whole numbers
#   allow: 16 + 8 for a ratio near 2):
#                             T_bal  = max(m_f t_f, m_s t_s)
# Checks: balance=compute picks 16 + 8; T_bal within 5% of its closed form;
# the even split slower than the balanced by T_even - T_bal (closed forms)
# within 5%.
. "$(dirname "$0")/../cli_lib.sh" "$@"
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$tmp/data
cp -r "$root/platforms/data" "$data"
sed -i 's|^  \]$|    ,{"name": "Fast-X", "arch": "hopper", "peak_TFLOPS": {"fp32": 60, "tf32": 400, "bf16": 800, "fp16": 800, "fp8": 0}, "hbm_GB": 80, "hbm_GBps": 3200, "link_GBps": 450}\n    ,{"name": "Slow-X", "arch": "hopper", "peak_TFLOPS": {"fp32": 30, "tf32": 200, "bf16": 400, "fp16": 400, "fp8": 0}, "hbm_GB": 80, "hbm_GBps": 1600, "link_GBps": 450}\n  ]|' "$data/devices.json"
export SIMTRAIN_PLATFORMS_DATA=$data
node='"node":{"gpus":8,"intra":{"kind":"nvswitch","links_per_gpu":18,"link_GBps":25,"lat_us":0.5},"nics":{"count":8,"Gbps":400,"lat_us":1}}'
fab='"fabric":{"kind":"rail-fat-tree","radix":64}'
printf '{"name":"two-speeds","groups":[{"name":"fast","nodes":1,"device":"Fast-X",%s},{"name":"slow","nodes":1,"device":"Slow-X",%s}],%s}' "$node" "$node" "$fab" >"$tmp/two.json"
for k in Fast Slow; do
  printf '{"name":"%s","nodes":1,"device":"%s-X",%s,%s}' "$k" "$k" "$node" "$fab" >"$tmp/$k.json"
done
step() { "$simtrain" run --model llama3-8b --seq 4096 --layout "$2" --cluster "$1" --json 2>>"$tmp/err" | grep -o '"step_time_s":[^,]*' | cut -d: -f2; }
slope() { awk -v a="$(step "$1" tp=8,mbs=4,gbs=32)" -v b="$(step "$1" tp=8,mbs=4,gbs=16)" 'BEGIN { printf "%.9g", (a - b) / 4 }'; }
tf=$(slope "$tmp/Fast.json")
ts=$(slope "$tmp/Slow.json")
# a micro-batch on Slow-X: its compute twice Fast-X's, its tensor-parallel
# NVLink time the same, so between 1.5x and 2x in all
check "a micro-batch takes 1.5x to 2x as long on Slow-X (t_s/t_f = $(awk -v a="$ts" -v b="$tf" 'BEGIN{print a/b}'))" \
  "awk -v a='$ts' -v b='$tf' 'BEGIN { exit !(a / b > 1.5 && a / b <= 2) }'"

"$simtrain" run --model llama3-8b --seq 4096 --layout tp=8,dp=2,mbs=4,gbs=96,balance=compute \
  --cluster "$tmp/two.json" --json >"$tmp/bal.json" 2>"$tmp/bal.err"
check "balance=compute gives the fast replica 16 micro-batches, the slow 8" \
  "grep -q 'balance=compute: dp_microbatches=16/8' '$tmp/bal.err'"
# the compute it balanced on: per layer, Slow-X's twice Fast-X's less the
# launch time (1.9x to 2x)
ratio=$(grep -o 'fast [0-9.]* ms, slow [0-9.]* ms' "$tmp/bal.err" | awk '{ print $5 / $2 }')
check "balance saw a compute ratio near 2 (${ratio:-none})" "awk 'BEGIN { exit !(${ratio:-0} > 1.9 && ${ratio:-0} <= 2) }'"
tbal=$(grep -o '"step_time_s":[^,]*' "$tmp/bal.json" | cut -d: -f2)
teven=$(step "$tmp/two.json" tp=8,dp=2,mbs=4,gbs=96)
want_bal=$(awk -v f="$tf" -v s="$ts" 'BEGIN { a = 16 * f; b = 8 * s; printf "%.9g", (a > b ? a : b) }')
want_even=$(awk -v s="$ts" 'BEGIN { printf "%.9g", 12 * s }')
within() { awk -v x="$1" -v y="$2" -v t="$3" 'BEGIN { d = (x - y) / y; if (d < 0) d = -d; exit !(d <= t) }'; }
check "balanced step $tbal s within 5% of max(16 t_f, 8 t_s) = $want_bal s" "within '$tbal' '$want_bal' 0.05"
check "even split $teven s within 5% of 12 t_s = $want_even s" "within '$teven' '$want_even' 0.05"
gain=$(awk -v a="$teven" -v b="$tbal" 'BEGIN { printf "%.9g", a - b }')
want_gain=$(awk -v a="$want_even" -v b="$want_bal" 'BEGIN { printf "%.9g", a - b }')
check "the even split is slower by $gain s, the closed forms say $want_gain s (5%)" "within '$gain' '$want_gain' 0.05"

# balance=time: the probes simulated on one node of each group, so the
# tensor-parallel NVLink time counts: the split follows t_s / t_f (above),
# 15 + 9 (max(15 t_f, 9 t_s) is the least max over whole splits for a ratio
# between 5/3 and 15/8), and the step is no longer than balance=compute's
"$simtrain" run --model llama3-8b --seq 4096 --layout tp=8,dp=2,mbs=4,gbs=96,balance=time \
  --cluster "$tmp/two.json" --json >"$tmp/time.json" 2>"$tmp/time.err"
split=$(grep -o 'dp_microbatches=[0-9/*]*' "$tmp/time.err" | cut -d= -f2)
mf=${split%%/*} ms=${split##*/}
best=$(awk -v f="$tf" -v s="$ts" 'BEGIN { b = 1e30; for (m = 1; m < 24; m++) { a = m * f; c = (24 - m) * s; x = a > c ? a : c; if (x < b) { b = x; bm = m } } print bm }')
check "balance=time gives the fast replica the least-max split's $best micro-batches (got ${split:-none})" "[ '${mf:-0}' = '$best' ]"
ttime=$(grep -o '"step_time_s":[^,]*' "$tmp/time.json" | cut -d: -f2)
want_time=$(awk -v f="$tf" -v s="$ts" -v a="${mf:-1}" -v b="${ms:-1}" 'BEGIN { x = a * f; y = b * s; printf "%.9g", (x > y ? x : y) }')
check "balance=time's step $ttime s within 5% of max(m_f t_f, m_s t_s) = $want_time s" "within '$ttime' '$want_time' 0.05"
check "balance=time's step is no longer than balance=compute's ($ttime vs $tbal)" "awk 'BEGIN { exit !($ttime <= $tbal) }'"

# pipeline stages: tp=8 pp=2 puts stage 0 on the fast node, stage 1 on the
# slow one; balance gives the fast stage more of the 32 layers
"$simtrain" run --model llama3-8b --seq 4096 --layout tp=8,pp=2,mbs=4,gbs=32,balance=compute \
  --cluster "$tmp/two.json" >/dev/null 2>"$tmp/pp.err"
check "balance=compute splits the layers toward the fast stage: $(grep -o 'stage_layers=[0-9/]*' "$tmp/pp.err")" \
  "grep -Eq 'stage_layers=2[1-4]/([89]|1[01]) ' '$tmp/pp.err'"
# without groups: a note, the even split
"$simtrain" run --model llama3-8b --seq 4096 --layout tp=8,mbs=4,gbs=16,balance=compute --cluster "$tmp/Fast.json" >/dev/null 2>"$tmp/one.err"
check "on a cluster of one kind balance says the even split stands" "grep -q 'the even split stands' '$tmp/one.err'"
# both at once is an error
"$simtrain" run --model llama3-8b --layout tp=8,dp=2,gbs=24,balance=compute,dp_microbatches=16/8 --cluster "$tmp/two.json" >/dev/null 2>"$tmp/both.err"; rc=$?
check "balance with a list given is refused (rc $rc)" "[ $rc -ne 0 ] && grep -q 'chooses stage_layers and dp_microbatches itself' '$tmp/both.err'"

# an MoE layout with the flex dispatcher and recompute_modules: the probe (one
# GPU, no expert parallelism) drops the dispatcher and keeps the modules
moe='{"name":"moe-t","layers":4,"hidden":1024,"heads":16,"kv_heads":4,"ffn_hidden":4096,"ffn_act":"swiglu","vocab":32768,"seq_len":1024,"tie_embeddings":false,"moe":{"experts":8,"top_k":2,"expert_ffn_hidden":1024}}'
printf '%s' "$moe" >"$tmp/moe.json"
"$simtrain" run --model "$tmp/moe.json" --layout tp=1,ep=8,dp=16,mbs=1,gbs=64,zero=1,moe_dispatcher=flex,recompute_modules=moe_act,balance=compute \
  --cluster "$tmp/two.json" >/dev/null 2>"$tmp/moe.err"; rc=$?
check "balance probes an MoE flex layout with recompute_modules (rc $rc)" \
  "[ $rc -eq 0 ] && grep -q 'balance=compute: ' '$tmp/moe.err'"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "balance: all checks passed"
