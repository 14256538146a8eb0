#!/bin/bash
# search.sh — `simtrain search` on a 2-layer model and one 4-GPU node, where
# every count can be checked by hand:
#   (tp, cp, pp, dp) with tp*cp*pp*dp = 4, pp <= 2 layers: (1,1,1,4) (1,1,2,2)
#   (1,2,1,2) (1,2,2,1) (1,4,1,1) (2,1,1,2) (2,1,2,1) (2,2,1,1) (4,1,1,1);
#   mbs dividing gbs/dp = 4/dp (every divisor); schedules 1f1b+gpipe when pp = 2;
#   zero 0-3 when dp*cp > 1; recompute x3; sp/tp_overlap (0,0) (1,0) (1,1)
#   when tp > 1; vpp 1 (a stage of one layer, or pp = 1):
#     12 + 48 + 24 + 72 + 36 + 72 + 54 + 108 + 27 = 453 enumerated;
#   zero=3 with pp = 2 is refused (FSDP and pipelines): 2*2*3 + 3*2*3 = 30;
#   undominated (recompute none, 1F1B, zero != 2, valid):
#     3 + 4 + 6 + 6 + 9 + 18 + 9 + 27 + 9 = 91; dominated 423 - 91 = 332.
set -u
simtrain=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../data/search
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

err=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" 2>&1 >/dev/null); rc=$?
check "no --gbs exits 1" "[ $rc -eq 1 ]"
check "no --gbs message" "[ \"\$err\" = \"simtrain: error: --model, --cluster and --gbs are required (see 'simtrain search --help')\" ]"
err=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs x 2>&1 >/dev/null); rc=$?
check "bad --gbs exits 1" "[ $rc -eq 1 ]"

a=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 2 --json --quiet); rc=$?
check "search exits 0" "[ $rc -eq 0 ]"
check "453 enumerated" "grep -q '\"enumerated\":453,' <<<\"\$a\""
check "423 fit" "grep -q '\"fitting\":423,' <<<\"\$a\""
check "91 estimated" "grep -q '\"estimated\":91,' <<<\"\$a\""
check "2 simulated" "grep -q '\"simulated\":2,' <<<\"\$a\""
check "30 refused: FSDP with pp" "grep -q 'with pp (N) > N runs only under dp_impl=fsdp2[^\"]*\":30' <<<\"\$a\""
check "332 dominated" "grep -q '\"dominated[^\"]*\":332' <<<\"\$a\""
# a key that refuses every layout: the error says which rule, its name whole
err=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 0 --quiet --fixed moe_a2a_overlap=1 2>&1 >/dev/null); rc=$?
check "no valid layout exits 2" "[ $rc -eq 2 ]"
check "no valid layout says why" "grep -q \"has no valid layout on 4 GPUs with gbs 4; most often: moe_a2a_overlap is Megatron-core's overlap of the expert all-to-alls: it needs a MoE model, ep > N and dp_impl=megatron (ep is N, dp_impl megatron) (453 of 453 refused for it)\" <<<\"\$err\""
# moe_a2a_overlap: the estimate follows the overlap (one step with pairs of
# micro-batches is carried along the line through two), here to within 1% of
# the simulated step; before, it priced the plain schedule (+33%)
for ov in 0 1; do
  o=$("$simtrain" search --model "$data/tiny-moe.json" --cluster dgx-h100:2 --gbs 64 --fixed "tp=1,pp=1,ep=16,cp=1,mbs=1,zero=1,recompute=none,moe_a2a_overlap=$ov" --top 1 --json --quiet)
  est[$ov]=$(grep -o '"estimate_s":[0-9.e+-]*' <<<"$o" | head -1 | cut -d: -f2)
  sim[$ov]=$(grep -o '"step_time_s":[0-9.e+-]*' <<<"$o" | head -1 | cut -d: -f2)
