#!/bin/bash
# gen.sh — `simtrain gen` and `simtrain memory`: what they print, the file
# gen writes, and their errors.
set -u
simtrain=$1
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# gen: 16 GPUs of llama3-8b, tp=4 pp=2 dp=2; 4 micro-batches; one program per stage
json=$("$simtrain" gen --model llama3-8b --layout tp=4,pp=2,gbs=8,sp=1 --gpus 16 -o "$tmp/w.json.gz" --json); rc=$?
check "gen exits 0" "[ $rc -eq 0 ]"
check "gen writes the file" "[ -s '$tmp/w.json.gz' ]"
check "gen summary: 16 ranks, 2 programs" "grep -q '\"ranks\":16,\"programs\":2,' <<<\"\$json\""
check "tokens = gbs x seq" "grep -q '\"tokens_per_step\":65536,' <<<\"\$json\""
check "the file is gzip JSON with source gen" "zcat '$tmp/w.json.gz' | grep -q '\"source\": *\"gen\"'"

# --cluster gives the GPU count (node8:2 = 16 GPUs, so dp = 16/(4*2) = 2)
out=$("$simtrain" gen --model llama3-8b --layout tp=4,pp=2,gbs=8 --cluster node8:2 -o "$tmp/c.json"); rc=$?
check "gen --cluster exits 0" "[ $rc -eq 0 ]"
check "dp resolved from the cluster" "grep -q 'tp=4,pp=2,dp=2,' <<<\"\$out\""

# errors: exit 2 with one line naming the numbers; nothing written
err=$("$simtrain" gen --model llama3-8b --layout tp=3 --gpus 16 -o "$tmp/bad.json" 2>&1 >/dev/null); rc=$?
check "bad layout exits 2" "[ $rc -eq 2 ]"
check "bad layout message" "[ \"\$err\" = \"simtrain: error: layout 'tp=3': 16 GPUs are not divisible by tp*pp*cp = 3*1*1 = 3\" ]"
check "nothing written on error" "[ ! -e '$tmp/bad.json' ]"
err=$("$simtrain" gen --layout tp=1 --gpus 1 -o "$tmp/x.json" 2>&1); rc=$?
check "missing --model exits 1" "[ $rc -eq 1 ]"
check "model list" "\"$simtrain\" gen --model list | grep -qx megatron-1t"

# memory: llama3-70b on 32 GPUs; table per stage and the fit line
out=$("$simtrain" memory --model llama3-70b --layout tp=8,pp=4,gbs=64,sp=1 --cluster node8:4); rc=$?
check "memory exits 0" "[ $rc -eq 0 ]"
check "memory has 4 stages" "[ \$(grep -cE '^ +[0-3] +20 ' <<<\"\$out\") -eq 4 ]"
check "memory says whether it fits" "grep -qE '^peak .* (fits|does NOT fit) the 74.5 GiB of one H100-SXM$' <<<\"\$out\""
json=$("$simtrain" memory --model llama3-405b --layout tp=8,pp=2,gbs=16 --cluster node8:2 --json); rc=$?
check "memory --json exits 0" "[ $rc -eq 0 ]"
check "405B on 16 GPUs does not fit" "grep -q '\"fits\":false' <<<\"\$json\""
# the working memory in `other`, by hand: PyTorch's F.cross_entropy on fp32
# logits (the FSDP2 default) holds 8 B a logit beyond the 4 it keeps at its
# backward: 8 x 4,096 tokens x 128,256 logits = 4,202,692,608 B (3.91 GiB)
out=$("$simtrain" memory --model llama3-8b --seq 4096 --layout dp=8,mbs=1,gbs=8,zero=3,dp_impl=fsdp2 --cluster dgx-h100:1)
check "memory names the loss's working memory" "grep -qE '^other .* on stage 0: 3.91 GiB working \\(the loss.s backward beyond what it keeps\\),$' <<<\"\$out\""
json=$("$simtrain" memory --model llama3-8b --seq 4096 --layout dp=8,mbs=1,gbs=8,zero=3,dp_impl=fsdp2 --cluster dgx-h100:1 --json)
check "memory --json has it" "grep -q '\"loss_work_bytes\":4202692608,\"recompute_work_bytes\":0,' <<<\"\$json\""
err=$("$simtrain" memory --model llama3-405b --layout tp=8,pp=16 --cluster node8:16 2>&1); rc=$?
check "memory: layers not divisible exits 2" "[ $rc -eq 2 ]"
check "memory: the message names the numbers" "grep -q \"layers (126) not divisible by pp\\*vpp = 16\\*1 = 16\" <<<\"\$err\""

# A path with a quote and a backslash is escaped in --json: gen's "file", and
# memory's "cluster" (an XML cluster is named after its file).  The output
# also parses as JSON: read back as a model spec it stops at its first key.
has() { # name, text, string it must contain
  if grep -qF -- "$3" <<<"$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
odd="$tmp/q\"d\\w"
mkdir -p "$odd"
json=$("$simtrain" gen --model llama3-8b --layout tp=4,pp=2,gbs=8 --gpus 16 -o "$odd/w.json" --json); rc=$?
check "gen -o into a folder named q\"d\\w exits 0" "[ $rc -eq 0 ]"
has "gen --json escapes the path" "$json" "\"file\":\"$tmp/q\\\"d\\\\w/w.json\","
printf '%s\n' "$json" >"$tmp/gen_out.json"
err=$("$simtrain" gen --model "$tmp/gen_out.json" --layout tp=1 --gpus 1 -o "$tmp/x.json" 2>&1)
has "gen --json output is JSON" "$err" "model '$tmp/gen_out.json': key 'model' is unknown"
"$simtrain" platform node8:2 -o "$odd/c\"x\\y.xml" >/dev/null; rc=$?
check "platform -o into the folder exits 0" "[ $rc -eq 0 ]"
json=$("$simtrain" memory --model llama3-8b --layout tp=8,pp=2,gbs=16 --cluster "$odd/c\"x\\y.xml" --json); rc=$?
check "memory --cluster FILE.xml exits 0" "[ $rc -eq 0 ]"
has "memory --json escapes the cluster's file name" "$json" "\"cluster\":\"c\\\"x\\\\y.xml\","
printf '%s\n' "$json" >"$tmp/memory_out.json"
err=$("$simtrain" gen --model "$tmp/memory_out.json" --layout tp=1 --gpus 1 -o "$tmp/x.json" 2>&1)
has "memory --json output is JSON" "$err" "model '$tmp/memory_out.json': key 'model' is unknown"
# --seq: the model's sequence length replaced (the tokens per step follow it: gbs x seq)
j8=$("$simtrain" gen --model llama3-8b --layout tp=8,mbs=1,gbs=4 --gpus 8 -o "$tmp/s.json" --json)
j2=$("$simtrain" gen --model llama3-8b --layout tp=8,mbs=1,gbs=4 --gpus 8 -o "$tmp/s.json" --json --seq 2048)
has "gen: tokens per step at the model's 8192" "$j8" "\"tokens_per_step\":32768,"
has "gen --seq 2048: tokens per step 4 x 2048" "$j2" "\"tokens_per_step\":8192,"
err=$("$simtrain" memory --model llama3-8b --layout tp=8 --cluster dgx-h100:1 --seq 0 2>&1)
has "memory --seq 0 is refused" "$err" "--seq '0' is not a positive length"
exit $((fails > 0))
