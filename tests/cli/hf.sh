#!/bin/bash
# hf.sh — `--model` with a Hugging Face config.json: the same model as a
# built-in predicts the same step; --seq sets the sequence; an
# architecture the generator does not know is refused by name.
set -u
simtrain=$1
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
hf="$(cd "$(dirname "$0")/../data/hf" && pwd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Llama-3.1-8B's config is the built-in llama3-8b: the same prediction, every
# field but the simulator's own wall time
strip() { sed 's/"sim_wall_s":[^,]*,//'; }
a=$("$simtrain" run --model "$hf/llama-3.1-8b.json" --layout tp=8,mbs=1,gbs=8 --cluster dgx-h100:1 --json); rc=$?
check "run with a config.json exits 0" "[ $rc -eq 0 ]"
b=$("$simtrain" run --model llama3-8b --layout tp=8,mbs=1,gbs=8 --cluster dgx-h100:1 --json)
check "config.json and built-in predict the same step" "[ \"\$(strip <<<\"\$a\")\" = \"\$(strip <<<\"\$b\")\" ]"
check "the step has a time" "grep -q '\"step_time_s\":[0-9]' <<<\"\$a\""

# --seq: 8 x 4096 tokens (the config's default would be 8192)
json=$("$simtrain" run --model "$hf/qwen3-8b.json" --layout tp=4,gbs=8 --seq 4096 --cluster dgx-h100:1 --json); rc=$?
check "run --seq exits 0" "[ $rc -eq 0 ]"
check "tokens = gbs x seq" "grep -q '\"tokens_per_step\":32768,' <<<\"\$json\""
json=$("$simtrain" gen --model "$hf/qwen3-8b.json" --layout tp=4,gbs=8 --gpus 4 -o "$tmp/q.json.gz" --json); rc=$?
check "gen with a config.json exits 0" "[ $rc -eq 0 ]"
check "gen: 8 x 8192 tokens" "grep -q '\"tokens_per_step\":65536,' <<<\"\$json\""
out=$("$simtrain" memory --model "$hf/deepseek-v2-lite.json" --layout tp=2,sp=1,ep=2,gbs=4 --cluster dgx-h100:1); rc=$?
check "memory with a config.json exits 0" "[ $rc -eq 0 ]"

# refusals: exit 2, one line naming the file and the architecture
printf '{"architectures": ["FalconForCausalLM"], "hidden_size": 4544}\n' >"$tmp/falcon.json"
err=$("$simtrain" run --model "$tmp/falcon.json" --layout tp=1 --cluster dgx-h100:1 2>&1); rc=$?
check "unsupported architecture exits 2" "[ $rc -eq 2 ]"
check "the message names it" "grep -q \"model '$tmp/falcon.json': architecture 'FalconForCausalLM' is not supported (supported: LlamaForCausalLM, \" <<<\"\$err\""
# beyond Mistral's sliding window: the band is priced; with context
# parallelism refused, naming the window
json=$("$simtrain" run --model "$hf/mistral-7b-v0.1.json" --layout tp=8 --seq 8192 --cluster dgx-h100:1 --json); rc=$?
check "seq beyond the sliding window exits 0" "[ $rc -eq 0 ]"
check "8192 tokens a sequence" "grep -q '\"tokens_per_step\":8192,' <<<\"\$json\""
err=$("$simtrain" run --model "$hf/mistral-7b-v0.1.json" --layout tp=4,cp=2 --seq 8192 --cluster dgx-h100:1 2>&1); rc=$?
check "cp over a sliding window exits 2" "[ $rc -eq 2 ]"
check "the message names the window" "grep -q 'sliding attention window (4096) shorter than seq_len (8192)' <<<\"\$err\""
exit $((fails > 0))
