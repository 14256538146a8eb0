#!/bin/bash
# validate.sh — `simtrain validate`: usage and input errors always; on the two
# smallest published runs (one A100, one H100 case), --json has the promised
# keys and is the same bytes on two runs.  The prediction part skips (77)
# while the build has no workload generators or the cluster presets.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
cases=$here/../../bench/validation
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

err=$("$simtrain" validate --bogus 2>&1 >/dev/null); rc=$?
check "unknown option exits 1" "[ $rc -eq 1 ]"
check "unknown option message" "[ \"\$err\" = \"simtrain: error: unknown option '--bogus' (see 'simtrain validate --help')\" ]"

err=$("$simtrain" validate "$tmp/none" 2>&1 >/dev/null); rc=$?
check "missing folder exits 2" "[ $rc -eq 2 ]"
check "missing folder message" "[ \"\$err\" = \"simtrain: error: validation folder '$tmp/none': cannot be opened\" ]"

mkdir "$tmp/empty"
err=$("$simtrain" validate "$tmp/empty" 2>&1 >/dev/null); rc=$?
check "empty folder exits 2" "[ $rc -eq 2 ]"
check "empty folder message" "[ \"\$err\" = \"simtrain: error: validation folder '$tmp/empty': no case files (*.json)\" ]"

err=$("$simtrain" validate "$cases" --cases 'nothing-*' 2>&1 >/dev/null); rc=$?
check "--cases matching nothing exits 2" "[ $rc -eq 2 ]"
check "--cases matching nothing message" "[ \"\$err\" = \"simtrain: error: validation folder '$cases': no case name matches 'nothing-*'\" ]"
err=$("$simtrain" validate --cases 2>&1 >/dev/null); rc=$?
check "--cases without a pattern exits 1" "[ $rc -eq 1 ]"