done
check "overlap: estimate ${est[1]} within 1% of simulated ${sim[1]}" "awk -v e=\"${est[1]}\" -v s=\"${sim[1]}\" 'BEGIN { exit !(s > 0 && (e - s) ^ 2 <= (0.01 * s) ^ 2) }'"
check "overlap: estimate ${est[1]} 20% below the plain ${est[0]}" "awk -v a=\"${est[1]}\" -v b=\"${est[0]}\" 'BEGIN { exit !(a < 0.8 * b) }'"
# the overlap is a knob of the search: with tp, cp, pp, zero and recompute
# fixed, 16 GPUs give dp 16, mbs 1, 2, 4 (64 / 16 = 4) and ep 1, 2, 4, 8, 16
# (16 experts), the overlap off and on where ep > 1: 3 + 4 x 3 x 2 = 27
# layouts, 12 with the overlap; --fixed keeps one side
f=tp=1,cp=1,pp=1,zero=1,recompute=none
o=$("$simtrain" search --model "$data/tiny-moe.json" --cluster dgx-h100:2 --gbs 64 --fixed "$f" --top 1 --json --quiet)
check "overlap enumerated: 27 layouts" "grep -q '\"enumerated\":27,' <<<\"\$o\""
check "overlap enumerated: 12 with it, and the best (listed twice) is one" "[ \$(grep -o '{\"layout\":\"[^\"]*moe_a2a_overlap=1' <<<\"\$o\" | wc -l) -eq 13 ] && grep -q '\"best\":{\"layout\":\"[^\"]*moe_a2a_overlap=1' <<<\"\$o\""
check "overlap enumerated: none with ep=1" "! grep -q '\"layout\":\"[^\"]*ep=1,[^\"]*moe_a2a_overlap=1' <<<\"\$o\""
o=$("$simtrain" search --model "$data/tiny-moe.json" --cluster dgx-h100:2 --gbs 64 --fixed "$f,moe_a2a_overlap=0" --top 0 --json --quiet)
check "--fixed moe_a2a_overlap=0: 15 layouts, none with it" "grep -q '\"enumerated\":15,' <<<\"\$o\" && ! grep -q 'moe_a2a_overlap=1' <<<\"\$o\""
# where Megatron-core refuses it, it is not tried: no ZeRO-3, no full
# recomputation, and with a pipeline only the interleaved schedule
o=$("$simtrain" search --model "$data/tiny-moe.json" --cluster dgx-h100:2 --gbs 64 --fixed "tp=1,cp=1,moe_a2a_overlap=1" --top 0 --json --quiet)
check "overlap only where allowed" "! grep -Eq '\"layout\":\"[^\"]*(zero=3|recompute=full|pp=2,[^\"]*vpp=1,)' <<<\"\$o\" && grep -q 'moe_a2a_overlap=1' <<<\"\$o\""
# a model with a shared expert: every candidate without moe_a2a_overlap runs
# the shared expert beside the all-to-alls (never slower), those with it do
# not (Megatron-Bridge turns it off there); --fixed =0 turns it off
o=$("$simtrain" search --model "$data/tiny-shared.json" --cluster dgx-h100:2 --gbs 64 --fixed "$f" --top 0 --json --quiet)
# (27 candidates as above, 12 with moe_a2a_overlap; the best listed twice)
n_a2a=$(grep -o '{"layout":"[^"]*moe_a2a_overlap=1' <<<"$o" | wc -l)
n_sh=$(grep -o '{"layout":"[^"]*moe_shared_expert_overlap=1' <<<"$o" | wc -l)
check "shared expert overlap on every plain candidate ($n_sh, $n_a2a with the a2a overlap)" "grep -q '\"enumerated\":27,' <<<\"\$o\" && [ $n_a2a -eq 12 ] && [ $n_sh -eq 16 ] && grep -q '\"best\":{\"layout\":\"[^\"]*moe_shared_expert_overlap=1' <<<\"\$o\""
check "shared expert overlap off under the a2a overlap" "! grep -q 'moe_a2a_overlap=1[^\"]*moe_shared_expert_overlap=1' <<<\"\$o\""
o=$("$simtrain" search --model "$data/tiny-shared.json" --cluster dgx-h100:2 --gbs 64 --fixed "$f,moe_shared_expert_overlap=0" --top 0 --json --quiet)
check "--fixed moe_shared_expert_overlap=0 keeps it off" "grep -q '\"enumerated\":27,' <<<\"\$o\" && ! grep -q 'moe_shared_expert_overlap=1' <<<\"\$o\""
n=$(grep -o '{"layout"' <<<"$a" | wc -l)
check "91 candidates and the best listed" "[ $n -eq 92 ]"
b=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 2 --json --quiet -j 2)
check "two runs (one with -j 2): the same bytes" "[ \"\$a\" = \"\$b\" ]"

