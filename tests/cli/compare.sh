#!/bin/bash
# compare.sh — `simtrain compare` on the committed results fixture: a run
# against itself shows no change; usage and input errors.
set -u
simtrain=$1
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../data/results-small.h5
fails=0
check() { if eval "$2"; then :; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }

out=$("$simtrain" compare "$fixture" "$fixture"); rc=$?
check "compare exits 0" "[ $rc -eq 0 ]"
check "step time unchanged" "grep -q '^  step time (s)              +0.000000   1.0000$' <<<\"\$out\""
check "fits 100 columns" "[ \$(awk '{ if (length(\$0) > m) m = length(\$0) } END { print m }' <<<\"\$out\") -le 100 ]"

json=$("$simtrain" compare "$fixture" "$fixture" --json); rc=$?
check "--json exits 0" "[ $rc -eq 0 ]"
check "--json ratio of step times is 1" "grep -q '\"ratio\":{\"num_gpus\":1,\"step_time_s\":1,' <<<\"\$json\""

err=$("$simtrain" compare "$fixture" 2>&1 >/dev/null); rc=$?
check "one file exits 1" "[ $rc -eq 1 ]"
check "one file message" "[ \"\$err\" = \"simtrain: error: give at least two results files (got 1) (see 'simtrain compare --help')\" ]"

err=$("$simtrain" compare "$fixture" missing.h5 2>&1 >/dev/null); rc=$?
check "missing file exits 2" "[ $rc -eq 2 ]"
check "missing file message" "[ \"\$err\" = \"simtrain: error: results 'missing.h5': cannot open: No such file or directory\" ]"

[ $fails -eq 0 ] || exit 1
echo "compare: all checks passed"