# every committed case file loads (a bad one would stop validate before predicting)
n=$(ls "$cases"/*.json | wc -l)
check "59 committed cases" "[ $n -eq 59 ]"

mkdir "$tmp/small"
cp "$cases/sc21-gpt-1.7b.json" "$cases/megatron-h100-gpt-1.7b.json" "$tmp/small/"
a=$("$simtrain" validate "$tmp/small" --json 2>"$tmp/err"); rc=$?
if [ $rc -ne 0 ] && grep -q "no workload generators\|no such preset" "$tmp/err"; then
  [ $fails -eq 0 ] || exit 1
  echo "validate: prediction skipped: $(cat "$tmp/err")"
  exit 77
fi
check "--json exits 0" "[ $rc -eq 0 ]"
check "--json keys" "grep -q '^{\"cases\":\[{\"name\":\"megatron-h100-gpt-1.7b\",\"measured\":36259.5,\"predicted\":[0-9.e+]*,\"error\":[-0-9.e]*},{\"name\":\"sc21-gpt-1.7b\",.*\],\"count\":2,\"median_abs_error\":[0-9.e-]*,\"max_abs_error\":[0-9.e-]*}$' <<<\"\$a\""
b=$("$simtrain" validate "$tmp/small" --json -j 2 2>/dev/null)
check "two runs, same bytes" "[ \"\$a\" = \"\$b\" ]"
c=$("$simtrain" validate "$cases" --cases 'megatron-h100-gpt-1.7?' --json 2>/dev/null)
pa=$(grep -o '{"name":"megatron-h100-gpt-1.7b"[^}]*}' <<<"$a")
pc=$(grep -o '{"name":"megatron-h100-gpt-1.7b"[^}]*}' <<<"$c")
check "--cases: that case only" "grep -q '\"count\":1,' <<<\"\$c\""
check "--cases: the same prediction" "[ -n \"\$pa\" ] && [ \"\$pa\" = \"\$pc\" ]"

# --fit: Megatron's runs and the PyTorch frameworks' are fitted apart on one
# device (gemm_eff, gemm_eff_torch): two groups, and the Megatron cases'
# fit and leave-one-out results are those of a fit without the FSDP ones
mkdir "$tmp/fw" "$tmp/mg"
cp "$cases/sc21-gpt-1.7b.json" "$cases/sc21-gpt-3.6b.json" "$tmp/mg/"
cp "$cases/sc21-gpt-1.7b.json" "$cases/sc21-gpt-3.6b.json" \
  "$cases/llmfoundry-a100-mpt-760m-2k-8gpu.json" "$cases/llmfoundry-a100-mpt-7b-2k-8gpu.json" "$tmp/fw/"
f=$("$simtrain" validate "$tmp/fw" --fit --json --quiet 2>&1); rc=$?
m=$("$simtrain" validate "$tmp/mg" --fit --json --quiet 2>&1)
check "--fit with two frameworks exits 0" "[ $rc -eq 0 ]"
check "--fit: one group per framework" "grep -q '\"device\":\"A100-SXM4-80GB pytorch\",\"gemm_eff\":[0-9.]*,' <<<\"\$f\" && grep -q '\"device\":\"A100-SXM4-80GB\",\"gemm_eff\":' <<<\"\$f\""
for c in sc21-gpt-1.7b sc21-gpt-3.6b; do
  pf=$(grep -o "{\"name\":\"$c\"[^}]*}" <<<"$f")
  pm=$(grep -o "{\"name\":\"$c\"[^}]*}" <<<"$m")
  check "--fit: $c as without the FSDP cases" "[ -n \"\$pf\" ] && [ \"\$pf\" = \"\$pm\" ]"
done
gf=$(grep -o '"device":"A100-SXM4-80GB","gemm_eff":[0-9.]*' <<<"$f")
gm=$(grep -o '"device":"A100-SXM4-80GB","gemm_eff":[0-9.]*' <<<"$m")
check "--fit: Megatron's value as without the FSDP cases" "[ -n \"\$gf\" ] && [ \"\$gf\" = \"\$gm\" ]"

# published peak memory: a case that gives one says which reading it is, and
# validate compares it with the memory model's peak (the same bytes as
# `simtrain memory` prints for the case's model and layout) in a second table
mkdir "$tmp/mem" "$tmp/badmem"
c=torchtitan-h100-llama3.1-8b-128gpu-compile
cp "$cases/$c.json" "$tmp/mem/"
cp -r "$cases/clusters" "$tmp/mem/"
sed 's/"memory_reading": "reserved"/"memory_reading": "peak"/' "$cases/$c.json" >"$tmp/badmem/$c.json"
err=$("$simtrain" validate "$tmp/badmem" 2>&1 >/dev/null); rc=$?
check "memory reading not named exits 2" "[ $rc -eq 2 ]"
check "memory reading not named message" "[ \"\$err\" = \"simtrain: error: case '$tmp/badmem/$c.json': 'measured.memory_reading' is neither: with peak_memory_gib it says which reading it is, \\\"reserved\\\" or \\\"allocated\\\"\" ]"
j=$("$simtrain" validate "$tmp/mem" --json --quiet 2>&1); rc=$?
t=$("$simtrain" validate "$tmp/mem" --quiet 2>&1)
model=$(sed -n '/^  "model": {/,/^  },\{0,1\}$/p' "$tmp/mem/$c.json" | tr -d '\n' | sed 's/^ *"model": //; s/,$//')
layout=$(grep -o '"layout": "[^"]*"' "$tmp/mem/$c.json" | cut -d'"' -f4)
printf '%s' "$model" >"$tmp/model.json"
peak=$("$simtrain" memory --model "$tmp/model.json" --layout "$layout" --cluster "$tmp/mem/clusters/grand-teton-h100.json:16" --json 2>/dev/null | grep -o '"peak_bytes":[0-9.e+]*' | cut -d: -f2)
want=$(awk -v p="$peak" 'BEGIN { printf "%.10g", p / 1073741824 }')
check "memory: exits 0" "[ $rc -eq 0 ]"
check "memory: the case's reading and the memory model's peak" "grep -q '\"memory\":{\"measured\":62,\"reading\":\"reserved\",\"predicted\":$want,\"error\":' <<<\"\$j\""
check "memory: its statistics" "grep -q ',\"memory\":{\"count\":1,\"median_abs_error\":[0-9.e-]*,\"max_abs_error\":[0-9.e-]*}}$' <<<\"\$j\""
check "memory: the second table" "grep -q '^peak memory per GPU ' <<<\"\$t\" && grep -q '^$c  *62.00  *reserved ' <<<\"\$t\""
a=$("$simtrain" validate "$tmp/small" --json 2>/dev/null)
check "no reading, no memory table" "! grep -q memory <<<\"\$a\""

[ $fails -eq 0 ] || exit 1
echo "validate: all checks passed"