# the best is simulated and is the fastest simulated; its command runs and
# predicts the step the search printed
best=$(grep -o '"best":{.*' <<<"$a")
step=$(grep -o '"step_time_s":[0-9.e+-]*' <<<"$best" | head -1 | cut -d: -f2)
cmd=$(grep -o '"command":"[^"]*"' <<<"$best" | cut -d'"' -f4)
check "the best has a simulated step" "[ -n \"\$step\" ]"
ran=$(cd "$data" && eval "\"$simtrain\" ${cmd#simtrain } --json --quiet" | grep -o '"step_time_s":[0-9.e+-]*' | cut -d: -f2)
check "the best's command predicts its step ($ran vs $step)" "[ \"\$ran\" = \"\$step\" ]"
first2=$(grep -o '"step_time_s":[0-9.e+-]*' <<<"$a" | head -2 | cut -d: -f2 | tr '\n' ' ')
check "simulated ones come first, fastest first ($first2)" "awk '{exit !(\$1 <= \$2)}' <<<\"\$first2\""

# time to train: ceil(1M tokens / (gbs 4 x seq 128)) = 1954 steps of the simulated step
t=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 1 --json --quiet --tokens 1M --price 2)
tb=$(grep -o '"best":{.*' <<<"$t")
tstep=$(grep -o '"step_time_s":[0-9.e+-]*' <<<"$tb" | head -1 | cut -d: -f2)
ttt=$(grep -o '"time_to_train_s":[0-9.e+-]*' <<<"$tb" | cut -d: -f2)
cost=$(grep -o '"cost_usd":[0-9.e+-]*' <<<"$tb" | cut -d: -f2)
check "time to train = 1954 steps ($ttt, step $tstep)" "awk -v a=\"$ttt\" -v s=\"$tstep\" 'BEGIN { exit !(a > 0 && (a - 1954 * s) ^ 2 <= (1e-9 * a) ^ 2) }'"
check "cost = 4 GPUs x hours x 2 USD ($cost)" "awk -v c=\"$cost\" -v a=\"$ttt\" 'BEGIN { exit !(c > 0 && (c - 4 * a / 3600 * 2) ^ 2 <= (1e-9 * c) ^ 2) }'"

# memory at the boundary: with the device's memory 1 KiB above the largest
# fitting peak every layout still fits; 1 KiB below it, the layouts with that
# peak are pruned for memory
peak=$(grep -o '"peak_memory_bytes":[0-9.e+]*' <<<"$a" | cut -d: -f2 | sort -g | tail -1)
atpeak=$(grep -o '"peak_memory_bytes":[0-9.e+]*' <<<"$a" | cut -d: -f2 | sort -g | grep -c "^$peak\$")
for side in above below; do
  gb=$(awk -v p="$peak" -v s=$side 'BEGIN { printf "%.12f", (p + (s == "above" ? 1024 : -1024)) / 1e9 }')
  sed "s/\"device\": \"H100-SXM\",/\"device\": \"H100-SXM\", \"device_memory_GB\": $gb,/" "$data/quad.json" >"$tmp/$side.json"
  j=$("$simtrain" search --model "$data/tiny.json" --cluster "$tmp/$side.json" --gbs 4 --top 0 --json --quiet 2>"$tmp/err")
  if [ $side = above ]; then
    check "1 KiB above the peak: 423 fit ($(cat "$tmp/err"))" "grep -q '\"fitting\":423,' <<<\"\$j\""
  else
    fit=$(grep -o '"fitting":[0-9]*' <<<"$j" | cut -d: -f2)
    mem=$(grep -o '"does not fit in device memory":[0-9]*' <<<"$j" | cut -d: -f2)
    check "1 KiB below the peak: fewer fit ($fit)" "[ -n \"\$fit\" ] && [ \$fit -lt 423 ] && [ \$((fit + mem)) -eq 423 ]"
  fi
done

# a model that fits no layout says so, with the smallest need and the GPUs it would take
sed 's/"device_memory_GB": [0-9.]*/"device_memory_GB": 0.001/' "$tmp/above.json" >"$tmp/tiny_mem.json"
err=$("$simtrain" search --model "$data/tiny.json" --cluster "$tmp/tiny_mem.json" --gbs 4 --quiet 2>&1 >/dev/null); rc=$?
check "fits nowhere exits 2" "[ $rc -eq 2 ]"
check "fits nowhere message ($err)" "grep -q \"fits no layout on 4 GPUs of .*: the smallest peak any layout needs is .* per GPU, one H100-SXM has 976.56 KiB; \" <<<\"\$err\""

