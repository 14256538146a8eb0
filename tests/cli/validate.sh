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

[ $fails -eq 0 ] || exit 1
echo "validate: all checks passed"
