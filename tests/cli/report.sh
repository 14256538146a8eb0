#!/bin/bash
# report.sh — `simtrain report` on the committed results fixture (the
# synthetic 4-rank run of tests/test_analysis.c): the text, --json, --ranks,
# and the errors with their exit statuses.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
# a short relative path, so the 100-column check does not depend on where the checkout is
cd "$here/../data" || exit 1
fixture=results-small.h5
fails=0
check() { # name, condition
  if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}

out=$("$simtrain" report "$fixture"); rc=$?
check "report exits 0" "[ $rc -eq 0 ]"
check "report names the run" "grep -q 'simtrain prediction: tiny on test-cluster (4 GPUs)' <<<\"\$out\""
check "report shows rank 3" "grep -q '^       3     0      600.000      100.000      200.000       50.000       50.000      800.000$' <<<\"\$out\""
check "report fits 100 columns" "[ \$(awk '{ if (length(\$0) > m) m = length(\$0) } END { print m }' <<<\"\$out\") -le 100 ]"

json=$("$simtrain" report "$fixture" --json); rc=$?
want='{"num_gpus":4,"step_time_s":0.80000000000000004,"tokens_per_step":8192,"tokens_per_s":10240,"tokens_per_s_per_gpu":2560,"model_flops_per_step":1000000000000000,"model_tflops_per_gpu":312.5,"mfu":0.3125,"compute_s":0.52500000000000002,"exposed_comm_s":0.10000000000000001,"overlapped_comm_s":0.125,"bubble_s":0.050000000000000003,"idle_s":0.050000000000000003,"peak_memory_bytes":40000000000,"device_memory_bytes":80000000000,"iterations":2,"sim_wall_s":0.25,"events":1234,"simulated_ranks":4,"reduction":"none","train_tokens":null,"train_steps":null,"time_to_train_s":null,"price_usd_per_gpu_hour":null,"cost_usd":null,"gpu_busy_fraction":null,"power_W":null,"pue":null,"energy_MWh":null}'
check "report --json exits 0" "[ $rc -eq 0 ]"
check "report --json prints the summary" "[ \"\$json\" = '$want' ]"

out=$("$simtrain" report "$fixture" --ranks 2,0); rc=$?
check "--ranks exits 0" "[ $rc -eq 0 ]"
check "--ranks header" "grep -q '2 of 4 ranks' <<<\"\$out\""
check "--ranks leaves out rank 3" "! grep -q '^       3     0 ' <<<\"\$out\""

err=$("$simtrain" report "$fixture" --ranks 0-4 2>&1 >/dev/null); rc=$?
check "--ranks out of range exits 1" "[ $rc -eq 1 ]"
check "--ranks out of range message" "[ \"\$err\" = \"simtrain: error: rank list '0-4': rank 4 is out of range (the run has 4 ranks)\" ]"

err=$("$simtrain" report no-such-file.h5 2>&1 >/dev/null); rc=$?
check "missing file exits 2" "[ $rc -eq 2 ]"
check "missing file message" "[ \"\$err\" = \"simtrain: error: results 'no-such-file.h5': cannot open: No such file or directory\" ]"

err=$("$simtrain" report "$fixture" --bogus 2>&1 >/dev/null); rc=$?
check "unknown option exits 1" "[ $rc -eq 1 ]"
check "unknown option message" "[ \"\$err\" = \"simtrain: error: unknown option '--bogus' (see 'simtrain report --help')\" ]"

"$simtrain" report --help | grep -q '^usage: simtrain report OUT.h5'
check "--help prints usage" "[ $? -eq 0 ]"

[ $fails -eq 0 ] || exit 1
echo "report: all checks passed"