# every micro-batch dividing a replica's share of the batch, not only powers
# of two: gbs 6 leaves out dp = 4; dp = 2 has mbs 1, 3 and dp = 1 mbs 1, 2,
# 3, 6, so by the tuples of the header (1,1,2,2) 2*2*4*3 = 48, (1,2,1,2) 24,
# (1,2,2,1) 4*2*4*3 = 96, (1,4,1,1) 48, (2,1,1,2) 2*4*3*3 = 72, (2,1,2,1)
# 4*2*3*3 = 72, (2,2,1,1) 4*4*3*3 = 144, (4,1,1,1) 4*3*3 = 36: 540
g=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 6 --top 0 --json --quiet)
check "gbs 6: 540 enumerated (mbs 3 and 6 among them)" "grep -q '\"enumerated\":540,' <<<\"\$g\""
check "gbs 6: a candidate with mbs=3" "grep -q '\"layout\":\"tp=[^\"]*,mbs=3,' <<<\"\$g\""

# --fixed on a key the search sets keeps the candidates with that value (by
# the header's tuples): tp=2 is (2,1,1,2) 72 + (2,1,2,1) 54 + (2,2,1,1) 108
# = 234 enumerated, 18 + 9 + 27 = 54 undominated; with zero=1 as well,
# (2,1,2,1) has no data parallelism (zero 0 only): 72/4 + 108/4 = 45, and a
# third of the undominated (zero 0, 1 or 3): 6 + 9 = 15
f=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 0 --json --quiet --fixed tp=2)
check "--fixed tp=2: 234 enumerated, 54 estimated" "grep -q '\"enumerated\":234,\"fitting\":234,\"estimated\":54,' <<<\"\$f\""
check "--fixed tp=2: every candidate has tp=2" "! grep -o '\"layout\":\"[^\"]*' <<<\"\$f\" | grep -v -q '\"layout\":\"tp=2,'"
f=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 0 --json --quiet --fixed tp=2,zero=1)
check "--fixed tp=2,zero=1: 45 enumerated, 15 estimated" "grep -q '\"enumerated\":45,\"fitting\":45,\"estimated\":15,' <<<\"\$f\""
err=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 0 --quiet --fixed tp=3 2>&1 >/dev/null); rc=$?
check "--fixed tp=3 exits 2" "[ $rc -eq 2 ]"
check "--fixed tp=3 says the fixed keys leave nothing" "[ \"\$err\" = \"simtrain: error: --fixed 'tp=3' leaves no layout to search for model '$data/tiny.json' on 4 GPUs with gbs 4 (the search's own keys take the values docs/search.md lists)\" ]"

# A pipeline always has a bubble: with fewer micro-batches than stages (1F1B
# estimated at one and two) the line through the two grew by less than a
# micro-batch of the slowest stage, and 12 of the pipelined layouts of a
# 10-layer model on 8 GPUs (uneven stages, CP) came out with none, below
# their slowest stage alone.
p=$("$simtrain" search --model "$data/ten.json" --cluster node8 --gbs 32 --top 0 --json --quiet |
  grep -Eo '"layout":"tp=[0-9]+,pp=([2-9]|[1-9][0-9]+),[^"]*","estimate_rank":[0-9]+,"estimate_s":[^,]*,"estimate_bubble_s":[^,]*' |
  awk -F'"estimate_bubble_s":' '{ if ($2 + 0 <= 0) z++; n++ } END { print n, z + 0 }')
check "pipelined layouts estimated with a bubble ($p: layouts, of them without)" "[ \"\${p% *}\" -gt 100 ] && [ \"\${p#* }\" = 0 ]"

