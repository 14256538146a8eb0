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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$fixture" "$tmp/a.h5"
cp "$fixture" "$tmp/b.h5"
out=$("$simtrain" compare "$tmp/a.h5" "$tmp/b.h5" --plot 2>"$tmp/err"); rc=$?
check "--plot exits 0" "[ $rc -eq 0 ]"
check "--plot still prints the table" "grep -q '^  step time (s) ' <<<\"\$out\""
check "--plot default name" "[ \"\$(cat '$tmp/err')\" = \"wrote '$tmp/a-compare.svg'\" ]"
if command -v xmllint >/dev/null; then
  check "--plot is well-formed XML" "xmllint --noout '$tmp/a-compare.svg'"
  n=$(xmllint --xpath 'count(//*[local-name()="g"][@id="bars"]/*[local-name()="rect"])' "$tmp/a-compare.svg")
  check "--plot: four rects per run" "[ '$n' = 8 ]"
fi
"$simtrain" compare "$tmp/a.h5" "$tmp/b.h5" --plot -o "$tmp/c.svg" >/dev/null 2>&1
check "--plot -o names the file" "[ -s '$tmp/c.svg' ]"
err=$("$simtrain" compare "$tmp/a.h5" "$tmp/b.h5" -o "$tmp/d.svg" 2>&1 >/dev/null); rc=$?
check "-o without --plot exits 1" "[ $rc -eq 1 ]"
check "-o without --plot message" "[ \"\$err\" = \"simtrain: error: '-o' names the picture: it needs --plot (see 'simtrain compare --help')\" ]"

err=$("$simtrain" compare "$fixture" 2>&1 >/dev/null); rc=$?
check "one file exits 1" "[ $rc -eq 1 ]"
check "one file message" "[ \"\$err\" = \"simtrain: error: give at least two results files (got 1) (see 'simtrain compare --help')\" ]"

err=$("$simtrain" compare "$fixture" missing.h5 2>&1 >/dev/null); rc=$?
check "missing file exits 2" "[ $rc -eq 2 ]"
check "missing file message" "[ \"\$err\" = \"simtrain: error: results 'missing.h5': cannot open: No such file or directory\" ]"

[ $fails -eq 0 ] || exit 1
echo "compare: all checks passed"