# --case keeps what the run's software fixed in every candidate: CASE's
# layouts all carry KEY (more than 100 of them)
case_keeps() {
  local c rc n_all n_key
  c=$("$simtrain" search --case "$here/../../bench/validation/$1.json" --top 0 --json --quiet)
  rc=$?
  n_all=$(grep -o '"layout":"[^"]*"' <<<"$c" | wc -l)
  n_key=$(grep -o "\"layout\":\"[^\"]*$2[^\"]*\"" <<<"$c" | wc -l)
  check "--case $1 exits 0" "[ $rc -eq 0 ]"
  check "--case $1: every candidate with $2 ($n_key of $n_all)" \
    "[ $n_all -gt 100 ] && [ $n_key -eq $n_all ]"
}
# the attention kernel's library: MPT's flash attention (FlashAttention-1's
# Triton port) for every candidate (on Hopper a candidate with cuDNN's would
# beat the published layout by the library)
case_keeps llmfoundry-h100-mpt-7b-2k-8gpu attn_impl=fa1
# whether the run was compiled: torchtitan's eager run keeps its eager kernels
case_keeps torchtitan-h100-llama3.1-8b eager=1
# Megatron-LM of 2021 (SC'21): its backward TP all-reduce could not
# overlap, and every candidate keeps that (and so no sequence parallelism)
case_keeps sc21-gpt-7.5b tp_async=0
# and its pipeline tensors travelled split across the TP ranks
case_keeps sc21-gpt-7.5b pp_scatter=1
# and it ran with dropout (Megatron-LM's default)
case_keeps sc21-gpt-7.5b dropout=0.1
# the MoE dispatcher a recipe ran (Qwen3-30B-A3B: HybridEP, the flex one)
case_keeps ../validation/moe/megatron-bridge-h100-fp8-qwen3-30b-a3b moe_dispatcher=flex
# a recipe's selective recomputation by module (GPT-OSS: layernorm and
# moe_act): every candidate that recomputes selectively recomputes those
c=$("$simtrain" search --case "$here/../../bench/validation/moe/megatron-bridge-h100-gpt-oss-120b.json" --top 0 --json --quiet)
n_sel=$(grep -o '"layout":"[^"]*recompute=selective[^"]*"' <<<"$c" | wc -l)
n_mod=$(grep -o '"layout":"[^"]*recompute=selective[^"]*recompute_modules=moe_act+layernorm[^"]*"' <<<"$c" | wc -l)
check "--case GPT-OSS: selective candidates recompute its modules ($n_mod of $n_sel)" \
  "[ $n_sel -gt 100 ] && [ $n_mod -eq $n_sel ]"

# --fixed dp_impl=fsdp searches FSDP's layouts: zero=3 and no pipeline, by
# hand on the tiny model (tp, cp, dp; mbs; sp ways; recompute): (1,1,4) 1x1x3
# + (1,2,2) 2x1x3 + (1,4,1) 3x1x3 + (2,1,2) 2x3x3 + (2,2,1) 3x3x3 = 63 (tp 4
# has no data parallelism), none recomputing estimated: 21; Megatron's
# overlapped reduction is not added to them (it would refuse them all)
a=$("$simtrain" search --model "$data/tiny.json" --cluster "$data/quad.json" --gbs 4 --top 0 --json \
  --quiet --fixed dp_impl=fsdp,optim_impl=loop); rc=$?
check "--fixed dp_impl=fsdp exits 0" "[ $rc -eq 0 ]"
check "--fixed dp_impl=fsdp: 63 fit" "grep -q '\"fitting\":63,' <<<\"\$a\""
check "--fixed dp_impl=fsdp: 21 estimated" "grep -q '\"estimated\":21,' <<<\"\$a\""
n_all=$(grep -o '"layout":"[^"]*"' <<<"$a" | wc -l)
n_fsdp=$(grep -o '"layout":"[^"]*zero=3,[^"]*overlap_grad_reduce=0[^"]*dp_impl=fsdp,optim_impl=loop"' <<<"$a" | wc -l)
check "--fixed dp_impl=fsdp: every candidate FSDP's ($n_fsdp of $n_all)" "[ $n_fsdp -ge 21 ] && [ $n_fsdp -eq $n_all ]"

# recompute=full that fits is searched for the fewest layers per chunk
# recomputed that fit (recompute_layers): llama3-8b at 16,384 tokens on one
# DGX H100 without TP, CP or a pipeline is best with FSDP and some layers
# recomputed; `memory` (not the search) says that one layer fewer would not
# fit and that the chosen number does
b=$("$simtrain" search --model llama3-8b --cluster dgx-h100:1 --gbs 32 --seq 16384 --top 0 \
  --fixed tp=1,cp=1,pp=1 --json --quiet | grep -o '"best":{"layout":"[^"]*"')
n=$(grep -o 'recompute_layers=[0-9]*' <<<"$b" | cut -d= -f2)
check "fewest recomputed layers: the best has recompute=full,recompute_layers ($b)" \
  "[ -n \"\$n\" ] && [ \"\$n\" -gt 1 ] && [ \"\$n\" -lt 32 ] && grep -q 'recompute=full' <<<\"\$b\""
l=$(sed 's/.*"layout":"//; s/"$//; s/,recompute_layers=[0-9]*//' <<<"$b")
fits() { "$simtrain" memory --model llama3-8b --layout "$l,recompute_layers=$1" --cluster dgx-h100:1 \
  --seq 16384 | grep -q '^peak .*: fits the'; }
check "recompute_layers=$n fits" "fits $n"
check "recompute_layers=$((n - 1)) does not fit" "! fits $((n - 1))"

[ $fails -eq 0 ] || exit 1
echo "search: all checks passed"
